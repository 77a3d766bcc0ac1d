"""ARCHITECTURE.md's table of layers is the one import-linter enforces (pyproject.toml), and the tree shows it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The entry points and the few shared names stay at the top; every other module lives in a feature package.
MAX_TOP_LEVEL_MODULES = 8


def _layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers: list[str] = next(c for c in contracts if c["type"] == "layers")["layers"]
    return layers


def test_every_layer_is_in_the_architecture_table() -> None:
    table = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`" in line.split("|")[2]]
    documented = [re.findall(r"`([^`]+)`", row.split("|")[2]) for row in rows]
    enforced = [[m.strip() for m in layer.split("|")] for layer in _layers()]
    assert documented == enforced


def test_every_package_and_top_level_module_is_in_a_layer() -> None:
    listed = {m.strip() for layer in _layers() for m in layer.split("|")}
    children = {
        p.stem if p.is_file() else p.name
        for p in (ROOT / "pipeline").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())
    }
    assert children == listed


def test_the_top_level_keeps_only_entry_points_and_shared_names() -> None:
    modules = sorted(p.name for p in (ROOT / "pipeline").glob("*.py"))
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, modules


_TEST_IMPORT = re.compile(r"^\s*(?:from|import)\s+tests\.(?:unit|integration)\b", re.MULTILINE)


def test_no_test_module_or_script_imports_a_test_module() -> None:
    # Shared builders live in tests/support/; a test module imported by another runs its tests twice
    # and hides what the importer depends on.
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("tests", "scripts")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if _TEST_IMPORT.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
