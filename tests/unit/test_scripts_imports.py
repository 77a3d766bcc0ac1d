"""A script of the project never imports the tests (what a script and a test share lives in scripts/workload/),
and names another script by its one name, ``scripts.<package>.<module>``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    """Every module an ``import`` or ``from ... import`` names in ``path``, at any depth (lazy ones too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_the_reader_sees_a_lazy_import_of_the_tests(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("def f():\n    from tests.support.x import y\n    import tests\n")
    assert imported_modules(script) == {"tests.support.x", "tests"}


def test_no_script_imports_the_tests() -> None:
    scripts = sorted((ROOT / "scripts").rglob("*.py"))
    assert len(scripts) >= 6  # the benchmarks, the GPU check and the workloads
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            m for m in imported_modules(path) if m.partition(".")[0] == "tests"
        )
        for path in scripts
    }
    assert {path: mods for path, mods in offenders.items() if mods} == {}


def test_a_script_imports_another_by_its_one_name() -> None:
    """``scripts.workload.reduction``, never ``reduction`` found through a folder put on ``sys.path``: a module
    imported under two names is two modules (loaded twice, with two copies of its classes and state)."""
    scripts = sorted((ROOT / "scripts").rglob("*.py"))
    names = {p.stem for p in scripts if not p.stem.startswith("__")} | {p.parent.name for p in scripts}
    bare = names - {"scripts"}
    offenders = {
        str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.partition(".")[0] in bare)
        for path in scripts
    }
    assert {path: mods for path, mods in offenders.items() if mods} == {}
