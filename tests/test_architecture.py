"""The shape of the code holds (issue 33): the floors of pyproject.toml's import-linter
contracts are kept (`lint-imports`), no module imports itself back through others (lazy
and TYPE_CHECKING imports included: an import inside a function is still a dependency),
and no package folder holds more than 15 modules, so each stays one concept."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "miniclaw"
MAX_MODULES = 15


def test_the_import_contracts_are_kept():
    """`lint-imports` (the `dev` extra) beside the Python running the suite, as CI has it."""
    lint = Path(sys.executable).with_name("lint-imports")
    assert lint.exists(), f"{lint} is missing: install the dev extra (`pip install -e '.[dev]'`)"
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_no_package_folder_holds_more_than_15_modules():
    folders = {path.parent for path in PACKAGE.rglob("*.py")}
    crowded = {str(folder.relative_to(ROOT)): count for folder in folders
               if (count := len(list(folder.glob("*.py")))) > MAX_MODULES}
    assert crowded == {}


def _modules() -> dict[str, Path]:
    """miniclaw's modules by dotted name (a package by its own name, for its __init__)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The miniclaw modules `name` imports anywhere in its text (top level, functions,
    TYPE_CHECKING blocks): `from a.b import c` is module a.b.c when that is a module, else
    a.b; a name that is no module stands for the nearest enclosing one."""
    def known(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        else:
            continue
        out.update(found for target in targets
                   if target.split(".")[0] == "miniclaw" and (found := known(target)))
    out.discard(name)
    return out


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_import_circles_lazy_imports_included():
    modules = _modules()
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle():
    """The check above can fail: a circle through a lazy import is found."""
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    modules = _modules()
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    assert "miniclaw.sources.base" in graph["miniclaw.sources.transcripts"]
    graph["miniclaw.sources.base"].add("miniclaw.sources.transcripts")  # as before issue 33
    assert ["miniclaw.sources.base", "miniclaw.sources.transcripts"] in _circles(graph)
