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
RESOLUTION = """{"format": 1, "now": "2026-08-10T09:17:00Z", "rocm_policy": "weekly", "cutoff": "20260808", "index_url": null, "legs": {}, "source": {"repo": "https://github.com/ggml-org/llama.cpp", "base_tag": "b1", "base_commit": null, "base_date": null, "tag": "b1", "mix": [], "mix_hash": null, "commit": null}}"""


def test_one_entry_per_leg_with_its_runner(tmp_path: Path) -> None:
    resolved = tmp_path / "resolved.json"
    # A whole resolution, as `resolve` writes it: it is validated before it is handed on.
    resolved.write_text(json.dumps(json.loads(RESOLUTION), indent=2))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(tmp_path / "output")}
    proc = run_pipeline(["--matrix", str(MATRIX), "matrix", "--github", "--resolved", str(resolved)], env=env)
    assert proc.returncode == 0, proc.stderr
    declared = tomllib.loads(MATRIX.read_text())["legs"]
    data = json.loads(proc.stdout)
    # Every leg the file declares, but those it disables (read here from the TOML itself).
    assert [e["leg"] for e in data["include"]] == [
        name for name, leg in declared.items() if "disabled" not in leg
    ]
    # All 39 legs: the CUDA 12.8 line and the Windows arm64 CUDA leg included, none disabled.
    assert len(data["include"]) == 39 == len(declared)
    # The release job's runner per os/arch, where a leg names none (Windows arm64 cross-builds on x64).
    job_runners = {
        ("linux", "x64"): "ubuntu-22.04",
        ("linux", "arm64"): "ubuntu-22.04-arm",
        ("windows", "x64"): "windows-2022",
        ("windows", "arm64"): "windows-2022",
        ("macos", "arm64"): "macos-26",
        ("macos", "x64"): "macos-15-intel",
    }
    for entry in data["include"]:
        leg = declared[entry["leg"]]
        assert entry["session"] == entry["leg"]
        assert (entry["os"], entry["arch"]) == (leg.get("os", "linux"), leg.get("arch", "x64"))
        assert entry["runner"] == leg.get("runner", job_runners[(entry["os"], entry["arch"])])
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


def test_legs_json_lists_the_39_declared_legs_all_built_offline_installing_nothing(tmp_path: Path) -> None:
    home = tmp_path / "cache-home"
    # No network (any proxy use fails), an empty cache home that must stay empty.
    env = {
        "PIPELINE_CACHE_HOME": str(home),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "PATH": "/usr/bin:/bin",
    }
    proc = run_pipeline(["--matrix", str(MATRIX), "legs", "--json", "--tag", "b1234"], env=env)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    declared = tomllib.loads(MATRIX.read_text())["legs"]
    assert [r["name"] for r in rows] == list(declared) and len(rows) == 39
    assert [r["name"] for r in rows if r["disabled"]] == []
    assert all(
        set(r) == {"name", "backend", "os", "arch", "runner", "targets", "toolkit", "bundle", "disabled"}
        for r in rows
    )
    assert {r["name"]: r["disabled"] for r in rows if r["disabled"]} == {
        name: leg["disabled"] for name, leg in declared.items() if "disabled" in leg
    }
    assert len({r["bundle"] for r in rows}) == 39
    by_name = {r["name"]: r for r in rows}
    assert by_name["cpu-arm64"]["bundle"] == "llama-b1234-bin-ubuntu-arm64.tar.gz"
    assert by_name["cuda-windows-12.8-legacy"]["toolkit"] == "CUDA 12.8.93"
    assert by_name["cuda-windows-12.8-legacy"]["targets"] == ["50-virtual", "61-virtual"]
    arm = by_name["cuda-windows-13-portable-arm64"]
    assert (arm["toolkit"], arm["targets"], arm["runner"]) == ("CUDA 13.4.59", ["120", "121"], "windows-2022")
    assert arm["bundle"] == "app-b1234-windows-arm64-cuda13-portable.zip"
    assert by_name["rocm-linux-gfx103X"]["targets"] == ["gfx1030", "gfx1031", "gfx1032", "gfx1034"]
    assert not home.exists() or not any(home.rglob("*"))
    default = json.loads(run_pipeline(["--matrix", str(MATRIX), "legs", "--json"], env=env).stdout)
    # Without --tag: the matrix's [source] tag.
    assert default[0]["bundle"].startswith("llama-latest-bin-")
    bad = run_pipeline(["--matrix", str(MATRIX), "legs", "--json", "--tag", "../x"], env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--tag '../x'" in bad.stderr


def test_cache_budget_gives_each_of_the_39_declared_legs_its_share_and_warns_on_max_size(
    tmp_path: Path,
) -> None:
    proc = run_pipeline(
        ["--matrix", str(MATRIX), "cache-budget", "--json"], env={"HTTPS_PROXY": "http://127.0.0.1:9"}
    )
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert len(plan["legs"]) == 39 and plan["keep"] == 2
    # 80% of GitHub's 10 GiB over 39 legs x 2 generations (a disabled leg is planned for too), one shard set for
    # each of the 29 legs with shards (the CUDA and ROCm legs built) and the Saturday warm-up's generation of each
    # of the 14 ROCm legs (7 families, Linux and Windows).
    assert plan["shard_sets"] == 29
    assert {leg["share_bytes"] for leg in plan["legs"]} == {int(10 * 1024**3 * 0.8) // (78 + 29 + 14)}
    assert sorted(leg["generations"] for leg in plan["legs"]) == [2] * 10 + [3] * 15 + [4] * 14
    assert all(leg["fits"] for leg in plan["legs"])
    assert proc.stderr.startswith("warning: [ccache] max_size 4.7 GiB lets 39 legs' 121 generations grow to")
    # A repository with GitHub's limit at 1 GiB: 6.8 MiB per leg, less than a warm cpu build's 27 MiB.
    small = tmp_path / "matrix.toml"
    small.write_text(
        MATRIX.read_text().replace("cache_limit_bytes = 10737418240", "cache_limit_bytes = 1073741824")
    )
    tight = run_pipeline(["--matrix", str(small), "cache-budget"])
    assert tight.returncode == 0
    assert "warning: 39 of 39 legs get 6.8 MiB of ccache each within 819.2 MiB" in tight.stderr
    assert "too small for a warm build" in tight.stdout
