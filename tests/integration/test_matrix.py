"""`python -m pipeline matrix --github`: the strategy.matrix and the resolution as step outputs."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.support.actions_files import read_file_commands
from tests.support.pipeline_cli import ROOT, run_pipeline

pytestmark = pytest.mark.integration

MATRIX = ROOT / "matrix.toml"
RESOLUTION = '''{"format": 1, "now": "2026-08-10T09:17:00Z", "rocm_policy": "weekly", "cutoff": "20260808", "index_url": null, "legs": {}, "source": {"repo": "https://github.com/ggml-org/llama.cpp", "base_tag": "b1", "base_commit": null, "base_date": null, "tag": "b1", "mix": [], "mix_hash": null, "commit": null}}'''


def test_one_entry_per_leg_with_its_runner(tmp_path: Path) -> None:
    resolved = tmp_path / "resolved.json"
    # A whole resolution, as `resolve` writes it: it is validated before it is handed on.
    resolved.write_text(json.dumps(json.loads(RESOLUTION), indent=2))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(tmp_path / "output")}
    proc = run_pipeline(["--matrix", str(MATRIX), "matrix", "--github", "--resolved", str(resolved)], env=env)
    assert proc.returncode == 0, proc.stderr
    declared = tomllib.loads(MATRIX.read_text())["legs"]
    data = json.loads(proc.stdout)
    assert [e["leg"] for e in data["include"]] == list(declared)
    for entry in data["include"]:
        assert entry["session"] == entry["leg"]
        assert entry["runner"] == declared[entry["leg"]]["runner"]
    outputs = read_file_commands(tmp_path / "output")
    assert json.loads(outputs["matrix"]) == data
    assert "\n" not in outputs["resolved"]
    assert json.loads(outputs["resolved"]) == json.loads(resolved.read_text())


def test_legs_from_the_dispatch_input(tmp_path: Path) -> None:
    proc = run_pipeline(["--matrix", str(MATRIX), "matrix", "--github"], env={"PIPELINE_LEGS": "cpu, cuda"})
    assert proc.returncode == 0, proc.stderr
    assert [e["leg"] for e in json.loads(proc.stdout)["include"]] == ["cuda", "cpu"]
    bad = run_pipeline(["--matrix", str(MATRIX), "matrix", "--github", "--legs", "cpu,vulcan"])
    assert bad.returncode == 2 and "did you mean 'vulkan'" in bad.stderr
