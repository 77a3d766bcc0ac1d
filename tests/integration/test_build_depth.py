"""A rebuild of the same tree hits every object in ccache, whatever folder and depth it is built at.

Real ccache, CMake and Ninja on a generated project. The tree stays where it
is (``--source``); the output folder moves: beside it, two levels down, five
levels down, and ``reproduce``'s own default (``out/reproduce``, one level
deeper than a build's ``out``). The compile commands name the tree only as
seen from the build folder, so a layout that puts the depth into them misses
every object in every folder but the first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import write_cpp_project, write_matrix

pytestmark = pytest.mark.integration

UNITS = 6
# The units and main.cpp.
COMPILATIONS = UNITS + 1


def build(root: Path, out: Path) -> dict[str, Any]:
    run_pipeline(
        ["--matrix", str(root / "matrix.toml"), "build", "cpu", "--source", str(root / "project"), "--tag", "b1",
         "--out", str(out), "--ccache-dir", str(root / "ccache")],
        check=True,
    )  # fmt: skip
    return json.loads((out / "cpu" / "record.json").read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("depth")
    write_cpp_project(root / "project", units=UNITS, name="depthdemo")
    write_matrix(root / "matrix.toml")
    return {
        "beside": build(root, root / "out"),
        "two down": build(root, root / "a" / "b" / "out"),
        "five down": build(root, root / "a" / "b" / "c" / "d" / "e" / "out"),
    }


def test_the_first_build_is_cold(records: dict[str, dict[str, Any]]) -> None:
    assert (records["beside"]["ccache"]["hits"], records["beside"]["ccache"]["misses"]) == (0, COMPILATIONS)


@pytest.mark.parametrize("where", ["two down", "five down"])
def test_a_build_at_another_depth_hits_every_object(records: dict[str, dict[str, Any]], where: str) -> None:
    stats = records[where]["ccache"]
    assert (stats["hits"], stats["misses"]) == (COMPILATIONS, 0), stats


def test_reproduce_in_its_default_folder_hits_every_object(
    records: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    root = Path(records["beside"]["source"]["path"]).parent
    bundle = root / "out" / records["beside"]["bundle"]
    # Run from the first build's folder: reproduce's default output is out/reproduce, one level deeper.
    proc = run_pipeline(
        ["--matrix", str(root / "matrix.toml"), "reproduce", str(bundle), "--source", str(root / "project"),
         "--ccache-dir", str(root / "ccache")],
        cwd=root,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((root / "out" / "reproduce" / "cpu" / "record.json").read_text())
    assert (record["ccache"]["hits"], record["ccache"]["misses"]) == (COMPILATIONS, 0), record["ccache"]
