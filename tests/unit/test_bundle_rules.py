"""Pure rules of release-grade bundles: names, the base-system allowlist, kernel filtering, RUNPATHs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.backends import bundle_file_name, render_name, runtime_profile
from pipeline.bundle.closure_policy import is_base_system, is_origin_relative, keeps_data_file, origin_runpath
from pipeline.errors import ConfigError
from pipeline.inputs.matrix import load_matrix, parse_matrix
from pipeline.names import template_problem
from pipeline.report.bundle_lines import bundle_check_line

ROOT = Path(__file__).resolve().parents[2]


def test_project_legs_are_named_like_upstream_releases() -> None:
    legs = load_matrix(ROOT / "matrix.toml").legs
    names = {name: bundle_file_name(leg, "b6000") for name, leg in legs.items()}
    expected = {
        "cpu": "llama-b6000-bin-ubuntu-x64.tar.gz",
        "vulkan": "llama-b6000-bin-ubuntu-vulkan-x64.tar.gz",
        "cuda": "llama-b6000-bin-ubuntu-cuda-x64.tar.gz",
        "rocm-linux-gfx110X": "llama-b6000-bin-ubuntu-rocm-gfx110X-all-x64.tar.gz",
        "rocm-windows-gfx1151": "llama-b6000-bin-win-hip-gfx1151-x64.zip",
        # Upstream's arm64 and macOS assets: ...-bin-ubuntu-arm64, -bin-win-cpu-arm64, -bin-macos-arm64.
        "cpu-arm64": "llama-b6000-bin-ubuntu-arm64.tar.gz",
        "cpu-windows-arm64": "llama-b6000-bin-win-cpu-arm64.zip",
        "vulkan-arm64": "llama-b6000-bin-ubuntu-vulkan-arm64.tar.gz",
        "metal-macos-arm64": "llama-b6000-bin-macos-arm64.tar.gz",
        "cpu-macos-x64": "llama-b6000-bin-macos-x64.tar.gz",
    }
    assert {k: names[k] for k in expected} == expected
    # The glibc floor is the runner's: 2.35 on 22.04 and 22.04-arm, 2.39 on 24.04-arm.
    floors = {leg.runner: leg.glibc_max for leg in legs.values() if leg.os == "linux"}
    assert floors == {"ubuntu-22.04": "2.35", "ubuntu-22.04-arm": "2.35", "ubuntu-24.04-arm": "2.39"}


def test_a_leg_names_its_own_template() -> None:
    m = parse_matrix(
        {
            "legs": {
                "cpu": {"backend": "cpu", "bundle_name": "llama-{tag}-{leg}-{os_label}", "glibc_max": "2.31"}
            }
        },
        Path("m.toml"),
    )
    assert bundle_file_name(m.leg("cpu"), "b7") == "llama-b7-cpu-ubuntu.tar.gz"
    assert m.leg("cpu").glibc_max == "2.31"
    assert render_name(None, tag="b1", leg="x", backend="rocm", os_name="windows", family="gfx1151") == (
        "llama-b1-bin-win-hip-gfx1151-x64.zip"
    )


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("llama-bin-x64", "containing {tag}"),
        ("llama-{tag}-{cpu}", "not {cpu}"),
        ("llama-{tag}/x", "gives a file name"),
        ("llama-{tag", "a name template with {fields}"),
    ],
)
def test_bad_templates_are_refused_naming_the_key(template: str, expected: str) -> None:
    problem = template_problem(template)
    assert problem is not None and expected in problem
    with pytest.raises(ConfigError) as info:
        parse_matrix({"legs": {"cpu": {"backend": "cpu", "bundle_name": template}}}, Path("m.toml"))
    assert str(info.value).startswith("m.toml: legs.cpu.bundle_name: expected ")


def test_bad_glibc_floor_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"legs\.cpu\.glibc_max: expected a glibc version like '2\.35'"):
        parse_matrix({"legs": {"cpu": {"backend": "cpu", "glibc_max": "2.35.1"}}}, Path("m.toml"))


@pytest.mark.parametrize(
    ("os_name", "library", "allowed"),
    [
        ("linux", "libc.so.6", True),
        ("linux", "libstdc++.so.6", True),
        ("linux", "libvulkan.so.1", True),
        ("linux", "libcuda.so.1", True),
        ("linux", "libamdhip64.so.7", False),
        ("linux", "libcudart.so.13", False),
        ("linux", "LIBC.so.6", False),  # Linux names are exact
        # x64 rules by default: another architecture's loader is not this one's base system.
        ("linux", "ld-linux-x86-64.so.2", True),
        ("linux", "ld-linux-aarch64.so.1", False),
        ("windows", "KERNEL32.dll", True),
        ("windows", "api-ms-win-crt-runtime-l1-1-0.dll", True),
        ("windows", "amdhip64_7.dll", False),
        ("windows", "libc.so.6", False),
    ],
)
def test_base_system_allowlist(os_name: str, library: str, allowed: bool) -> None:
    assert is_base_system(os_name, library) is allowed


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("Kernels.so-000-gfx1100.hsaco", True),
        ("Kernels.so-000-gfx1030.hsaco", False),
        ("TensileLibrary_lazy_gfx1101.dat", True),
        ("TensileLibrary_fallback.dat", True),
        ("TensileLibrary_Type_HH_Contraction_gfx1030_gfx1100.co", True),
        ("TensileLibrary_GFX942.co", False),
    ],
)
def test_kernel_files_filtered_to_the_legs_targets(name: str, kept: bool) -> None:
    assert keeps_data_file(name, ("gfx1100", "gfx1101", "gfx1102", "gfx1103")) is kept


def test_origin_runpaths() -> None:
    assert origin_runpath("bin", set()) == "$ORIGIN"
    assert origin_runpath("bin", {"bin"}) == "$ORIGIN"
    assert origin_runpath("lib", {"bin", "lib"}) == "$ORIGIN:$ORIGIN/../bin"
    # The bundle's root ("", upstream's flat layout) and a data folder below it.
    assert origin_runpath("", {""}) == "$ORIGIN"
    assert origin_runpath("rocblas/library", {""}) == "$ORIGIN:$ORIGIN/../.."
    assert origin_runpath("", {"", "sub"}) == "$ORIGIN:$ORIGIN/sub"
    assert is_origin_relative("$ORIGIN/../lib") and is_origin_relative("${ORIGIN}")
    assert not is_origin_relative("/opt/rocm/lib") and not is_origin_relative("$ORIGINAL")
    assert not is_origin_relative("lib")


def test_profiles_declare_rocm_kernels_and_nothing_for_cpu() -> None:
    rocm = runtime_profile("rocm", "linux")
    assert "lib" in rocm.library_dirs
    # TheRock's kernel folders, then a Linux distribution's (Debian: below lib/<triplet>, versioned inside).
    assert [(f.source, f.dest) for f in rocm.data_folders] == [
        ("lib/rocblas/library", "rocblas/library"),
        ("lib/hipblaslt/library", "hipblaslt/library"),
        ("lib/x86_64-linux-gnu/rocblas", "rocblas"),
        ("lib/x86_64-linux-gnu/hipblaslt", "hipblaslt"),
    ]
    assert runtime_profile("cpu", "linux").library_dirs == ()


def test_report_line_of_a_bundle_check() -> None:
    assert bundle_check_line("cpu", None) is None
    assert bundle_check_line("cpu", {"ok": True, "summary": "check-bundle passed: 3 binaries"}) == (
        "cpu: check-bundle passed: 3 binaries"
    )
    failed = {
        "ok": False,
        "summary": "check-bundle failed (2 problems)",
        "problems": [{"file": "bin/x", "message": "needs liby.so.1: neither in the bundle"}, {}],
    }
    assert bundle_check_line("rocm", failed) == (
        "rocm: check-bundle failed (2 problems): bin/x: needs liby.so.1: neither in the bundle (and 1 more)"
    )


def test_report_renders_each_legs_bundle_check() -> None:
    from pipeline.report.formats import leg_rows, render_markdown
    from pipeline.results.record import LegRecord

    ok = LegRecord(
        leg="cpu",
        backend="cpu",
        os="linux",
        started="2026-01-01T00:00:00+00:00",
        bundle_check={"ok": True, "summary": "check-bundle passed: 4 binaries", "problems": []},
    )
    bad = LegRecord(
        leg="vulkan",
        backend="vulkan",
        os="linux",
        started="2026-01-01T00:00:00+00:00",
        bundle_check={
            "ok": False,
            "summary": "check-bundle failed (1 problems)",
            "problems": [{"file": "LICENSE", "message": "missing"}],
        },
    )
    none = LegRecord(leg="cuda", backend="cuda", os="linux", started="2026-01-01T00:00:00+00:00")
    text = render_markdown(leg_rows([ok, bad, none], {}, 0.9), threshold=0.9)
    assert text.endswith(
        "**Bundle checks:**\n\n- cpu: check-bundle passed: 4 binaries\n"
        "- vulkan: check-bundle failed (1 problems): LICENSE: missing\n"
    )
