"""The `miniclaw` command line: a thin layer over the library (see `app.py`)."""

from miniclaw.cli.app import app
from miniclaw.cli.memory import memory_app
from miniclaw.cli import workspace as _workspace  # noqa: F401  (registers `init`)

app.add_typer(memory_app)


def main() -> None:
    app()


__all__ = ["app", "main"]
