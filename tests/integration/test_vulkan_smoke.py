"""The smoke run's GPU side on this machine's real Vulkan: lavapipe as the device, or no driver at all.

The module is a real Vulkan client (tests/support/gpu_bundle.py: an
instance through the system's loader, its physical devices), the program
logs as ggml and llama.cpp do. With Mesa's lavapipe (Debian's
mesa-vulkan-drivers) the GPU forward pass runs on the Vulkan device and
says so; with ``VK_ICD_FILENAMES`` at nothing there is no driver: the check
is skipped saying "no Vulkan device", and nothing blames a library.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.bundle.smoke import (
    FAILED,
    PASSED,
    SKIPPED,
    backends_check,
    forward_pass_check,
    gpu_forward_pass_check,
    smoke_checks,
)
from pipeline.bundle.smoke_process import scrubbed_env
from scripts.workload.llama_sdist import cached_sdist, missing_reason
from tests.support.gpu_bundle import LOG_FORMATS, write_vulkan_bundle_root
from tests.support.tree_files import tree_texts

pytestmark = pytest.mark.integration

LAVAPIPE = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
needs_lavapipe = pytest.mark.skipif(
    not LAVAPIPE.is_file(), reason=f"no lavapipe ICD ({LAVAPIPE}): install mesa-vulkan-drivers"
)


def test_the_stand_in_logs_with_ggmls_own_formats() -> None:
    sdist = cached_sdist()
    if sdist is None:
        pytest.skip(missing_reason())
    files = tree_texts(sdist, lambda p: str(p) in {f for f, _ in LOG_FORMATS})
    for name, fmt in LOG_FORMATS:
        assert fmt in files[name], f"{name} no longer logs {fmt}"


@needs_lavapipe
def test_with_lavapipe_the_gpu_forward_pass_runs_on_the_vulkan_backend(tmp_path: Path) -> None:
    root = write_vulkan_bundle_root(tmp_path / "bundle")
    drivers = {"VK_ICD_FILENAMES": str(LAVAPIPE)}
    gpu = gpu_forward_pass_check(root, "linux", tmp_path / "home", drivers)
    assert gpu is not None and gpu.status == PASSED, gpu
    # lavapipe's device is llvmpipe (LLVM <version>, <n> bits), whatever Mesa's version; ggml-vulkan takes a
    # CPU device only when GGML_VK_VISIBLE_DEVICES names it, which the check does when there is no other.
    assert gpu.line.startswith("gpu-forward-pass: llama-simple decoded 4 tokens on Vulkan0 (llvmpipe (LLVM ")
    assert gpu.line.endswith(
        " bits)), a CPU Vulkan device (GGML_VK_VISIBLE_DEVICES=0), the Vulkan backend (libggml-vulkan.so)"
    )
    backends = backends_check(root, "linux", tmp_path / "home", backend_dl=True, driver_env=drivers)
    assert backends.status == PASSED and "Vulkan (libggml-vulkan.so)" in backends.line
    # The CPU forward pass stays on the CPU (no layer offloaded).
    cpu = forward_pass_check(root, "linux", tmp_path / "home", drivers)
    assert cpu.status == PASSED and cpu.line.endswith("on libggml-cpu.so")


@needs_lavapipe
def test_lavapipe_alone_is_no_device_for_ggml_vulkan_unless_named(tmp_path: Path) -> None:
    """Without the retry's variable, lavapipe is passed over (as ggml-vulkan's default choice does)."""
    root = write_vulkan_bundle_root(tmp_path / "bundle")
    env = scrubbed_env(tmp_path, {"VK_ICD_FILENAMES": str(LAVAPIPE)})
    ran = subprocess.run(
        [str(root / "llama-simple"), "-m", "x", "-ngl", "99"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "ggml_vulkan: No devices found." in ran.stderr and "using device" not in ran.stderr
    named = subprocess.run(
        [str(root / "llama-simple"), "-m", "x", "-ngl", "99"],
        capture_output=True,
        text=True,
        env={**env, "GGML_VK_VISIBLE_DEVICES": "0"},
        check=True,
    )
    assert "using device Vulkan0 (llvmpipe" in named.stderr


def test_without_a_vulkan_driver_the_gpu_check_is_a_skip_that_says_no_device(tmp_path: Path) -> None:
    root = write_vulkan_bundle_root(tmp_path / "bundle")
    drivers = {"VK_ICD_FILENAMES": str(tmp_path / "no-such-icd.json")}
    gpu = gpu_forward_pass_check(root, "linux", tmp_path / "home", drivers)
    assert gpu is not None and gpu.status == SKIPPED
    assert gpu.line == (
        "gpu-forward-pass: skipped: no GPU here: no Vulkan device: libggml-vulkan.so loaded, and its "
        "ggml_backend_init found no Vulkan driver (ICD) or device"
    )
    backends = backends_check(root, "linux", tmp_path / "home", backend_dl=True, driver_env=drivers)
    assert backends.status == PASSED, backends.line
    assert backends.line.startswith(
        "backends: llama-simple loaded CPU (libggml-cpu.so), "
        "Vulkan (libggml-vulkan.so) loaded but found no device; "
    )
    for line in (gpu.line, backends.line):
        assert "missing" not in line and "library" not in line


def test_the_smoke_run_keeps_the_machines_driver_selection(tmp_path: Path) -> None:
    root = write_vulkan_bundle_root(tmp_path / "bundle")
    env = scrubbed_env(tmp_path, {"VK_ICD_FILENAMES": "/x.json"})
    assert env["VK_ICD_FILENAMES"] == "/x.json" and env["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    _, checks = smoke_checks(
        root,
        "linux",
        tmp_path / "home",
        models=None,
        backend_dl=True,
        driver_env={"VK_ICD_FILENAMES": str(tmp_path / "none.json")},
    )
    assert [c.name for c in checks] == [
        "versions",
        "backends",
        "tokenizer",
        "forward-pass",
        "gpu-forward-pass",
    ]
    assert checks[-1].status == SKIPPED and all(c.ok for c in checks)


def test_the_backends_and_forward_pass_checks_read_one_run_of_llama_simple(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ggml loads every module when the program starts: the CPU forward pass's log says which loaded, so
    llama-simple starts once for both checks (and its --version once), not once per check."""
    from pipeline.bundle import smoke

    root = write_vulkan_bundle_root(tmp_path / "bundle", vulkan_module=False)
    started: list[tuple[str, ...]] = []
    real = smoke.run_program

    def counting(root: Path, program: str, args: Any, *rest: Any) -> Any:
        started.append((program, *(a for a in args if not a.endswith(".gguf"))))
        return real(root, program, args, *rest)

    monkeypatch.setattr(smoke, "run_program", counting)
    _, checks = smoke_checks(root, "linux", tmp_path / "home", models=None, backend_dl=True)
    assert {c.name: c.status for c in checks} == {
        "versions": PASSED,
        "backends": PASSED,
        "tokenizer": SKIPPED,
        "forward-pass": PASSED,
    }, checks
    assert checks[1].line.startswith("backends: llama-simple loaded CPU (libggml-cpu.so)")
    assert (
        checks[3].line == "forward-pass: llama-simple decoded 4 tokens with a tiny random-weight llama model "
        "on libggml-cpu.so"
    )
    assert started == [
        ("llama-simple", "--version"),
        ("llama-simple", "-m", "-n", "4", "-ngl", "0", "Hello world"),
    ]


def test_a_module_that_does_not_load_still_fails_the_backends_check(tmp_path: Path) -> None:
    """The other case, unchanged: a library the module needs is missing (here: the module is not an ELF file)."""
    root = write_vulkan_bundle_root(tmp_path / "bundle")
    (root / "libggml-vulkan.so").write_bytes(b"not a shared object")
    backends = backends_check(root, "linux", tmp_path / "home", backend_dl=True)
    assert backends.status == FAILED
    assert backends.line.startswith("backends: libggml-vulkan.so did not load in llama-simple")
    gpu = gpu_forward_pass_check(root, "linux", tmp_path / "home")
    assert gpu is not None and gpu.status == SKIPPED
    assert (
        gpu.line == "gpu-forward-pass: skipped: libggml-vulkan.so did not load (the backends check says why)"
    )


def test_a_cpu_only_bundle_has_no_gpu_check(tmp_path: Path) -> None:
    root = write_vulkan_bundle_root(tmp_path / "bundle", vulkan_module=False)
    # The cpu leg ships the RPC client beside the CPU backend: not a GPU.
    (root / "libggml-rpc.so").write_bytes((root / "libggml-cpu.so").read_bytes())
    assert gpu_forward_pass_check(root, "linux", tmp_path / "home") is None
