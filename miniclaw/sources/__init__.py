"""Source kinds: other tools' memory formats, plugged in by `memory/sources.py: KINDS`."""
