"""`miniclaw chat` end to end: a real process, its standard input a pipe, the model a real
local server (or the offline echo provider), and the start-up guard."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.chat.conftest import transcript_records
from tests.chat.server import HANG, FakeModelServer, stream, text_chunks
from tests.conftest import write
from tests.reliability.support import INTERRUPT_IN_A_FINALIZER


def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


@pytest.fixture
def ws(workspace: Path) -> Path:
    write(workspace, "SOUL.md", "# Soul\n\nYou are miniclaw.\n")
    write(workspace, "memory/MEMORY.md", f"# Memory\n\n## {today()}\n"
          "- Project Atlas deadline moved to March 3 (added at 2026-02-14T17:40:11Z)\n")
    return workspace


def miniclaw(ws: Path, *args: str, stdin: str = "", env: dict | None = None,
             timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(ws), *args],
                          input=stdin, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def start(ws: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "miniclaw", "--workspace", str(ws), *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})})


def run_script(code: str, *args: str) -> subprocess.CompletedProcess:
    """A Python script in a process of its own (what it does to signals stays there), run
    from the repository so it imports this miniclaw."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[2])


def wait_for(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def test_a_piped_session_with_the_echo_provider(ws):
    lines = ["when is the atlas deadline?", "/note Lunch with Sam on Thursday",
             "/remember Sam prefers green tea", "/search sam", "/context", "what about sam?",
             "/exit", "this line is never read"]
    proc = miniclaw(ws, "chat", stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "I found 1 memory about that:\n- Project Atlas deadline moved to March 3 (memory/MEMORY.md:4, " in out
    assert f"Noted in today's daily note: memory/{today()}.md:5" in out
    assert "Remembered in long-term memory: memory/MEMORY.md:5" in out
    assert 'Search Results for: "sam"' in out and "Lunch with Sam on Thursday" in out
    assert "# Relevant memories (cite as [path:line])" in out and "# Soul" in out
    assert "- Sam prefers green tea (memory/MEMORY.md:5, " in out
    assert "never read" not in out
    assert proc.stderr.startswith("Bye. The conversation is in ")
    records = transcript_records(ws)
    assert [(r["role"], r["content"]) for r in records if r["role"] == "user"] == [
        ("user", "when is the atlas deadline?"), ("user", "what about sam?")]
    assert [r["role"] for r in records] == ["user", "assistant", "user", "assistant"]


def test_a_piped_session_with_a_model_server(ws):
    answers = [stream(*text_chunks("March ", "3.")), stream(*text_chunks("You're welcome."))]
    with FakeModelServer(answers) as server:
        proc = miniclaw(ws, "chat", stdin="when is the atlas deadline?\nthanks\n",
                        env={"MINICLAW_LLM_BASE_URL": server.url, "MINICLAW_LLM_MODEL": "tiny"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "March 3.\nYou're welcome.\n"
    first, second = server.requests
    assert first["model"] == "tiny"
    assert "Project Atlas deadline moved to March 3" in first["messages"][0]["content"]
    # the second turn's context holds the first exchange
    assert "**user:** when is the atlas deadline?\n**assistant:** March 3." in second["messages"][0]["content"]
    assert [r["role"] for r in transcript_records(ws)] == ["user", "assistant"] * 2


def test_an_unreachable_server_is_one_line_per_turn_and_the_session_goes_on(ws, closed_port):
    url = f"http://127.0.0.1:{closed_port}/v1"
    proc = miniclaw(ws, "chat", "--base-url", url, "--model", "tiny",
                    stdin="first\n/note the loop still works\nsecond\n")
    assert proc.returncode == 1  # piped: a script must see that turns failed
    error = f"Error: cannot reach the model server at {url}: connection refused"
    assert proc.stderr.splitlines()[:2] == [error, error]
    assert "Noted in today's daily note" in proc.stdout
    records = transcript_records(ws)
    assert [(r["role"], r["content"]) for r in records] == [
        ("user", "first"), ("error", error[len("Error: "):]),
        ("user", "second"), ("error", error[len("Error: "):])]


def test_once_answers_one_message(ws):
    proc = miniclaw(ws, "chat", "--once", "atlas deadline?")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("I found 1 memory about that:")
    assert proc.stderr == ""


def test_once_with_a_message_that_is_all_private_is_a_usage_error(ws):
    proc = miniclaw(ws, "chat", "--once", "<private>GECKOSECRET1</private>")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == ("Error: all of that message is private (inside a private tag): nothing "
                           "was sent to the assistant\n")
    assert transcript_records(ws) == []


def test_once_with_an_unreachable_server_exits_1(ws, closed_port):
    url = f"http://127.0.0.1:{closed_port}/v1"
    proc = miniclaw(ws, "chat", "--once", "hello", "--base-url", url, "--model", "m")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == f"Error: cannot reach the model server at {url}: connection refused\n"
    assert [r["role"] for r in transcript_records(ws)] == ["user", "error"]


def test_the_server_comes_from_config_json(ws, tmp_path):
    home = tmp_path / "mchome"
    with FakeModelServer([stream(*text_chunks("From config."))]) as server:
        write(home, "config.json", json.dumps({"llm": {"base_url": server.url, "model": "cfg-model"}}))
        proc = miniclaw(ws, "chat", "--once", "hi", env={"MINICLAW_HOME": str(home)})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "From config.\n"
        assert server.requests[0]["model"] == "cfg-model"
        # the flag wins over the file
        proc = miniclaw(ws, "chat", "--once", "hi", "--provider", "echo",
                        env={"MINICLAW_HOME": str(home)})
        assert proc.stdout.startswith("I found ")  # echo answered (with the model, by meaning)


@pytest.mark.parametrize("args,config,message", [
    (["--budget", "50"], None, "Error: the context budget must be between 200 and 32000 tokens, not 50"),
    (["--provider", "gpt"], None, "Error: unknown provider 'gpt'; choose from: echo, openai"),
    (["--base-url", "http://127.0.0.1:1/v1"], None, "Error: the openai provider needs a model name"),
    ([], "{not json", "is not valid JSON (line 1, column 2"),
])
def test_bad_settings_are_usage_errors(ws, tmp_path, args, config, message):
    env = {}
    if config is not None:
        write(tmp_path / "h", "config.json", config)
        env["MINICLAW_HOME"] = str(tmp_path / "h")
    proc = miniclaw(ws, "chat", "--once", "hi", *args, env=env)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and message in proc.stderr
    assert not (ws / "sessions").exists()


def test_a_missing_workspace_is_a_usage_error(tmp_path):
    proc = miniclaw(tmp_path / "nowhere", "chat", stdin="hi\n")
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: no workspace at ")


def test_a_crash_mid_answer_leaves_the_transcript_whole(ws):
    with FakeModelServer([HANG]) as server:
        proc = start(ws, "chat", "--base-url", server.url, "--model", "tiny")
        try:
            proc.stdin.write("first words\n")
            proc.stdin.flush()
            wait_for(lambda: len(server.requests) == 1)
            proc.kill()
            proc.wait(10)
        finally:
            proc.kill()
            proc.communicate()
    assert [(r["role"], r["content"]) for r in transcript_records(ws)] == [("user", "first words")]


@pytest.mark.parametrize("moment", ["while answering", "at the prompt"])
def test_ctrl_c_ends_the_session_cleanly(ws, moment):
    with FakeModelServer([HANG]) as server:
        proc = start(ws, "chat", "--base-url", server.url, "--model", "tiny")
        try:
            if moment == "while answering":
                proc.stdin.write("are you there?\n")
                proc.stdin.flush()
                wait_for(lambda: len(server.requests) == 1)
            else:  # once /help has answered, the loop is back reading standard input
                proc.stdin.write("/help\n")
                proc.stdin.flush()
                assert proc.stdout.readline() == "Commands:\n"
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=10)
        finally:
            proc.kill()
    assert proc.returncode == 0, err
    assert err.splitlines()[-1].startswith("Bye.")
    assert "Traceback" not in err
    if moment == "while answering":  # the answer cut short is kept, marked so
        records = transcript_records(ws)
        assert [r["role"] for r in records] == ["user", "assistant"]
        assert records[1]["interrupted"] is True and records[1]["content"] == ""


_FINALIZER_INTERRUPT = INTERRUPT_IN_A_FINALIZER + """
import time
from miniclaw.interrupts import interrupts_not_lost

with interrupts_not_lost():  # what the chat console runs under
    interrupt_in_a_finalizer()
    try:
        time.sleep(20)
    except KeyboardInterrupt:
        print("interrupted")
"""


def test_a_ctrl_c_that_lands_in_a_finalizer_still_ends_the_chat():
    done = run_script(_FINALIZER_INTERRUPT)
    assert done.stdout == "interrupted\n"  # before: the sleep ran its 20 s, not interrupted
    assert done.stderr == ""  # before: "Exception ignored in: ... Traceback ..."


_CTRL_C_AS_THE_INPUT_ENDS = INTERRUPT_IN_A_FINALIZER + """
import io, sys, time
from pathlib import Path
from miniclaw.chat.console import run_console
from miniclaw.chat.echo import EchoProvider
from miniclaw.chat.loop import ChatSession

class Input:  # a line, then Ctrl-C (landing in a finalizer) as the pipe is closed
    lines = ["hello"]

    def readline(self):
        if self.lines:
            return self.lines.pop() + "\\n"
        interrupt_in_a_finalizer()
        return ""

async def open_session():
    return ChatSession.open(Path(sys.argv[1]), EchoProvider(), out=io.StringIO(),
                            err=sys.stderr, format_search=lambda found: "")

code = run_console(open_session, stdin=Input(), stdout=io.StringIO(), stderr=sys.stderr,
                   interactive=False)
time.sleep(0.2)  # the rest of the command's way out
print("exit", code)
"""


def test_a_ctrl_c_as_the_input_ends_still_says_goodbye(ws):
    """The Ctrl-C lands in a finalizer (it is sent again 10 ms later) just as the input ends,
    so the session is already closing. Before, the re-send still came once the chat had
    ended: it cut the close short, or landed after the goodbye (here, in the sleep)."""
    done = run_script(_CTRL_C_AS_THE_INPUT_ENDS, str(ws))
    assert done.stdout == "exit 0\n", done.stderr
    assert done.stderr.startswith("Bye. The conversation is in "), done.stderr
    assert [r["role"] for r in transcript_records(ws)] == ["user", "assistant"]


_CTRL_C_WHILE_CLOSING = """
import asyncio, io, os, signal, sys
from pathlib import Path
from miniclaw.chat.console import run_console
from miniclaw.chat.echo import EchoProvider
from miniclaw.chat.loop import ChatSession

presses = int(sys.argv[2])

class SlowToClose(EchoProvider):
    async def aclose(self):
        for _ in range(presses):  # Ctrl-C while the chat closes
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
        print("closed", file=sys.stderr)

async def open_session():
    return ChatSession.open(Path(sys.argv[1]), SlowToClose(), out=io.StringIO(),
                            err=sys.stderr, format_search=lambda found: "")

try:
    code = run_console(open_session, stdin=io.StringIO("hello\\n"), stdout=io.StringIO(),
                       stderr=sys.stderr, interactive=False)
    print("exit", code)
except KeyboardInterrupt:
    print("interrupted")
"""


@pytest.mark.parametrize("presses", [1, 2])
def test_one_ctrl_c_lets_a_closing_chat_finish_and_a_second_stops_it(ws, presses):
    """Before, the first Ctrl-C cancelled the close (asyncio.Runner's handler) and the chat
    left without a goodbye: through the CLI, a silent exit 130."""
    done = run_script(_CTRL_C_WHILE_CLOSING, str(ws), str(presses))
    if presses == 1:
        assert done.stdout == "exit 0\n", done.stderr
        assert done.stderr.startswith("closed\nBye. The conversation is in "), done.stderr
    else:
        assert done.stdout == "interrupted\n", done.stderr
        assert "closed" not in done.stderr and "Bye." not in done.stderr
    assert [r["role"] for r in transcript_records(ws)] == ["user", "assistant"]


_CTRL_C_WHILE_ENDING = """
import os, signal, time
from miniclaw.interrupts import ctrl_c_waits

try:
    with ctrl_c_waits():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        print("closed")
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        print("not interrupted")
except KeyboardInterrupt:
    print("interrupted")
try:  # as before the block
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
except KeyboardInterrupt:
    print("interrupted again")
"""


def test_while_ending_one_ctrl_c_waits_and_a_second_interrupts():
    done = run_script(_CTRL_C_WHILE_ENDING)
    assert done.stdout == "closed\ninterrupted\ninterrupted again\n", done.stderr


HEAVY_FOR_RANK = ("httpx", "httpcore", "miniclaw.chat", "miniclaw.context")
_CHECK = ("import sys\n"
          "loaded = sorted(m for m in sys.modules if m.startswith({heavy!r}))\n"
          "print('LOADED:' + ','.join(loaded), file=sys.stderr)\n")


def _main_then_list_loaded(ws, argv: list[str], heavy) -> subprocess.CompletedProcess:
    """Run the console script's main() in a fresh Python, then print which `heavy` modules
    it loaded (main() ends the process with os._exit: here it raises SystemExit instead)."""
    code = ("import os, sys\n"
            "os._exit = sys.exit\n"
            f"sys.argv = ['miniclaw', '--workspace', {str(ws)!r}] + {argv!r}\n"
            "from miniclaw.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            + _CHECK.format(heavy=heavy))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ))


@pytest.mark.parametrize("argv", [["--help"], ["chat", "--help"], ["context", "--help"],
                                  ["memory", "rank", "--help"], ["memory", "rank", "-q", "atlas"]])
def test_start_up_does_not_import_the_chat_or_httpx(ws, argv):
    proc = _main_then_list_loaded(ws, argv, HEAVY_FOR_RANK)
    assert "LOADED:\n" in proc.stderr, proc.stderr


def test_httpx_is_imported_only_for_the_openai_provider(ws):
    proc = _main_then_list_loaded(ws, ["chat", "--once", "atlas"], ("httpx",))
    assert "LOADED:\n" in proc.stderr, proc.stderr
    assert "I found 1 memory" in proc.stdout


# -- a broken or hostile server, bad settings ---------------------------------------------


def test_a_malformed_answer_is_one_error_line_and_the_session_goes_on(ws):
    from tests.chat.server import raw

    bad = {"choices": [{"index": 0, "delta": "not an object"}]}
    script = [stream(bad), raw(lambda wfile, stop: wfile.write(b'data: {"choices": 5}\n\n')),
              stream(*text_chunks("Fine again."))]
    with FakeModelServer(script) as server:
        proc = miniclaw(ws, "chat", "--base-url", server.url, "--model", "tiny",
                        stdin="first\nsecond\nthird\n")
    assert proc.returncode == 1, proc.stderr  # piped, and two turns failed
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 2 and "Traceback" not in proc.stderr
    assert all(f"the model server at {server.url} sent a malformed answer" in e for e in errors)
    assert "Fine again." in proc.stdout
    assert [r["role"] for r in transcript_records(ws)] == [
        "user", "error", "user", "error", "user", "assistant"]


def test_once_gives_up_at_the_deadline_on_endless_chunks(ws):
    from tests.chat.server import forever, raw

    chunk = b'data: {"choices": [{"index": 0, "delta": {"content": "."}}]}\n\n'
    with FakeModelServer([raw(forever(chunk, every=0.02))]) as server:
        proc = miniclaw(ws, "chat", "--once", "hi", "--base-url", server.url, "--model", "m",
                        "--deadline", "1", timeout=30)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == ("Error: no whole answer within 1 s (the deadline; "
                                           'raise it with --deadline or "deadline" in config.json)')
    assert [r["role"] for r in transcript_records(ws)] == ["user", "error"]


@pytest.mark.parametrize("url,message", [
    ("http://127.0.0.1:99999/v1", "Error: the model server URL is not valid: Port out of range"),
    ("http://127.0.0.1:port/v1", "Error: the model server URL is not valid: Port could not be"),
    ("http://[::1/v1", "Error: the model server URL is not valid: Invalid IPv6 URL"),
    ("http:///v1", "Error: the model server URL needs a host name"),
    ("http://a host/v1", "Error: the model server URL needs a host name and no spaces"),
    ("ftp://127.0.0.1/v1", "Error: the model server URL must start with http:// or https://"),
])
def test_an_invalid_base_url_is_a_usage_error(ws, url, message):
    proc = miniclaw(ws, "chat", "--once", "hi", "--base-url", url, "--model", "m")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(message) and len(proc.stderr.splitlines()) == 1
    assert not (ws / "sessions").exists()


@pytest.mark.parametrize("key", ["sk-clé-secrète", "sk-with space", "sk-tab\there"])
def test_a_key_an_http_header_cannot_carry_is_a_usage_error_and_never_shown(ws, key):
    proc = miniclaw(ws, "chat", "--once", "hi", "--base-url", "http://127.0.0.1:1/v1",
                    "--model", "m", env={"MINICLAW_LLM_API_KEY": key})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(("Error: the API key (MINICLAW_LLM_API_KEY or api_key",
                                   "Error: api_key holds control characters"))
    assert len(proc.stderr.splitlines()) == 1 and "sk-" not in proc.stderr and "secr" not in proc.stderr


def test_a_key_of_the_wrong_type_is_never_shown(ws, tmp_path):
    write(tmp_path / "h", "config.json", json.dumps({"llm": {"api_key": 987654321}}))
    proc = miniclaw(ws, "chat", "--once", "hi", env={"MINICLAW_HOME": str(tmp_path / "h")})
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: api_key in ") and "987654321" not in proc.stderr


def test_a_chat_on_a_full_disk_leaves_no_empty_transcript(ws):
    """A real full disk for the process (RLIMIT_FSIZE 0: every write that grows a file fails
    with EFBIG; Python ignores SIGXFSZ): each turn is one error, and no empty file stays."""
    import resource

    def no_room() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    proc = subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(ws), "chat"],
                          input="hello\nagain\n", capture_output=True, text=True, timeout=60,
                          preexec_fn=no_room)
    assert proc.returncode == 1, proc.stderr  # piped, and the turns failed
    assert proc.stderr.count("Error: cannot write the transcript") == 2
    assert "Traceback" not in proc.stderr and "The conversation is in" not in proc.stderr
    assert list((ws / "sessions").glob("*")) == []
