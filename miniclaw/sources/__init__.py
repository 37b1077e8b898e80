"""Source kinds for other tools' memory stores (ConKeeper, mnemonic, EF Memory, transcripts)."""

# The default sources (sources/base.py: SOURCES) include transcripts.py's, so that module
# must load after FileSource exists, whichever of the two a program imports first.
import miniclaw.sources.base  # noqa: E402,F401
