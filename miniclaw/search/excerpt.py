"""Excerpts: the part of an entry that matched best, short enough for one line.

A pure function: the window (at most `width` characters, `…` included) that holds the most
distinct query terms, with a little context before the first match; whitespace runs are
collapsed first. Also returns where the matched words sit in the excerpt, for highlighting.
"""

from __future__ import annotations

from itertools import accumulate, chain, compress, count, repeat
from operator import is_

from miniclaw.entries.tokenizer import chunk_terms, is_stop_word, token_spans

EXCERPT_WIDTH = 150
# An entry can be megabytes long (one pasted line): the window is chosen within its first
# 200,000 characters, which keeps a search of such an entry in milliseconds.
SCAN_CHARS = 200_000
_ELLIPSIS = "…"
_LEAD = 30  # characters of context kept before the first matched word


def _hits(flat: str, terms: set[str] | frozenset[str]) -> list[tuple[int, int, set[str]]]:
    """(start, end, query terms) of each matched word of `flat` (words one space apart).

    Why not `token_spans(flat)`: placing every word of a long entry costs a regex match and
    a lookup per word, for the few that match. A chunk between spaces has the terms of its
    words (`chunk_terms`, from a cache), so only chunks that hold a query term are looked at
    word by word. The chunks are sifted in C (`map`, `compress`): a long entry has thousands."""
    hits: list[tuple[int, int, set[str]]] = []
    if not terms:
        return hits
    chunks = flat.split(" ")
    found = chunk_terms(chunks)
    one_term = compress(count(), map(terms.__contains__, found))  # a tuple is never in terms
    several = compress(count(), map(is_, map(type, found), repeat(tuple)))
    matching = sorted(chain(one_term, (i for i in several if not terms.isdisjoint(found[i]))))
    if not matching:
        return hits
    ends = list(accumulate(map(len, chunks)))  # chunk i starts at ends[i - 1] + i
    for i in matching:
        offset = (ends[i - 1] if i else 0) + i
        for start, end, words in token_spans(chunks[i]):
            matched = terms.intersection(words)
            if matched:
                hits.append((offset + start, offset + end, matched))
    return hits


def _best_window(hits: list[tuple[int, int, set[str]]], room: int) -> tuple[int, int]:
    """(start, end) of the first window of at most `room` characters, starting at a hit,
    that holds the most distinct query terms. One pass with a count per term in the window
    (a long entry that repeats the query's words has hundreds of hits: comparing each
    with all the hits after it was most of an excerpt)."""
    best_start, best_end, best_count = 0, 0, -1
    counts: dict[str, int] = {}
    after = 0  # hits[i:after] fit in the window starting at hit i
    for i, (start, _, _) in enumerate(hits):
        after = max(after, i)
        while after < len(hits) and hits[after][1] - start <= room:
            for term in hits[after][2]:
                counts[term] = counts.get(term, 0) + 1
            after += 1
        if len(counts) > best_count:
            best_start, best_count = start, len(counts)
            best_end = hits[after - 1][1] if after > i else start
        if after > i:  # hit i leaves the window
            for term in hits[i][2]:
                counts[term] -= 1
                if not counts[term]:
                    del counts[term]
    return best_start, best_end


def make_excerpt(text: str, terms: set[str] | frozenset[str],
                 width: int = EXCERPT_WIDTH) -> tuple[str, tuple[tuple[int, int], ...]]:
    """(excerpt, highlight spans as (start, end) offsets into the excerpt)."""
    flat = " ".join(text[:SCAN_CHARS].split())
    hits = _hits(flat, terms)
    if len(flat) <= width:
        return flat, tuple((s, e) for s, e, _ in hits)

    room = width - 2  # leave room for an ellipsis on each side
    best_start, best_end = _best_window(hits, room)
    lead = max(min(_LEAD, room - (best_end - best_start) - 1), 0)  # the cluster must fit
    begin = 0 if best_start <= lead else best_start - lead
    if begin:  # start at a word boundary
        space = flat.find(" ", begin, best_start)
        begin = space + 1 if space != -1 else begin
    begin = min(begin, max(len(flat) - room, 0))
    prefix = _ELLIPSIS if begin > 0 else ""
    end = begin + width - len(prefix)
    if end < len(flat):
        end -= 1
        cut = flat.rfind(" ", begin, end)
        if cut > begin + width // 2:
            end = cut
        body, suffix = flat[begin:end].rstrip(), _ELLIPSIS
    else:
        body, suffix = flat[begin:], ""
    shift = len(prefix) - begin
    spans = tuple((s + shift, e + shift) for s, e, _ in hits
                  if s >= begin and e <= begin + len(body))
    return prefix + body + suffix, spans
