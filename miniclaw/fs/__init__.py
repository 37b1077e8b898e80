"""File access: the shared no-follow, capped, non-blocking open; atomic writes; locks."""
