"""Other tools' output shapes for `memory rank --format`, so their skills can call miniclaw
in place of their own scripts: `ef` (EF Memory's `/memory-search` entry blocks) and
`mnemonic` (the JSON of mnemonic's search-subcall agent). Thin: the library works out the
data (`sources/ef_memory.py: result_notes`, `sources/mnemonic.py: subcall`)."""

from __future__ import annotations

from miniclaw.text import printable

_CONTINUATION = " " * 8  # EFM's indent for a second cited source


def ef_text(found, notes: list[tuple[str, ...]], full: bool = False) -> str:
    """EF Memory's search output: `Found N entries (showing top M):`, one block per result
    (`[Hard] [S1] lesson`, Title, Rule, Implication, Source), `---` after each, `Tips:`.
    A result of another source is a `[Soft]` block named by its source, cited by its line."""
    from miniclaw.cli.render import suggestions
    from miniclaw.sources.ef_memory import BROAD_MATCHES, too_broad

    lines = [f"/memory-search {found.query}  [{found.mode}]", ""]
    if not found.results:
        lines += ["No matching entries found.", "", "Tips:"]
        lines += [f"- {hint}" for hint in suggestions(found)]
        return printable("\n".join(lines))
    lines += [f"Found {found.total} entries (showing top {len(found.results)}):", ""]
    hard = 0
    for hit, flags in zip(found.results, notes):
        meta = hit.meta if "classification" in hit.meta else None
        if meta is None:  # another source's memory in the same search
            label = ["[Soft]", hit.source]
            title, rule, implication = hit.excerpt.split("\n", 1)[0][:120], None, None
            cited = [hit.citation]
        else:
            hard += meta["classification"] == "Hard"
            label = [f"[{meta['classification']}]",
                     *([f"[{meta['severity']}]"] if meta.get("severity") else []),
                     meta.get("type") or "entry"]
            title, rule, implication = meta.get("title"), meta.get("rule"), meta.get("implication")
            cited = list(meta.get("source") or []) or [hit.citation]
        lines.append(" ".join([*label, *flags]))
        lines.append(f"Title: {title or ''}")
        lines += [f"{name}: {value}" for name, value in (("Rule", rule), ("Implication", implication))
                  if value]
        lines.append(f"Source: {cited[0]}")
        lines += [_CONTINUATION + more for more in cited[1:]]
        if full and meta is not None and meta.get("content"):
            lines += ["Content:"] + [f"  - {item}" for item in meta["content"]]
        lines += ["---", ""]
    lines += ["Tips:", f"- {hard} Hard + {len(found.results) - hard} Soft entries returned"]
    if too_broad(found.total):
        lines.append(f"- {found.total} entries match (more than {BROAD_MATCHES}): use narrower "
                     "terms, --tag or --category; only the best are shown")
    if any("[Stale?]" in flags for flags in notes):
        lines.append("- [Stale?]: not verified for over 90 days; check before relying on it")
    if any("[Source may be outdated]" in flags for flags in notes):
        lines.append("- [Source may be outdated]: a cited file no longer exists")
    return printable("\n".join(lines))


def mnemonic_json(payload: dict) -> str:
    """The search-subcall JSON (`sources/mnemonic.py: subcall`), as JSON."""
    from miniclaw.cli.render import to_json

    return to_json(payload)
