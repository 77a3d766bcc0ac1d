"""The GPU check (python -m scripts.gpu_check) --backend rocm run as gpu_check.sh runs it, on this machine (no AMD GPU): its refusals.

Each is one line and an exit code of its own (3: the machine or the target
cannot be checked; 2: bad arguments), before anything is unpacked. The
parsing, the leg choice and the matrix are in tests/unit/test_gpu_check.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.gpu_check import rocm as gpu_check_rocm

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(Path("/dev/kfd").exists(), reason="this machine has an AMD GPU")
def test_the_real_rocminfo_here_finds_no_amd_gpu(tmp_path: Path) -> None:
    if shutil.which("rocminfo") is None:
        pytest.skip("no rocminfo on PATH (.ci/run's hipcc brings Debian's)")
    with pytest.raises(gpu_check_rocm.Unfit) as err:
        gpu_check_rocm.machine_targets(tmp_path)
    assert str(err.value).startswith("no AMD GPU on this machine: ")
    assert "rocminfo (exit 1): ROCk module is NOT loaded, possibly no GPU devices" in str(err.value)


def _run(*args: str, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path}
    # From the repository root, as gpu_check.sh runs it.
    return subprocess.run([sys.executable, "-m", "scripts.gpu_check", *args], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=120, check=False)  # fmt: skip


def test_the_script_refuses_a_target_without_a_leg_in_one_line_exit_3(tmp_path: Path) -> None:
    ran = _run("--backend", "rocm", "--dry-run", "--target", "gfx942", path=str(tmp_path))
    assert ran.returncode == 3, ran.stderr
    (line,) = ran.stdout.splitlines()
    assert line.startswith("gpu-check: error: no shipped Linux rocm leg of matrix.toml builds gfx942 (")


def test_the_script_without_an_amd_gpu_or_its_tools_says_so_and_how_to_dry_run(tmp_path: Path) -> None:
    ran = _run("--backend", "rocm", "--dry-run", "--rocm-path", str(tmp_path / "rocm"), path=str(tmp_path))
    assert ran.returncode == 3, ran.stderr
    (line,) = ran.stdout.splitlines()
    assert line.startswith(f"gpu-check: error: no amdgpu-arch or rocminfo in {tmp_path / 'rocm'} (")
    assert line.endswith("(a dry run without an AMD GPU takes --target gfxNNNN)")


@pytest.mark.parametrize(
    "args",
    [
        ["--backend", "rocm", "--target", "gfx1100"],
        ["--target", "gfx1100", "--dry-run"],
        ["--backend", "rocm", "--dry-run", "--target", "1100"],
    ],
)
def test_target_is_for_a_rocm_dry_run_only_and_a_gfx_name(tmp_path: Path, args: list[str]) -> None:
    ran = _run(*args, path=str(tmp_path))
    assert ran.returncode == 2
    assert ran.stderr.splitlines()[-1].startswith("gpu_check.sh: error: ")
    assert ran.stdout == ""
