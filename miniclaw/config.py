"""Where things live: the miniclaw home, the workspace, and the search index cache.

Precedence for the workspace: an explicit path (``--workspace``), then ``MINICLAW_WORKSPACE``,
then ``$MINICLAW_HOME/workspace``, then ``~/.miniclaw/workspace``. The index is a cache and
never lives inside the workspace: ``MINICLAW_INDEX`` names its file, else it is one file per
workspace under ``$XDG_CACHE_HOME/miniclaw/`` (else ``%LOCALAPPDATA%\\miniclaw\\`` on Windows,
``~/.cache/miniclaw/``).

The `timezone` setting (an IANA name; `MINICLAW_TIMEZONE` over `"timezone"` in config.json;
default UTC) decides which day's note is today. Settings for the model server come from ``$MINICLAW_HOME/config.json`` (its ``"llm"``
object), overridden by ``MINICLAW_LLM_*`` environment variables, overridden by command-line
flags. With no server configured the provider is ``echo``, which works offline. The model that
embeds memories for the semantic modes is chosen the same way (``"embedder"``,
``MINICLAW_EMBEDDER_*``; `embedder_settings`): the bundled offline model by default.
"""

from __future__ import annotations

import contextlib
import zlib
import os
import re
from datetime import timezone, tzinfo
from pathlib import Path
from typing import Any, NamedTuple

from miniclaw.errors import UsageError

MEMORY_DIR = "memory"
LONG_TERM_FILE = "MEMORY.md"
CONFIG_FILE = "config.json"
SESSIONS_DIR = "sessions"

PROVIDERS = ("echo", "openai")
# A local model may take a while to load before its first token: the read timeout is the
# longest silence allowed between two pieces of the answer, not the time for all of it.
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 120.0
# `chat --once` is for scripts: a server that never finishes (endless chunks, keep-alives)
# must not keep one running forever; a slow local model still has minutes.
DEFAULT_DEADLINE = 300.0


def miniclaw_home() -> Path:
    """The folder holding config.json and, by default, the workspace."""
    env = os.environ.get("MINICLAW_HOME")
    return Path(env).expanduser() if env else Path.home() / ".miniclaw"


def resolve_workspace(path: str | os.PathLike[str] | None = None) -> Path:
    """The workspace folder to use, absolute, without checking that it exists."""
    if path is None:
        env = os.environ.get("MINICLAW_WORKSPACE")
        path = env if env else miniclaw_home() / "workspace"
    return Path(path).expanduser().absolute()


def cache_dir() -> Path:
    from miniclaw.fs import platform

    return platform.cache_home() / "miniclaw"


def index_path(workspace: Path) -> Path:
    """The index file of a workspace: readable name, plus a hash so two workspaces never share."""
    env = os.environ.get("MINICLAW_INDEX")
    if env:
        return Path(env).expanduser().absolute()
    resolved = str(Path(workspace).resolve())
    raw = resolved.encode("utf-8", "surrogateescape")
    # Two CRCs (zlib is already loaded; hashlib's OpenSSL costs ~2 ms at every start).
    digest = f"{zlib.crc32(raw):08x}{zlib.crc32(raw[::-1]):08x}"
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", Path(resolved).name)[:40] or "workspace"
    return cache_dir() / f"{name}-{digest}.sqlite3"


def time_zone() -> tzinfo:
    """The zone that decides which day's note is today: `MINICLAW_TIMEZONE`, else
    `"timezone"` in config.json, else UTC (how every workspace was written before)."""
    name = os.environ.get("MINICLAW_TIMEZONE")
    if not name:
        # Every search needs today's date: a config.json that cannot hold the setting is
        # not parsed (json and the parse cost more than the search's own start-up work).
        text = _config_text()
        name = load_config(text).get("timezone") if text and "timezone" in text else None
    if name is None or name in ("UTC", "Etc/UTC"):
        return timezone.utc
    hint = "use an IANA name like Europe/Paris, Asia/Tokyo or UTC"
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"timezone in {config_path()} must be a string: {hint}")
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only for zones other than UTC

    try:
        return ZoneInfo(name.strip())
    # OSError: a folder of the tz database (`America`) or a name too long for a file name
    except (ZoneInfoNotFoundError, ValueError, OSError):
        shown = name.strip()[:60].encode("ascii", "backslashreplace").decode()
        raise UsageError(f"unknown time zone {shown!r} (MINICLAW_TIMEZONE or \"timezone\" in "
                         f"config.json): {hint}") from None


