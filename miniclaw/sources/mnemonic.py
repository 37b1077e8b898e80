"""mnemonic memories (zircote/mnemonic): one `*.memory.md` file, one entry.

Roots: the user's store `~/.claude/mnemonic/` and a project's `.claude/mnemonic/`. Both
layouts are read: the current one (`{org}/{project}/_semantic/decisions/x.memory.md`,
`{org}/_semantic/...` for the org scope, `default/...` when the org is unknown) and the
legacy one (`decisions/project/<uuid>-x.memory.md` in a project, `{org}/learnings/user/...`
at home). `.blackboard/` (hidden, not memories) is never walked. The front matter (YAML)
gives title, namespace, type, tags and created, with the tool's fallbacks: no front
matter or YAML that does not read gives the file name as title and the path's namespace.
Metadata in `Entry.meta`: namespace, type, id, title, tags, scope, org, project. Settings
`namespace` (a prefix: `_semantic` keeps `_semantic/decisions`) and `type` keep only the
files whose folder matches (the format requires the type to be the namespace's prefix;
legacy folders name no type, so a `type` setting leaves them out); queries filter on the
front matter's values through `SearchOptions.meta` (`meta={"type": "episodic"}`).
mnemonic has no privacy mechanism; miniclaw's (`<private>`, `private: true`) applies.
"""

from __future__ import annotations

import re
from datetime import date as Date
from datetime import datetime

from miniclaw.errors import UsageError
from miniclaw.entries.entry import TAG_PATTERN, Entry
from miniclaw.sources.base import FileSource
from miniclaw.text import LazyPattern

SUFFIX = ".memory.md"
_FRONT_MATTER_BYTES = 2000  # the tool reads no further for the front matter
_LEGACY_SCOPES = ("project", "user")
# The tool's fallback when YAML does not read: `key: value` lines, `- tag` items.
_SCALAR = LazyPattern(r"^(id|title|namespace|type|created|modified)\s*:\s*(.*?)\s*$")
_INLINE_LIST = LazyPattern(r"^\[(.*)\]$")


class MnemonicSource(FileSource):
    """A mnemonic store: `MnemonicSource(root="~/.claude/mnemonic")`."""

    name = "mnemonic"
    label = "mnemonic"
    root = "~/.claude/mnemonic"
    recursive = True
    reads_front_matter = True  # the front matter is the memory's metadata
    namespace: str | None = None
    type: str | None = None

    def __init__(self, **settings: object) -> None:
        for key in ("namespace", "type"):
            value = settings.pop(key, None)
            if value is not None and (not isinstance(value, str) or not value.strip("/ ")):
                raise UsageError(f"the mnemonic source setting {key!r} must be a non-empty "
                                 "string")
            setattr(self, key, value.strip("/ ") if value is not None else None)
        super().__init__(**settings)

    def owns(self, relative: str) -> bool:
        """Its `*.memory.md` files; with a `namespace` or `type` setting, those whose folder
        says so (decided by the path, so a changed setting re-lists the files rather than
        leaving the index with entries parsed under the old one)."""
        if not relative.endswith(SUFFIX):
            return False
        if self.namespace is None and self.type is None:
            return True
        return self._wanted(namespace := scope(relative).get("namespace"), _type_of(namespace))

    def parse(self, text: str, path: str) -> list[Entry]:
        lines = [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]
        if not any(line.strip() for line in lines):
            return []  # empty, or hidden whole (private: true)
        fields, body_start = front_matter(lines)
        place = scope(self._relative(path))
        title = _one_line(fields.get("title")) or path.rsplit("/", 1)[-1].removesuffix(".md")
        namespace = _one_line(fields.get("namespace")) or place.get("namespace")
        kind = _one_line(fields.get("type")) or _type_of(namespace)
        body = [(n, line) for n, line in enumerate(lines[body_start:], body_start + 1)
                if line.strip()]
        start, end = (body[0][0], body[-1][0]) if body else (1, max(1, body_start))
        content = "\n".join(lines[start - 1:end]).strip() if body else ""
        if title.casefold() not in content.casefold():
            content = f"{title}\n\n{content}".strip()
        tags = _tags(fields.get("tags"))
        meta = {"namespace": namespace, "type": kind, "id": _one_line(fields.get("id")),
                "title": title, "tags": list(tags), "citations_count": _citations(fields),
                **{key: value for key, value in place.items() if key != "namespace"}}
        return [Entry(content, "", path, start, end, _created(fields), None, _category(kind),
                      tuple(tag for tag in dict.fromkeys(t.lower() for t in tags)
                            if TAG_PATTERN.match(tag)),
                      {key: value for key, value in meta.items() if value not in (None, [], 0)})]

    def _wanted(self, namespace: str | None, kind: str | None) -> bool:
        if self.type is not None and kind != self.type:
            return False
        if self.namespace is not None:
            return namespace is not None and (namespace == self.namespace
                                              or namespace.startswith(self.namespace + "/"))
        return True

    def _relative(self, path: str) -> str:
        """The root-relative path of a display path (the root as configured, or the
        workspace-relative folder, then the file's path under it)."""
        for _, prefix, _ in self.__dict__.get("_layouts", {}).values():
            if prefix != "." and path.startswith(prefix + "/"):
                return path[len(prefix) + 1:]
        return path


