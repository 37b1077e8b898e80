"""A one-shot command's query embedded by a forked child (miniclaw/semantic/forked_query.py).

A fork is only safe in a process of one thread, and pytest's are not: each case runs in a
fresh interpreter of its own. The child's work (`_embedded`) is replaced where the case is
about the pipe and the child's end, not the model; `needs_model` cases use the real one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from miniclaw.semantic import model as embedding

pytest.importorskip("numpy")

_READY, _WHY = embedding.available()
needs_model = pytest.mark.skipif(not _READY, reason=_WHY or "embedding model not installed")

_HEAD = textwrap.dedent("""
    import os, sys, threading, time
    from miniclaw import collector
    from miniclaw.semantic import model as embedding
    from miniclaw.semantic import forked_query as F
    embedding.import_numpy()  # as the search does: BLAS on one thread, no other to fork past
    import numpy as np
    WANT = np.arange(embedding.DIM, dtype=np.float32)

    class Stub:
        # a stand-in model: a text's vector says its length
        def embed_query(self, text):
            print("child-out", flush=True)  # to /dev/null: never the command's output
            return WANT * len(text)
        def embed(self, texts):
            return np.stack([WANT * -len(text) for text in texts])

    def reaped(pid):
        # gone, not even a zombie: reaped by the parent (within 10 s)
        for _ in range(1000):
            if not os.path.exists(f"/proc/{pid}"):
                return True
            time.sleep(0.01)
        return False
""")


def _python(script, tmp_path) -> subprocess.CompletedProcess:
    """`script` run in a fresh interpreter, with a home of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINICLAW_")}
    env.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "home" / ".cache"))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env=env)


