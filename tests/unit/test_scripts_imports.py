"""A script of the project never imports the tests (what a script and a test share lives in scripts/workload/),
and names another script by its one name, ``scripts.<package>.<module>``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A test module's dotted name in a string: what importlib would load, however the call is spelled.
_TEST_MODULE_NAME = re.compile(r"tests(?:\.[A-Za-z_]\w*)+")


def imported_modules(path: Path) -> set[str]:
    """Every module an ``import`` or ``from ... import`` names in ``path``, at any depth (lazy ones too), and
    every module named in ``importlib.import_module("...")``: a name in a string is an import all the same."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


def test_the_reader_sees_a_lazy_import_of_the_tests(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text(
        "import importlib\n"
        "def f():\n    from tests.support.x import y\n    import tests\n"
        "    importlib.import_module('tests.integration.z')\n"
    )
    assert imported_modules(script) == {"importlib", "tests.support.x", "tests", "tests.integration.z"}


def named_test_modules(path: Path) -> set[str]:
    """Every string in ``path`` that is a test module's dotted name (a helper may hand it to importlib)."""
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _TEST_MODULE_NAME.fullmatch(node.value)
    }


def test_the_reader_sees_a_test_module_named_in_a_string(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text(
        "def load(m):\n    return __import__(m)\nvulkan = load('tests.integration.test_vulkan')\n"
    )
    assert named_test_modules(script) == {"tests.integration.test_vulkan"}


def test_no_script_imports_the_tests() -> None:
    scripts = sorted((ROOT / "scripts").rglob("*.py"))
    assert len(scripts) >= 6  # the benchmarks, the GPU check and the workloads
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            {m for m in imported_modules(path) if m.partition(".")[0] == "tests"} | named_test_modules(path)
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
