"""The memory store (`MemoryStore`): writing, forgetting, what was shown, short-term turns."""
