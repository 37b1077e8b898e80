"""`miniclaw memory tidy`: the consolidation pass over MEMORY.md and the daily notes.

`report.py` finds duplicate clusters and conflict pairs (read only), `grouping.py` is the
pure clustering under it, `merge.py` folds a duplicate cluster into one entry, and
`suggest.py` asks a model which daily-note facts belong in MEMORY.md.
"""
