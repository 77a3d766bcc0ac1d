"""The real llama.cpp tree's cpu leg cross-built for Linux arm64 here, and its bundle run under qemu.

The shipped matrix.toml's ``cpu-arm64`` leg (its flags plus the one CI
reduction of scripts/workload/reduction.py; tests/unit/test_tested_flags.py
checks it) goes the workflow's path: ``resolve``, ``source``, ``build
cpu-arm64``. On this x86-64 machine the pipeline builds it with Debian's
``aarch64-linux-gnu`` GCC through the CMake toolchain file it writes, and
check-bundle runs the smoke run under ``qemu-aarch64 -L
/usr/aarch64-linux-gnu``: each program's version, the tokenizer check
against llama.cpp's own test pair, and one forward pass with a tiny model.

Skipped, saying why, where the cross compiler or qemu-user is missing or
on an arm64 machine (the leg builds natively there: test_real_tree's job).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scripts.workload.leg_matrix import leg_table
from scripts.workload.llama_sdist import e2e_cache_root
from scripts.workload.reduction import REDUCED_PROGRAMS, reduce_leg_flags, shipped_flags
from tests.support import shared_jobs
from tests.support.llama_tree import PR_NUMBER, PR_REPO, prepared_forge
from tests.support.real_tree_matrix import RUN_TEMPLATE

# In `nox -s e2e` (marker long): 12 to 15 minutes of both cores cold, past the suite's budget; the suite keeps
# the cheaper real checks of the leg (tests/integration/test_real_tree_configure.py, docs/testing.md).
pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.long, pytest.mark.leg("cpu-arm64")]

ROOT = Path(__file__).resolve().parents[2]
LEG = "cpu-arm64"
NOW = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
BUILD_TIMEOUT = 5400
SYSROOT = "/usr/aarch64-linux-gnu"

# The legs this module builds, as configured: the shipped leg's flags plus the reduction (test_tested_flags.py).
TESTED_SHARED, _SHIPPED = shipped_flags(LEG)
TESTED_LEGS: dict[str, list[str]] = {LEG: reduce_leg_flags(_SHIPPED)}
MATRIX = RUN_TEMPLATE + leg_table(
    LEG, TESTED_LEGS[LEG], backend="cpu", os="linux", arch="arm64", runner="ubuntu-22.04-arm"
)


def _missing() -> str | None:
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        return f"a cross build from x86-64 (this machine is {platform.machine()})"
    for tool, package in (
        ("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"),
        ("aarch64-linux-gnu-g++", "g++-aarch64-linux-gnu"),
        ("qemu-aarch64", "qemu-user"),
    ):
        if shutil.which(tool) is None:
            return f"{tool} not found (Debian: {package})"
    return None if Path(SYSROOT).is_dir() else f"no aarch64 sysroot at {SYSROOT}"


def pipeline(
    args: list[str], *, cwd: Path, env: dict[str, str], check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **env},
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False)  # fmt: skip
    if check and proc.returncode != 0:
        raise AssertionError(
            f"pipeline {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr}"
        )
    return proc


@pytest.fixture(scope="module")
def arm64(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if (reason := _missing()) is not None:
        pytest.skip(f"the arm64 cross build needs {reason}")
    root = tmp_path_factory.mktemp("real-tree-arm64")
    forge = prepared_forge(root, young_at=NOW - timedelta(hours=2), pr_at=NOW - timedelta(hours=7))
    matrix = root / "matrix.toml"
    matrix.write_text(
        MATRIX.format(
            upstream=forge.upstream, min_age=6, pr_repo=PR_REPO, pr_number=PR_NUMBER, pr_sha=forge.pr_sha
        )
    )
    env = {
        "PIPELINE_GIT_URL_TEMPLATE": forge.template,
        "PIPELINE_CACHE_HOME": str(root / "cache-home"),
        **shared_jobs.build_env(),
    }  # the session's compile slots (tests/support/shared_jobs.py)
    ws = root / "ws"
    ws.mkdir()
    m = ["--matrix", str(matrix)]
    pipeline([*m, "resolve", "--write", "resolved.json", "--now", NOW.isoformat()], cwd=ws, env=env)
    made = json.loads(
        pipeline([*m, "source", "--resolved", "resolved.json", "--out", "out"], cwd=ws, env=env).stdout
    )
    build = pipeline(
        [
            *m,
            "build",
            LEG,
            "--resolved",
            "resolved.json",
            "--source-archive",
            made["path"],
            "--out",
            "out",
            "--ccache-dir",
            str(e2e_cache_root() / "ccache"),
        ],
        cwd=ws,
        env=env,
        check=False,
    )
    record = json.loads((ws / "out" / LEG / "record.json").read_text())
    assert build.returncode == 0, (
        f"{build.stdout[-4000:]}\n{build.stderr}\n{json.dumps(record.get('bundle_check'))}"
    )
    bundle = ws / "out" / record["bundle"]
    tree = ws / "out" / LEG / "src" / "llama.cpp"
    checked = pipeline(
        ["check-bundle", str(bundle), "--json", "--source-tree", str(tree)], cwd=ws, env={}, check=False
    )
    return {
        "ws": ws,
        "record": record,
        "bundle": bundle,
        "check": json.loads(checked.stdout),
        "check_rc": checked.returncode,
    }


def test_the_cross_compiler_builds_the_leg_and_is_its_toolchain_identity(arm64: dict[str, Any]) -> None:
    record = arm64["record"]
    assert record["status"] == "success" and record["arch"] == "arm64"
    version = subprocess.run(
        ["aarch64-linux-gnu-gcc", "-dumpfullversion"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert record["toolchain"]["identity"] == f"gcc-{version}-aarch64-linux-gnu"
    toolchain_file = [a for a in record["cmake_args"] if a.startswith("-DCMAKE_TOOLCHAIN_FILE=")]
    assert len(toolchain_file) == 1
    text = Path(toolchain_file[0].split("=", 1)[1]).read_text()
    assert "set(CMAKE_SYSTEM_PROCESSOR aarch64)" in text and shutil.which("aarch64-linux-gnu-g++") in text  # type: ignore[operator]
    # The shipped flags plus the reduction, in order.
    declared = [*TESTED_SHARED, *TESTED_LEGS[LEG]]
    args = record["cmake_args"]
    assert any(args[i : i + len(declared)] == declared for i in range(len(args))), args


def test_the_bundle_is_named_for_arm64_and_its_programs_are_aarch64(
    arm64: dict[str, Any], tmp_path: Path
) -> None:
    bundle: Path = arm64["bundle"]
    assert bundle.name.endswith("-bin-ubuntu-arm64.tar.gz")
    import tarfile

    with tarfile.open(bundle) as tar:
        tar.extractall(tmp_path, filter="tar")
    (top,) = tmp_path.iterdir()
    for program in REDUCED_PROGRAMS:
        # readelf (binutils), not the pipeline's reader: what the machine says the file is.
        header = subprocess.run(
            ["readelf", "-h", str(top / program)], capture_output=True, text=True, check=True
        ).stdout
        assert "AArch64" in header, header
        interp = subprocess.run(
            ["readelf", "-l", str(top / program)], capture_output=True, text=True, check=True
        ).stdout
        assert "/lib/ld-linux-aarch64.so.1" in interp


def test_check_bundle_runs_versions_tokenizer_and_forward_pass_under_qemu(arm64: dict[str, Any]) -> None:
    check = arm64["check"]
    assert arm64["check_rc"] == 0 and check["ok"], check["problems"]
    assert check["arch"] == "arm64"
    assert check["emulator"] == f"under qemu-aarch64 -L {SYSROOT}"
    status = {c["name"]: c["status"] for c in check["checks"]}
    assert status["versions"] == status["tokenizer"] == status["forward-pass"] == "passed", check["checks"]
    assert {r["program"] for r in check["smoke"]} >= set(REDUCED_PROGRAMS)
    # The build ran the same check on its bundle.
    assert arm64["record"]["bundle_check"]["emulator"] == check["emulator"]
