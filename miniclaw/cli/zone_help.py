"""Help that names the time zone in use: `add`, `read` and `recent` work on "today", and
which day that is depends on the `timezone` setting, so their `--help` says it."""


from typer.core import TyperCommand


def zone_line() -> str:
    """The zone in use and today's date in it, or what is wrong with the setting."""
    from miniclaw import config
    from miniclaw.dates import utc_now, zone_name
    from miniclaw.errors import UsageError

    where = f'MINICLAW_TIMEZONE or "timezone" in {config.config_path()}'
    try:
        zone = config.time_zone()
    except UsageError as exc:
        return f"Time zone: the setting is not valid ({exc}); set {where}."
    today = utc_now().astimezone(zone).date().isoformat()
    return f"Time zone: {zone_name(zone)}, where today is {today} (set by {where}; default UTC)."


class ZoneHelpCommand(TyperCommand):
    """A command whose help ends with `zone_line()`, computed when the help is shown."""

    def format_epilog(self, ctx, formatter) -> None:
        super().format_epilog(ctx, formatter)
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(zone_line())
