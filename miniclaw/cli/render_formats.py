"""Other tools' output shapes for `memory rank --format`, so their skills can call miniclaw
in place of their own scripts: `ef` (EF Memory's `/memory-search` entry blocks) and
`mnemonic` (the JSON of mnemonic's search-subcall agent). The library works out EF Memory's
data (`sources/ef_memory.py: result_notes`); mnemonic's shape of a search (`subcall`) is
here, above the store, the index and the hints it reads (a source kind imports none of them)."""

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
    """The search-subcall JSON (`subcall`), as JSON."""
    from miniclaw.cli.render import to_json

    return to_json(payload)


EVIDENCE_CHARS = 150  # the search subcall's limit for a quote


def subcall(store, found, *, namespace: str | None = None, tag: str | None = None,
            sources: tuple[str, ...] | None = None) -> dict:
    """A search as mnemonic's search-subcall agent reports one (its JSON shape): findings
    (file, id, title, namespace, type, tags, relevance, evidence, citations_count), the
    namespaces searched and those worth trying, and refinement suggestions. `sources`: the
    search's (None: every mnemonic store configured)."""
    from miniclaw.index.search_index import Filters
    from miniclaw.search.hints import describe
    from miniclaw.sources.mnemonic import MnemonicSource

    ours = [s for s in store.sources if isinstance(s, MnemonicSource)
            and (sources is None or s.name in sources)]
    ids = [i for s in ours for i in store.index.matching(s, Filters((s.name,)))]
    stored = [entry.meta.get("namespace") for entry in store.index.entries(ids).values()]
    every = sorted({n for n in stored if n})
    hits = [hit for hit in found.results if hit.source in {s.name for s in ours}]
    top = max((hit.score for hit in hits), default=0.0)
    findings = [{
        "file": hit.path, "id": hit.meta.get("id"), "title": hit.meta.get("title"),
        "namespace": hit.meta.get("namespace"), "type": hit.meta.get("type"),
        "tags": list(hit.meta.get("tags", hit.tags)),
        "relevance": _relevance(hit.score, top), "evidence": _evidence(hit.excerpt),
        "citations_count": hit.meta.get("citations_count", 0)} for hit in hits]
    searched = [n for n in every if namespace is None or n == namespace
                or n.startswith(namespace.rstrip("/") + "/")]
    found_in = {finding["namespace"] for finding in findings}
    suggested = [n for n in every if n not in searched] if namespace else []
    suggestions = [f"Try searching in {n} namespace" for n in suggested[:3]]
    tags = [t for finding in findings for t in finding["tags"] if t != tag]
    suggestions += [f"Add tag filter: {t}" for t in dict.fromkeys(tags)][:2]
    suggestions += [describe(hint) for hint in found.hints if hint.kind not in (
        "narrow_tag", "narrow_category", "widen_days")]  # the days window is daily notes'

    return {"iteration": 1, "pattern": found.query, "namespace_filter": namespace,
            "tag_filter": tag, "files_searched": len(ids), "files_matched": found.total,
            "findings": findings,
            "coverage": {"namespaces_searched": searched,
                         "namespaces_suggested": suggested or [
                             n for n in searched if n not in found_in][:3]},
            "refinement_suggestions": suggestions}


def _relevance(score: float, top: float) -> str:
    """high / medium / low: a result's score against the best one's."""
    share = score / top if top > 0 else 0.0
    return "high" if share >= 0.66 else "medium" if share >= 0.33 else "low"


def _evidence(excerpt: str) -> str:
    """The excerpt as one quote of at most 150 characters, without Markdown heading marks."""
    text = " ".join(word for word in excerpt.split() if word.strip("#"))
    return text if len(text) <= EVIDENCE_CHARS else text[:EVIDENCE_CHARS - 3].rstrip() + "..."
