"""Nothing heavy at import: ``--help``, ``legs`` and ``nox -l`` load neither a heavy library nor any third-party one.

Read from ``python -X importtime``'s list of what a process imported (no
clock is asserted: a loaded machine would make that flaky). The heavy ones
were measured with ``python -X importtime -c "import X"`` (cumulative, on
a loaded 2-core machine): ``cyclonedx.validation.json`` 2 s (jsonschema and
its format checkers: what ``--help`` cost before), ``gguf`` 0.8 s,
``requests`` 0.4 s, ``numpy`` 0.3 s, ``cyclonedx.model.bom`` 0.25 s,
``rich.progress`` 0.2 s, ``elftools`` 0.2 s, ``tenacity`` 0.12 s, ``pefile``
0.12 s, ``filelock`` 0.08 s, ``rich.console`` 0.09 s, ``macholib`` 0.04 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from tests.support.pipeline_cli import ROOT

HEAVY = (
    "cyclonedx", "jsonschema", "rfc3987_syntax", "gguf", "numpy", "requests", "urllib3", "rich",
    "elftools", "pefile", "macholib", "tenacity", "filelock",
)  # fmt: skip


def imported(args: list[str], cwd: Path, *, depth: int = 1) -> set[str]:
    """The modules a ``python -X importtime ARGS`` process imported (its stderr's third column), cut to their
    first ``depth`` parts (1: the top-level packages)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = {
        line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")
    }
    names.discard("imported package")  # the header line
    return {".".join(name.split(".")[:depth]) for name in names}


@pytest.mark.parametrize("command", [["--help"], ["legs"], ["legs", "--json"], ["build", "--help"]])
def test_the_quick_commands_import_the_standard_library_and_the_pipeline_only(command: list[str]) -> None:
    loaded = imported(["-m", "pipeline", *command], ROOT)
    assert "pipeline" in loaded  # the list is read right: the pipeline itself is in it
    assert sorted(loaded & set(HEAVY)) == []
    # Any installed distribution's package, heavy or not yet: what the environment's metadata says is third-party.
    third_party = set(packages_distributions()) - {"pipeline"}
    assert sorted(loaded & third_party) == []


def test_nox_lists_the_sessions_without_a_heavy_import(tmp_path: Path) -> None:
    loaded = imported(["-m", "nox", "-f", str(ROOT / "noxfile.py"), "-l"], tmp_path)
    assert {"nox", "pipeline"} <= loaded
    assert sorted(loaded & set(HEAVY)) == []


@pytest.mark.parametrize("command", ["legs", "build", "publish"])
def test_a_command_imports_its_own_module_and_no_other_command(command: str) -> None:
    loaded = imported(["-m", "pipeline", command, "--help"], ROOT, depth=3)
    commands = {name for name in loaded if name.startswith("pipeline.commands.")}
    assert {name for name in commands if not name.startswith("pipeline.commands.shared")} == {
        f"pipeline.commands.{command}"
    }
