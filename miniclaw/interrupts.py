"""Ctrl-C that is never lost: Python drops a KeyboardInterrupt raised inside a finalizer (a
weakref callback such as the one that forgets a finished task, an import lock's cleanup, an
event loop's `__del__`): it prints "Exception ignored in ... Traceback" and the program goes
on as if no key was pressed. While `interrupts_not_lost()` is active, such an interrupt is
sent again to the main thread a moment later, where it lands in ordinary code (the CLI's
handler: "Aborted.", exit 130; the chat's loop)."""

from __future__ import annotations

import _thread
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def interrupts_not_lost() -> Iterator[None]:
    previous = sys.unraisablehook
    main = _thread.get_ident()  # entered from the main thread (the CLI, the chat console)

    def hook(unraisable) -> None:
        if not issubclass(unraisable.exc_type, KeyboardInterrupt):
            previous(unraisable)
            return
        import threading

        again = threading.Timer(0.01, signal.pthread_kill, (main, signal.SIGINT))
        again.daemon = True
        again.start()

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