def front_matter(lines: list[str]) -> tuple[dict, int]:
    """(fields, index of the first body line): YAML between the first two `---` lines in
    the file's first 2000 bytes; YAML that does not read falls back to `key: value` lines."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    size = 0
    for i in range(1, len(lines)):
        size += len(lines[i]) + 1
        if lines[i].rstrip() == "---":
            break
        if size > _FRONT_MATTER_BYTES:
            return {}, 0
    else:
        return {}, 0  # never closed: no front matter, the whole file is the body
    block = "\n".join(lines[1:i])
    import yaml  # only mnemonic files, and only when one changed

    try:
        data = yaml.load(block, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, ValueError, RecursionError):
        data = None
    return (data if isinstance(data, dict) else _fallback(lines[1:i])), i + 1


def _fallback(lines: list[str]) -> dict:
    """What the tool's regex fallback reads from front matter YAML cannot parse."""
    fields: dict = {}
    tags: list[str] = []
    in_tags = False
    for line in lines:
        match = _SCALAR.match(line)
        if match:
            fields.setdefault(match.group(1), match.group(2).strip("\"'"))  # the first
            in_tags = False
        elif re.match(r"^tags\s*:", line):
            value = line.split(":", 1)[1].strip()
            inline = _INLINE_LIST.match(value)
            tags.extend(inline.group(1).split(",") if inline else value.split(",") if value else [])
            in_tags = not value
        elif in_tags and line.lstrip().startswith("- "):
            tags.append(line.lstrip()[2:])
        else:
            in_tags = False
    if tags:
        fields["tags"] = [tag.strip().strip("\"'") for tag in tags if tag.strip()]
    return fields


def scope(relative: str) -> dict[str, str]:
    """Scope, org, project and namespace as the path gives them, in either layout:
    `{org}/{project}/_ns/sub/`, `{org}/_ns/sub/`, `default/_ns/sub/`, legacy
    `{ns}/project/` (a project's own store) and `{org}/{ns}/user/`."""
    parts = relative.split("/")[:-1]
    lead = next((i for i, part in enumerate(parts) if part.startswith("_")), None)
    if lead is not None:
        namespace = "/".join(parts[lead:])
        if lead == 0:
            return {"scope": "project", "namespace": namespace}
        if parts[0] == "default":
            return {"scope": "default", "namespace": namespace}
        if lead == 1:
            return {"scope": "org", "org": parts[0], "namespace": namespace}
        return {"scope": "project", "org": parts[0], "project": parts[1], "namespace": namespace}
    if parts and parts[-1] in _LEGACY_SCOPES:
        if len(parts) >= 3:
            return {"scope": parts[-1], "org": parts[-3], "namespace": "/".join(parts[-2:])}
        return {"scope": parts[-1], "namespace": "/".join(parts)}
    return {"namespace": "/".join(parts)} if parts else {}


def _citations(fields: dict) -> int:
    """How many sources the memory cites: `citations`, `code_refs`, `provenance.source_ref`."""
    provenance = fields.get("provenance")
    return sum(len(value) for value in (fields.get("citations"), fields.get("code_refs"))
               if isinstance(value, list)) + bool(
        isinstance(provenance, dict) and provenance.get("source_ref"))


def _one_line(value: object) -> str | None:
    """A scalar field as one line of text (extra whitespace collapsed), or None."""
    if value is None or isinstance(value, (dict, list)):
        return None
    text = " ".join(str(value).split())
    return text or None


def _type_of(namespace: str | None) -> str | None:
    """`_semantic/decisions` -> `semantic` (the type must equal the namespace's prefix)."""
    if namespace and namespace.startswith("_"):
        return namespace[1:].split("/", 1)[0] or None
    return None


def _category(kind: str | None) -> str | None:
    return kind.lower() if kind and re.fullmatch(r"[a-z][a-z0-9-]*", kind.lower()) else None


def _tags(value: object) -> tuple[str, ...]:
    """Tags as a block or inline list, or a comma-separated string."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return ()
    return tuple(dict.fromkeys(text for item in value
                               if (text := _one_line(item)) is not None))


def _created(fields: dict) -> Date | None:
    """`created`, then `modified`, then `temporal.recorded_at` (PyYAML reads unquoted
    timestamps as datetimes or dates; the fallback leaves strings)."""
    temporal = fields.get("temporal")
    recorded = temporal.get("recorded_at") if isinstance(temporal, dict) else None
    for value in (fields.get("created"), fields.get("modified"), recorded):
        if isinstance(value, datetime):
            return value.date()
        if isinstance(value, Date):
            return value
        if isinstance(value, str):
            try:
                return Date.fromisoformat(value.strip()[:10])
            except ValueError:
                continue
    return None