def _run(body: str, tmp_path) -> list[str]:
    script = tmp_path / "case.py"
    script.write_text(_HEAD + textwrap.dedent(body), encoding="utf-8")
    done = _python(script, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.split()


linux_only = pytest.mark.skipif(sys.platform != "linux", reason="the fork runs on Linux only")


@linux_only
def test_a_one_shot_process_gets_the_vectors_its_child_sent_and_reaps_it(tmp_path):
    """The query's vector, then memories' texts on request; the child runs nothing of the
    parent's after its work, not even an exit hook."""
    out = _run("""
        import atexit
        atexit.register(print, "exit-hook")
        collector.one_shot()
        embedding.load = Stub
        F.start("a walk")
        pid = F._STARTED["a walk"].pid
        vector = F.result("a walk")
        texts = F.embedder("a walk").embed(["ok", "a trail", ""])
        F.finish("a walk")
        print(pid != os.getpid(), np.array_equal(vector, WANT * 6),
              np.array_equal(texts, np.stack([WANT * -2, WANT * -7, WANT * 0])),
              reaped(pid), F.embedder("a walk"), F.result("a walk"))
    """, tmp_path)
    assert out == ["True", "True", "True", "True", "None", "None", "exit-hook"]


@linux_only
def test_a_search_that_asks_nothing_more_still_gets_the_query(tmp_path):
    """`finish` may come before the query's vector is read (the sync found every vector
    there): the child still answers it, then ends."""
    out = _run("""
        collector.one_shot()
        embedding.load = Stub
        F.start("q")
        pid = F._STARTED["q"].pid
        F.finish("q")
        print(np.array_equal(F.result("q"), WANT), reaped(pid))
    """, tmp_path)
    assert out == ["True", "True"]


@linux_only
def test_a_child_that_fails_a_request_leaves_the_texts_to_the_parents_model(tmp_path):
    out = _run("""
        collector.one_shot()
        class Failing(Stub):
            def embed(self, texts):
                raise RuntimeError("no text graph")
        embedding.load = Failing
        F.start("q")
        pid = F._STARTED["q"].pid
        F.result("q")
        model = F.embedder("q")
        embedding.load = Stub  # the parent's own model
        print(np.array_equal(model.embed(["abc"]), [WANT * -3]), reaped(pid), F.embedder("q"))
    """, tmp_path)
    assert out == ["True", "True", "None"]


@linux_only
@pytest.mark.parametrize("child", [
    "raise RuntimeError('no model')",  # it fails: nothing sent
    "return WANT.tobytes()[:700]",  # it sends less than a vector
    "os._exit(3)",  # it dies
])
def test_a_child_that_sends_no_whole_vector_leaves_the_query_to_the_parent(tmp_path, child):
    out = _run(f"""
        collector.one_shot()
        def child(text):
            {child}
        F._embedded = child
        F.start("q")
        pid = F._STARTED["q"].pid
        print(F.result("q"), reaped(pid))
    """, tmp_path)
    assert out == ["None", "True"]


@linux_only
def test_a_child_that_fails_where_the_program_ignores_sigchld_leaves_the_query_to_it(tmp_path):
    """With SIGCHLD ignored a child that ends is gone at once: ending it again is no error
    (review of 2026-11-28)."""
    out = _run("""
        import signal
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        collector.one_shot()
        F._Child._reap = lambda self: None  # its reaper too late to say it ended
        def child(text):
            os._exit(1)
        F._embedded = child
        F.start("q")
        time.sleep(0.3)
        print(F.result("q"))
    """, tmp_path)
    assert out == ["None"]


@linux_only
def test_a_child_works_past_descriptor_1024_and_keeps_an_ignored_ctrl_c_ignored(tmp_path):
    """`select` refuses descriptors from 1024 on (`poll` does not), and a program that
    ignores SIGINT (a script's `cmd &`) has a child that ignores it too."""
    out = _run("""
        import resource, signal
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 2048:
            print("skip"); sys.exit()
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
        held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        collector.one_shot()
        embedding.load = Stub
        sent = F._embedded
        F._embedded = lambda text: time.sleep(0.5) or sent(text)
        F.start("q")
        child = F._STARTED["q"]
        time.sleep(0.1)
        os.kill(child.pid, signal.SIGINT)
        print(child.answers >= 1024, np.array_equal(F.result("q"), WANT))
    """, tmp_path)
    if out == ["skip"]:
        pytest.skip("this machine allows fewer than 2,048 descriptors")
    assert out == ["True", "True"]


@linux_only
def test_a_child_that_sends_nothing_in_time_is_ended(tmp_path):
    out = _run("""
        collector.one_shot()
        F.TIMEOUT = 0.5
        F._embedded = lambda text: time.sleep(60)
        F.start("q")
        pid = F._STARTED["q"].pid
        began = time.monotonic()
        print(F.result("q"), reaped(pid), time.monotonic() - began < 10)
    """, tmp_path)
    assert out == ["None", "True", "True"]


@pytest.mark.parametrize("setup", [
    "pass",  # a long-lived process (chat, the MCP server, a program): no fork
    "collector.one_shot(); threading.Thread(target=time.sleep, args=(30,), daemon=True).start()",
    # `auto` loaded the model here already (a stand-in for it)
    "collector.one_shot(); embedding.available = lambda: (True, ''); "
    "embedding.Embedder = Stub; embedding.load()",
])
def test_no_child_where_a_fork_is_unsafe_or_pays_nothing(tmp_path, setup):
    out = _run(f"""
        {setup}
        F._embedded = lambda text: WANT.tobytes()
        F.start("q")
        print(F._STARTED, F.result("q"))
    """, tmp_path)
    assert out == ["{}", "None"]


@needs_model
@linux_only
def test_the_childs_vector_is_the_one_the_parent_would_embed_bit_for_bit(tmp_path):
    out = _run("""
        collector.one_shot()
        text = "what does Caroline do for work?"
        F.start(text)
        sent = F.result(text)
        mine = embedding.load().embed_query(text)
        print(sent is not None and sent.tobytes() == mine.tobytes())
    """, tmp_path)
    assert out == ["True"]


@needs_model
@linux_only
def test_a_one_shot_hybrid_search_takes_its_query_from_the_child(tmp_path):
    """The `miniclaw` command's search forks at its start (one thread then, numpy imported)
    and ranks as a process that embeds the query itself; the first search's child embeds
    the memories too, and the process loads no model of its own."""
    from tests.conftest import long_term, write

    workspace = tmp_path / "ws"
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", [
        "Caroline started working at the adoption agency", "Tea with Sam on Sunday",
        "Walked the Blue Ridge trail up to the summit with Dana"])))
    search = f"""
        sys.argv = ["miniclaw", "--workspace", {str(workspace)!r}, "memory", "rank",
                    "what does Caroline do for work?", "--mode", "hybrid", "--json"]
        result = F.result
        def told(text):
            print("forked" if text in F._STARTED else "not", file=sys.stderr)
            return result(text)
        F.result = told
        load, parent = embedding.load, os.getpid()
        def loaded():  # the child's standard streams are /dev/null: a file of its own
            with open(__file__ + ".loads", "a") as loads:
                print("parent" if os.getpid() == parent else "child", file=loads)
            return load()
        embedding.load = loaded
        if {{fork}} is False:
            F.start = lambda text: None
        from miniclaw.cli import main
        main()
    """
    runs = []
    for fork in (True, False):  # the first (its child) embeds the memories, the second none
        script = tmp_path / f"miniclaw-{fork}"
        script.write_text(_HEAD + textwrap.dedent(search.replace("{fork}", str(fork))),
                          encoding="utf-8")
        runs.append(_python(script, tmp_path))
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    assert [run.stderr.split() for run in runs] == [["forked"], ["not"]]
    loads = [set((tmp_path / f"miniclaw-{fork}.loads").read_text().split())
             for fork in (True, False)]
    assert loads == [{"child"}, {"parent"}]
    assert runs[0].stdout == runs[1].stdout and "adoption agency" in runs[1].stdout


