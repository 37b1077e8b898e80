"""The SQLite index: its database, building and syncing it from the sources, watching."""
