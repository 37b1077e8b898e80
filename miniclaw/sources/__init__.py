"""Source kinds: one class per module, registered by name in `memory/sources.py: KINDS`."""