@linux_only
def test_a_stopped_child_is_given_up_soon_after_the_search_needs_it(tmp_path):
    """A child stopped (SIGSTOP, a cgroup freezer) kept the search waiting `TIMEOUT` (60 s):
    it has `GRACE` from the moment the search's own work is done, then it is ended."""
    out = _run("""
        import signal
        collector.one_shot()
        F._embedded = lambda text: time.sleep(30) or WANT.tobytes()
        F.start("q")
        pid = F._STARTED["q"].pid
        os.kill(pid, signal.SIGSTOP)
        threading.Timer(0.5, F.needed, ("q",)).start()  # the search's own work: 0.5 s
        began = time.monotonic()
        print(F.result("q"), reaped(pid), time.monotonic() - began < F.GRACE + 5)
    """, tmp_path)
    assert out == ["None", "True", "True"]


@needs_model
@linux_only
def test_a_one_shot_hybrid_search_whose_child_is_stopped_ends_soon_and_right(tmp_path):
    """The search embeds the query (and the memories) itself, with the same results, and
    the stopped child is ended, not left behind."""
    import json
    import time

    from tests.conftest import long_term, write

    workspace = tmp_path / "ws"
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", [
        "Caroline started working at the adoption agency", "Tea with Sam on Sunday",
        "Walked the Blue Ridge trail up to the summit with Dana"])))
    search = f"""
        import signal
        sys.argv = ["miniclaw", "--workspace", {str(workspace)!r}, "memory", "rank",
                    "what does Caroline do for work?", "--mode", "hybrid", "--json"]
        start = F.start
        def stopped(text):
            start(text)
            if text in F._STARTED:
                os.kill(F._STARTED[text].pid, signal.SIGSTOP)
                with open(__file__ + ".pid", "w") as out:
                    print(F._STARTED[text].pid, file=out)
        F.start = stopped if {{stop}} else (lambda text: None)
        from miniclaw.cli import main
        main()
    """
    runs, took = [], []
    for stop in (True, False):
        script = tmp_path / f"miniclaw-{stop}"
        script.write_text(_HEAD + textwrap.dedent(search.replace("{stop}", str(stop))),
                          encoding="utf-8")
        began = time.monotonic()
        runs.append(_python(script, tmp_path))
        took.append(time.monotonic() - began)
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr
    assert took[0] < 30, took  # 60 s and more before
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)
    assert "adoption agency" in runs[0].stdout
    pid = int((tmp_path / "miniclaw-True.pid").read_text())
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z"), state  # ended, not left stopped
