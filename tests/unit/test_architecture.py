"""ARCHITECTURE.md's table of layers is the one import-linter enforces (pyproject.toml)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_layer_module_is_in_the_architecture_table() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    layers = config["tool"]["importlinter"]["contracts"][0]["layers"]
    table = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`" in line]
    documented = [re.findall(r"`([^`]+)`", row.split("|")[2]) for row in rows]
    enforced = [[m.strip().replace(".", "/") for m in layer.split(":")] for layer in layers]
    assert documented == enforced


def test_every_module_of_the_package_is_in_a_layer() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = {m.strip() for layer in config["tool"]["importlinter"]["contracts"][0]["layers"] for m in layer.split(":")}
    children = {p.stem if p.is_file() else p.name for p in (ROOT / "pipeline").iterdir()
                if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    rocm = {f"rocm.{p.stem}" for p in (ROOT / "pipeline" / "rocm").glob("*.py") if p.stem != "__init__"}
    assert (children - {"rocm"}) | rocm == listed
