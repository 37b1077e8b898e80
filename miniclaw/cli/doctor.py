"""`miniclaw doctor`: is my memory healthy? (the checks live in `miniclaw.doctor`)."""


from typing import Annotated

import typer

from miniclaw.cli.app import FormatOption, JsonOption, command_app, output_format, workspace_of

doctor_app = command_app()


@doctor_app.command("doctor")
def doctor(
    ctx: typer.Context,
    output: FormatOption = None,
    json_out: JsonOption = False,
    fix: Annotated[bool, typer.Option("--fix", help="Rebuild the index and remove leftover temporary files; never touches a memory file.")] = False,
) -> None:
    """Check the workspace, its memory files, the index, the model server and the MCP
    registration; say what is wrong and what to do. Exit 0 when healthy, 1 otherwise.

    Without --fix nothing is written.

    \b
    Example: miniclaw doctor --fix
    """
    from miniclaw import doctor as checks

    json_out = output_format(output, json_out) == "json"
    workspace = workspace_of(ctx)
    report = checks.examine(workspace)
    if fix:
        done = checks.fix(workspace, report)
        report = checks.examine(workspace)
        report.fixed = done
    if json_out:
        from miniclaw.cli.render import to_json

        typer.echo(to_json(report.to_dict()))
    else:
        typer.echo(render(report, fix))
    raise typer.Exit(0 if report.healthy else 1)


def render(report, fixing: bool = False) -> str:
    from miniclaw.cli.render import printable

    lines = [f"miniclaw doctor: {report.workspace}"]
    if fixing and not report.fixed:
        lines.append("fixed    nothing: --fix found nothing it may repair")
    for done in report.fixed:
        lines.append(f"fixed    {done}")
    for finding in report.findings:
        where = f"{finding.path}: " if finding.path else ""
        lines.append(f"{finding.severity:<8} {where}{finding.message}")
        lines.append(f"{'':<8} → {finding.fix}")
    lines.extend(f"checked  {line}" for line in report.checked)
    counts = {s: sum(f.severity == s for f in report.findings) for s in ("error", "warning")}
    if report.healthy:
        lines.append("Healthy." if not report.findings else "Healthy (see the notes above).")
    else:
        lines.append(f"{counts['error']} error{'s' * (counts['error'] != 1)}, "
                     f"{counts['warning']} warning{'s' * (counts['warning'] != 1)}.")
    return "\n".join(printable(line) for line in lines)