class LLMSettings(NamedTuple):
    """Which model server to talk to, and how patiently."""

    provider: str  # one of PROVIDERS
    base_url: str | None = None  # e.g. http://127.0.0.1:11434/v1
    model: str | None = None
    api_key: str | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    deadline: float = DEFAULT_DEADLINE  # for a whole answer of `chat --once`


# The settings config.json may hold, by section: any other key is a typo (warned about,
# and ignored) rather than a setting that silently does nothing.
KNOWN_SETTINGS: dict[str, frozenset[str] | None] = {
    "llm": frozenset({"provider", "base_url", "model", "api_key", "connect_timeout",
                      "read_timeout", "deadline"}),
    "embedder": frozenset({"kind", "model", "base_url", "api_key", "dimension", "batch_size",
                           "timeout"}),
    "timezone": None,
    "workspaces": None,  # keyed by folder; each holds WORKSPACE_SETTINGS
}
#: What a workspace's object in "workspaces" may hold (sources/base.py reads them).
WORKSPACE_SETTINGS = frozenset({"sources", "roots"})
_warned: set[tuple[Path, str]] = set()  # each unknown key is warned about once per process


class UnknownSetting(NamedTuple):
    """A key of config.json that no setting reads."""

    key: str  # as written, after its section's name: "llm.modle", "colour",
    # 'workspaces["~/notes"].source'
    meant: str | None  # the known key of its section closest to it ("model"), or None
    known: tuple[str, ...]  # the keys its section knows

    def hint(self) -> str:
        return (f"did you mean {self.meant!r}?" if self.meant
                else f"known: {', '.join(self.known)}")


def unknown_settings(data: dict[str, Any]) -> list[UnknownSetting]:
    """Each key of config.json (the object `data`) that no setting reads, in file order."""
    import difflib

    found = []

    def unknown(key: str, known, where: str) -> None:
        close = difflib.get_close_matches(key, list(known), n=1)
        found.append(UnknownSetting(where + key, close[0] if close else None,
                                    tuple(sorted(known))))

    for key, value in data.items():
        if key not in KNOWN_SETTINGS:
            unknown(str(key), KNOWN_SETTINGS, "")
        elif KNOWN_SETTINGS[key] is not None and isinstance(value, dict):
            for inner in value:
                if inner not in KNOWN_SETTINGS[key]:
                    unknown(str(inner), KNOWN_SETTINGS[key], f"{key}.")
        elif key == "workspaces" and isinstance(value, dict):  # {folder: {setting: ...}}
            import json  # loaded already: `data` was parsed with it

            for folder, settings in value.items():
                for inner in settings if isinstance(settings, dict) else ():
                    if inner not in WORKSPACE_SETTINGS:
                        where = json.dumps(folder, ensure_ascii=False)
                        unknown(str(inner), WORKSPACE_SETTINGS, f"workspaces[{where}].")
    return found


def claim_unknown_settings(data: dict[str, Any]) -> list[UnknownSetting]:
    """`unknown_settings`, for a caller that reports them itself (`doctor`, as findings):
    `load_config` no longer logs them in this process."""
    found = unknown_settings(data)
    _warned.update((config_path(), setting.key) for setting in found)
    return found


def _warn_unknown(data: dict[str, Any], path: Path) -> None:
    """A warning for each key of config.json that no setting reads (once per process)."""
    import logging

    for setting in unknown_settings(data):
        if (path, setting.key) in _warned:
            continue
        _warned.add((path, setting.key))
        logging.getLogger("miniclaw").warning("%s: unknown setting %r is ignored (%s)",
                                              path, setting.key, setting.hint())


def config_path() -> Path:
    return miniclaw_home() / CONFIG_FILE


def _config_text() -> str | None:
    """config.json's text (None: there is none), read through the shared safe open: a FIFO
    there hung every command, a link to /dev/zero ate the memory."""
    return settings_text(config_path())


def settings_text(path: Path, *, capped: bool = True) -> str | None:
    """The text of a JSON settings file people edit (config.json, ~/.claude.json), None when
    there is none; a link is followed, but only to a regular file of at most 16 MB
    (`capped=False`: of any size, as Claude Code's own file grows with its history)."""
    from miniclaw.fs import files

    try:
        raw = files.read_bytes(path, None, path.name, capped=capped)
    except files.NotMemoryFileError:
        raise UsageError(f"{path} is not a regular file under 16 MB (a FIFO, a device, a "
                         "folder or a huge file): replace it with a JSON file, or remove it"
                         ) from None
    except files.MemoryFileError as exc:
        raise UsageError(f"{exc} ({path}): let your user read it (chmod u+rw), or remove "
                         "it") from None
    if raw is None:
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text (a bad byte at offset {exc.start}): "
                         "save it as UTF-8, or remove it") from None


