"""Ctrl-C at the right moment.

`interrupts_not_lost()`: Python drops a KeyboardInterrupt raised inside a finalizer (a weakref
callback such as the one that forgets a finished task, an import lock's cleanup, an event
loop's `__del__`): it prints "Exception ignored in ... Traceback" and the program goes on as
if no key was pressed. While the block runs, such an interrupt is sent again to the main
thread a moment later, where it lands in ordinary code (the CLI's handler: "Aborted.", exit
130; the chat's loop). Once the block has ended there is nothing left for it to stop, and a
re-send still waiting is dropped: it must not land in the code that reports the block's end.

`ctrl_c_waits()`: for what a program does while it ends (the chat closing its transcript and
client, then saying goodbye). The first Ctrl-C does not cut that short: the program is ending
already, which is what the key asks for. A second one does, for a close that hangs.
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def interrupts_not_lost() -> Iterator[None]:
    previous = sys.unraisablehook
    main = _thread.get_ident()  # entered from the main thread (the CLI, the chat console)
    lock = _thread.allocate_lock()
    active = [True]

    def send_again() -> None:
        time.sleep(0.01)
        with lock:  # never after the block has ended (see the finally below)
            if active[0]:
                if hasattr(signal, "pthread_kill"):
                    signal.pthread_kill(main, signal.SIGINT)
                else:  # Windows (this base module asks no one: fs/platform is above it)
                    _thread.interrupt_main(signal.SIGINT)

    def hook(unraisable) -> None:
        if not issubclass(unraisable.exc_type, KeyboardInterrupt):
            previous(unraisable)
            return
        # Not threading.Timer: its start() waits for the thread to run, and under load the
        # re-sent Ctrl-C landed in that wait, inside this hook, where it was lost again.
        _thread.start_new_thread(send_again, ())

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
        active[0] = False  # from here on no re-send is made; first, as the wait below may
        with lock:  # be interrupted: by a re-send in flight, a Ctrl-C as any
            pass


@contextmanager
def ctrl_c_waits(*, then_raise: bool = False) -> Iterator[None]:
    """Run the block to its end through one Ctrl-C; a second one interrupts it. With
    `then_raise`, a Ctrl-C pressed during the block is raised once it is over (for an
    import that must not be cut: pydantic turns a KeyboardInterrupt raised while it builds
    a model into a SchemaError, a traceback where "Aborted." was due). Outside the
    main thread (where Python cannot set a signal handler), or where Ctrl-C is not Python's
    KeyboardInterrupt (ignored, as in a background job: the rule asyncio.Runner follows),
    the block runs as it is."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    pressed = [0]

    def on_ctrl_c(signum, frame) -> None:
        pressed[0] += 1
        if pressed[0] > 1:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if then_raise and pressed[0]:
        raise KeyboardInterrupt
