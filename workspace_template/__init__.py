"""The files of a new workspace (`miniclaw init` copies the .md files; not this one)."""