def parse_settings(text: str, path: Path) -> Any:
    """The JSON value of a settings file's text; anything `json` refuses (bad syntax,
    nesting too deep, a number too long) is a UsageError naming the file."""
    import json  # only when there are settings to read: searches start faster without

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg}); fix or remove it") from None
    except RecursionError:
        raise UsageError(f"{path} nests too deeply to be read as JSON; fix or remove it"
                         ) from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise UsageError(f"{path} cannot be read as JSON ({str(exc).partition(':')[0]}); "
                         "fix or remove it") from None


def load_config(text: str | None = None, *, warn: bool = True) -> dict[str, Any]:
    """The settings object of config.json ({} when there is no file); `text`: its text,
    already read. `warn=False`: unknown keys are not logged (`claim_unknown_settings`)."""
    path = config_path()
    text = _config_text() if text is None else text
    if text is None:
        return {}
    data = parse_settings(text, path)
    if not isinstance(data, dict):
        raise UsageError(f"{path} must hold one JSON object, like {{\"llm\": {{...}}}}")
    if "\\u0000" in text or "\x00" in text:  # cheap: only then is every string looked at
        _refuse_nul(data, path)
    if warn:
        _warn_unknown(data, path)
    return data


def _refuse_nul(data: Any, path: Path) -> None:
    """No setting may hold a NUL character: no folder name, URL or key can, and a folder
    with one was a traceback (ValueError: embedded null byte) in every command."""
    pending = [data]
    while pending:  # not recursive: json nests deeper than Python's recursion allows
        value = pending.pop()
        if isinstance(value, dict):
            if any("\x00" in key for key in value):
                break
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str) and "\x00" in value:
            break
    else:
        return
    raise UsageError(f"{path} holds a NUL character (\\u0000) in a setting: no folder, "
                     "name or URL can hold one; fix or remove it")


def workspace_settings(workspace: Path) -> dict[str, Any]:
    """The settings config.json's `"workspaces"` object holds for this workspace ({} when
    none): keys are workspace folders (`~` allowed), compared after resolving links."""
    text = _config_text()
    if not text or "workspaces" not in text:  # the common case: no JSON import, no parse
        return {}
    section = load_config(text).get("workspaces", {})
    if not isinstance(section, dict):
        raise UsageError(f'{config_path()}: "workspaces" must be an object keyed by folder')
    target = Path(workspace).expanduser().resolve()
    for key, value in section.items():
        if Path(key).expanduser().resolve() == target:
            if not isinstance(value, dict):
                raise UsageError(f"{config_path()}: the settings of workspace {key!r} must be "
                                 "an object")
            return value
    return {}


def update_workspace_settings(workspace: Path, change: Any) -> Path:
    """Let `change(settings)` edit this workspace's object of config.json, then write the
    file back atomically (a temp file beside it, fsync, `os.replace`, its mode kept), with
    every other key and workspace as it was. Returns the file's path."""
    path = config_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with _config_lock(path.parent):
        return _update(path, workspace, change)


@contextlib.contextmanager
def _config_lock(folder: Path):
    """Two `miniclaw sources add` at once must not lose one's change: the read, the change
    and the write happen under an exclusive lock of the config folder."""
    from miniclaw.fs.files import locked

    with locked(folder):  # a lock that cannot be taken: one clear error
        yield


