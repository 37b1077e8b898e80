"""What a wheel ships: pyproject.toml lists its packages by hand (workspace_template/ is mapped
into the package), so a new folder of modules must be listed there too. An editable install
finds every module anyway, which is how `miniclaw.sources` once went missing from the wheel
and every command of a `pip install`ed miniclaw failed (ModuleNotFoundError) while the tests
passed."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def _package_folders() -> dict[str, Path]:
    """Each listed package's folder in the repository."""
    config = _setuptools()
    mapped = config.get("package-dir", {})
    return {name: ROOT / mapped.get(name, name.replace(".", "/")) for name in config["packages"]}


def test_every_folder_of_modules_is_a_listed_package():
    listed = {folder.resolve() for folder in _package_folders().values()}
    folders = {path.parent.resolve() for path in (ROOT / "miniclaw").rglob("*.py")
               if "__pycache__" not in path.parts}
    missing = sorted(str(folder.relative_to(ROOT)) for folder in folders - listed)
    assert not missing, f"not in pyproject.toml's [tool.setuptools] packages: {missing}"
    assert all(folder.is_dir() for folder in listed)


def test_every_data_file_is_package_data():
    """Files that are not modules ship only when a package-data pattern names them."""
    folders = _package_folders()
    patterns = _setuptools().get("package-data", {})
    unshipped = []
    for name, folder in folders.items():
        others = [f for other, f in folders.items() if other != name]
        for path in folder.rglob("*"):
            if (path.is_dir() or path.suffix == ".py" or "__pycache__" in path.parts
                    or any(path.is_relative_to(f) for f in others if f != folder)):
                continue
            relative = path.relative_to(folder).as_posix()
            if not any(fnmatch.fnmatch(relative, p) for p in patterns.get(name, ())):
                unshipped.append(f"{name}: {relative}")
    assert not unshipped, f"not in [tool.setuptools.package-data]: {unshipped}"
