"""miniclaw: a personal AI assistant whose memory is plain Markdown the user owns."""

__version__ = "0.1.0"