def _update(path: Path, workspace: Path, change: Any) -> Path:
    import json
    import tempfile

    data = load_config()
    section = data.setdefault("workspaces", {})
    if not isinstance(section, dict):
        raise UsageError(f'{path}: "workspaces" must be an object keyed by folder')
    target = Path(workspace).expanduser().resolve()
    key = next((k for k in section if Path(k).expanduser().resolve() == target), str(workspace))
    settings = section.setdefault(key, {})
    if not isinstance(settings, dict):
        raise UsageError(f"{path}: the settings of workspace {key!r} must be an object")
    change(settings)
    # A config.json that links into a dotfiles folder is written there: replacing the link
    # with a file would cut it off from the copy the person keeps.
    real = Path(os.path.realpath(path))
    fd, temp = tempfile.mkstemp(prefix=".config.", suffix=".tmp", dir=real.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, ensure_ascii=False)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        if real.exists():
            os.chmod(temp, real.stat().st_mode & 0o7777)
        os.replace(temp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return path


def llm_settings(*, provider: str | None = None, base_url: str | None = None,
                 model: str | None = None, connect_timeout: float | None = None,
                 read_timeout: float | None = None, deadline: float | None = None) -> LLMSettings:
    """The model settings: flags (these arguments) over MINICLAW_LLM_* over config.json.

    The provider defaults to `openai` when a base URL is set anywhere, else `echo`. The API
    key is never a flag (it would land in shell history): env or config.json only, and it
    is never shown, not even in part, in an error.
    """
    section = load_config().get("llm", {})
    if not isinstance(section, dict):
        raise UsageError(f'{config_path()}: "llm" must be an object, like {{"base_url": "..."}}')
    env = os.environ

    def pick(flag: Any, env_name: str | None, key: str) -> Any:
        if flag is not None:
            return flag
        if env_name and env.get(env_name):
            return env[env_name]
        return section.get(key)

    base_url = _text(pick(base_url, "MINICLAW_LLM_BASE_URL", "base_url"), "base_url")
    chosen = pick(provider, "MINICLAW_LLM_PROVIDER", "provider") or ("openai" if base_url else "echo")
    chosen = str(chosen).strip().lower()
    if chosen not in PROVIDERS:
        raise UsageError(f"unknown provider {chosen!r}; choose from: {', '.join(PROVIDERS)}")
    settings = LLMSettings(
        chosen, base_url, _text(pick(model, "MINICLAW_LLM_MODEL", "model"), "model"),
        _text(pick(None, "MINICLAW_LLM_API_KEY", "api_key"), "api_key"),
        _seconds(pick(connect_timeout, None, "connect_timeout"), "connect_timeout",
                 DEFAULT_CONNECT_TIMEOUT),
        _seconds(pick(read_timeout, None, "read_timeout"), "read_timeout", DEFAULT_READ_TIMEOUT),
        _seconds(pick(deadline, None, "deadline"), "deadline", DEFAULT_DEADLINE))
    if settings.api_key is not None and not re.fullmatch(r"[\x21-\x7e]+", settings.api_key):
        raise UsageError("the API key (MINICLAW_LLM_API_KEY or api_key in config.json) must be "
                         "ASCII letters, digits and punctuation: an HTTP header carries nothing "
                         "else")
    if chosen == "openai":
        if not settings.base_url:
            raise UsageError("the openai provider needs the server's URL: pass --base-url, set "
                             "MINICLAW_LLM_BASE_URL or \"base_url\" in config.json "
                             "(e.g. http://127.0.0.1:11434/v1)")
        _check_url(settings.base_url)
        if not settings.model:
            raise UsageError("the openai provider needs a model name: pass --model, set "
                             "MINICLAW_LLM_MODEL or \"model\" in config.json")
    return settings


def _text(value: Any, key: str) -> str | None:
    if value is None:
        return None
    shown = "" if key == "api_key" else f", not {value!r}"  # never show a key
    if not isinstance(value, str):
        raise UsageError(f"{key} in {config_path()} must be a string{shown}")
    from miniclaw.text import first_unwritable

    if first_unwritable(value.strip(), allow=""):
        raise UsageError(f"{key} holds control characters or bytes that are not UTF-8; "
                         "check the setting (flag, MINICLAW_LLM_* or config.json)")
    return value.strip() or None


def _check_url(url: str) -> None:
    """A URL httpx can use: http(s), a host, a port in range, no spaces."""
    from urllib.parse import urlsplit

    shown = "" if "@" in url else f" ({url!r})"  # user:password@ is not shown
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError when out of range or not a number)
    except ValueError as exc:
        raise UsageError(f"the model server URL is not valid: {exc}{shown}") from None
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"the model server URL must start with http:// or https://{shown}")
    if not parts.hostname or re.search(r"\s", url):
        raise UsageError(f"the model server URL needs a host name and no spaces{shown}, "
                         "e.g. http://127.0.0.1:11434/v1")


def _seconds(value: Any, key: str, default: float) -> float:
    if value is None:
        return default
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{key} must be a number of seconds, not {value!r}") from None
    if not 0 < seconds <= 3600:
        raise UsageError(f"{key} must be between 0 and 3600 seconds, not {value!r}")
    return seconds


EMBEDDER_KINDS = ("bundled", "openai", "sentence-transformers", "fastembed")
DEFAULT_EMBED_TIMEOUT = 30.0  # a local server may load its model at the first request


class EmbedderSettings(NamedTuple):
    """Which model embeds memories for the semantic modes (semantic/embedders.py)."""

    kind: str = "bundled"  # one of EMBEDDER_KINDS
    model: str | None = None  # the server's model name, or the library's model name or path
    base_url: str | None = None  # openai: e.g. http://127.0.0.1:11434/v1
    api_key: str | None = None  # openai: sent as a bearer token, never shown
    dimension: int | None = None  # expected numbers a vector (checked, not sent)
    batch_size: int | None = None  # texts a request (or a library call)
    timeout: float = DEFAULT_EMBED_TIMEOUT


_EMBEDDER_ENV = ("MINICLAW_EMBEDDER", "MINICLAW_EMBEDDER_MODEL", "MINICLAW_EMBEDDER_BASE_URL",
                 "MINICLAW_EMBEDDER_API_KEY")


def embedder_settings() -> EmbedderSettings:
    """The embedder: MINICLAW_EMBEDDER_* over config.json's `"embedder"` object; the bundled
    model when neither names one. A hybrid search asks at every start, so config.json is
    parsed only when its text names an embedder (most have none: no JSON import)."""
    env = os.environ
    text = _config_text() if not any(env.get(name) for name in _EMBEDDER_ENV) else None
    if not any(env.get(name) for name in _EMBEDDER_ENV) and (not text or "embedder" not in text):
        return EmbedderSettings()
    section = load_config(text).get("embedder", {})
    if not isinstance(section, dict):
        raise UsageError(f'{config_path()}: "embedder" must be an object, like '
                         '{"kind": "openai", "base_url": "...", "model": "..."}')

    def pick(env_name: str | None, key: str) -> Any:
        if env_name and env.get(env_name):
            return env[env_name]
        return section.get(key)

    def text_of(env_name: str | None, key: str) -> str | None:
        value = pick(env_name, key)
        if value is None:
            return None
        where = f"{env_name} or " if env_name else ""
        shown = "" if key == "api_key" else f", not {value!r}"  # never show a key
        if not isinstance(value, str) or first_unwritable(value.strip(), allow=""):
            raise UsageError(f"the embedder's {key} ({where}\"{key}\" in config.json) must be "
                             f"a line of text{shown}")
        return value.strip() or None

    from miniclaw.text import first_unwritable

    base_url = text_of("MINICLAW_EMBEDDER_BASE_URL", "base_url")
    kind = (text_of("MINICLAW_EMBEDDER", "kind") or ("openai" if base_url else "bundled")).lower()
    if kind not in EMBEDDER_KINDS:
        raise UsageError(f"unknown embedder kind {kind!r} (MINICLAW_EMBEDDER or \"kind\" in "
                         f"config.json's \"embedder\"); choose from: {', '.join(EMBEDDER_KINDS)}")
    settings = EmbedderSettings(
        kind, text_of("MINICLAW_EMBEDDER_MODEL", "model"), base_url,
        text_of("MINICLAW_EMBEDDER_API_KEY", "api_key"),
        _count(section.get("dimension"), "dimension", 1, 65536),
        _count(section.get("batch_size"), "batch_size", 1, 4096),
        _seconds(section.get("timeout"), "timeout", DEFAULT_EMBED_TIMEOUT))
    if settings.api_key is not None and not re.fullmatch(r"[\x21-\x7e]+", settings.api_key):
        raise UsageError("the embedder's API key (MINICLAW_EMBEDDER_API_KEY or api_key in "
                         "config.json) must be ASCII letters, digits and punctuation")
    if kind != "bundled" and not settings.model:
        raise UsageError(f"the {kind} embedder needs a model name: set MINICLAW_EMBEDDER_MODEL "
                         "or \"model\" in config.json's \"embedder\"")
    if kind == "openai":
        if not base_url:
            raise UsageError("the openai embedder needs the server's URL: set "
                             "MINICLAW_EMBEDDER_BASE_URL or \"base_url\" in config.json's "
                             "\"embedder\" (e.g. http://127.0.0.1:11434/v1)")
        _check_url(base_url)
    return settings


def _count(value: Any, key: str, low: int, high: int) -> int | None:
    if value is None:
        return None
    if type(value) is not int or not low <= value <= high:
        raise UsageError(f"the embedder's {key} in config.json must be a whole number from "
                         f"{low} to {high}, not {value!r}")
    return value
