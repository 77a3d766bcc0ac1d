"""The whole release in one matrix: arch in every leg, 39 legs, CUDA lines and profiles, ROCm families.

Expected values are the release job's fact sheet (its builds, runners and
architectures, as the issue's table gives them) and upstream's asset names.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pipeline.actions_cache.cache_keys import cache_key, restore_prefix
from pipeline.backends import leg_description, leg_toolkit
from pipeline.bundle.closure_policy import is_base_system
from pipeline.bundle.emulation import how_to_run
from pipeline.errors import ConfigError
from pipeline.inputs.matrix import load_matrix, parse_matrix
from pipeline.inputs.pins import parse_toolchain_pins
from pipeline.toolchain.cross import CROSS_TARGETS, cross_problem, cross_target, toolchain_file_text

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = load_matrix(ROOT / "matrix.toml")
P = Path("m.toml")


def _legs(**legs: dict[str, Any]) -> dict[str, Any]:
    return {"legs": legs}


def test_the_matrix_declares_the_39_builds_of_the_release() -> None:
    legs = SHIPPED.declared_legs
    # Every one built: the Windows arm64 CUDA leg too (its own 13.4 toolkit and a base build).
    assert len(legs) == len(SHIPPED.legs) == 39
    by = Counter((leg.backend, leg.os, leg.arch) for leg in legs)
    assert by == {
        ("rocm", "linux", "x64"): 7, ("rocm", "windows", "x64"): 7,
        ("cuda", "linux", "x64"): 7, ("cuda", "linux", "arm64"): 1, ("cuda", "windows", "x64"): 7,
        ("cuda", "windows", "arm64"): 1,
        ("cpu", "linux", "x64"): 1, ("cpu", "linux", "arm64"): 1, ("cpu", "windows", "x64"): 1,
        ("cpu", "windows", "arm64"): 1,
        ("vulkan", "linux", "x64"): 1, ("vulkan", "linux", "arm64"): 1, ("vulkan", "windows", "x64"): 1,
        ("metal", "macos", "arm64"): 1, ("cpu", "macos", "x64"): 1,
    }  # fmt: skip
    # The ROCm families, each on both OSes (the job's seven: its fact sheet).
    families = sorted({leg.name.rsplit("-", 1)[1] for leg in legs if leg.backend == "rocm"})
    assert families == sorted(["gfx1151", "gfx1150", "gfx120X", "gfx110X", "gfx103X", "gfx90a", "gfx908"])
    assert SHIPPED.leg("rocm-windows-gfx103X").targets == ("gfx1030", "gfx1031", "gfx1032", "gfx1034")
    assert SHIPPED.leg("rocm-linux-gfx120X").family == "gfx120X-all"


def test_runners_are_the_release_jobs() -> None:
    runners = {(leg.os, leg.arch, leg.backend): leg.runner for leg in SHIPPED.legs.values()}
    assert runners[("linux", "arm64", "cpu")] == runners[("linux", "arm64", "vulkan")] == "ubuntu-22.04-arm"
    assert runners[("linux", "arm64", "cuda")] == "ubuntu-24.04-arm"
    assert runners[("macos", "arm64", "metal")] == "macos-26"
    assert runners[("macos", "x64", "cpu")] == "macos-15-intel"
    # Windows arm64 is cross-compiled on the x64 runner.
    assert runners[("windows", "arm64", "cpu")] == "windows-2022"
    assert SHIPPED.leg("cuda-13-portable-arm64").glibc_max == "2.39"
    assert SHIPPED.leg("cpu-arm64").glibc_max == "2.35"


def test_cuda_profiles_are_the_jobs_architectures() -> None:
    archs = {leg.name: leg.cuda_architectures for leg in SHIPPED.declared_legs if leg.backend == "cuda"}
    assert archs["cuda-12.8-legacy"] == ("50-virtual", "61-virtual")
    assert archs["cuda-12.8-older"] == ("70", "75", "80", "86", "89")
    assert archs["cuda-12.8-portable"] == ("70", "75", "80", "86", "89", "90", "100", "120")
    assert archs["cuda-13-older"] == ("75", "80", "86", "89")
    assert archs["cuda"] == archs["cuda-windows-13-portable"] == ("75", "80", "86", "89", "90", "100", "120")
    assert archs["cuda-13-portable-arm64"] == ("90", "100", "120", "121")
    # Windows on Arm: Blackwell only (GB10's 121, RTX 50's 120), the reference's choice; its own CUDA 13.4.
    assert archs["cuda-windows-13-portable-arm64"] == ("120", "121")
    assert leg_toolkit(SHIPPED, SHIPPED.leg("cuda-windows-13-portable-arm64")) == "CUDA 13.4.59"
    # The seven x64 builds of each OS share two toolchains: one per line.
    for os_name in ("linux", "windows"):
        x64 = [
            leg
            for leg in SHIPPED.declared_legs
            if (leg.backend, leg.os, leg.arch) == ("cuda", os_name, "x64")
        ]
        assert Counter(leg_toolkit(SHIPPED, leg) for leg in x64) == {"CUDA 12.8.93": 4, "CUDA 13.2.86": 3}


def test_bundle_names_and_cache_keys_are_unique() -> None:
    rows = [leg_description(SHIPPED, leg, tag="b1234") for leg in SHIPPED.declared_legs]
    bundles = [r["bundle"] for r in rows]
    assert len(set(bundles)) == 39
    for row in rows:
        if row["name"] == "cuda-windows-13-portable-arm64":
            # Declared with the reference release's own name for it.
            assert row["bundle"] == "app-b1234-windows-arm64-cuda13-portable.zip"
            continue
        assert row["bundle"].startswith("llama-b1234-bin-") and f"-{row['arch']}." in row["bundle"]
    keys = {r["name"]: cache_key(r["name"], "gcc-12.2.0", "b1234") for r in rows}
    assert len(set(keys.values())) == 39
    # No leg's restore prefix restores another leg's caches (cpu never restores cpu-arm64's).
    for a in keys:
        prefix = restore_prefix(a, "gcc-12.2.0")
        assert [b for b, key in keys.items() if key.startswith(prefix)] == [a]


def test_arch_defaults_to_x64_and_is_checked() -> None:
    m = parse_matrix(_legs(cpu={"backend": "cpu"}), P)
    assert (m.leg("cpu").arch, m.leg("cpu").runner, m.leg("cpu").glibc_max) == ("x64", "ubuntu-22.04", "2.35")
    with pytest.raises(ConfigError, match=r"legs\.cpu\.arch: expected one of 'x64', 'arm64', got 'aarch64'"):
        parse_matrix(_legs(cpu={"backend": "cpu", "arch": "aarch64"}), P)
    m = parse_matrix(
        _legs(
            a={"backend": "cpu", "arch": "arm64"},
            b={"backend": "cpu", "arch": "arm64", "runner": "ubuntu-24.04-arm"},
        ),
        P,
    )
    assert (m.leg("a").runner, m.leg("a").glibc_max, m.leg("b").glibc_max) == (
        "ubuntu-22.04-arm",
        "2.35",
        "2.39",
    )


@pytest.mark.parametrize(
    ("leg", "message"),
    [
        (
            {"backend": "rocm", "os": "linux", "arch": "arm64", "family": "gfx1151", "targets": ["gfx1151"]},
            "a rocm leg builds for linux or windows on x64",
        ),
        (
            {"backend": "rocm", "os": "macos", "family": "gfx1151", "targets": ["gfx1151"]},
            "a rocm leg builds for linux or windows on x64",
        ),
        ({"backend": "metal", "os": "linux"}, "a metal leg builds for macos on arm64"),
        ({"backend": "vulkan", "os": "macos", "arch": "arm64"}, "a macos leg is a metal or cpu leg"),
        ({"backend": "cuda", "cuda_profile": "portible"}, r"no profile 'portible' in \[cuda_profiles\.13\]"),
        ({"backend": "cuda", "cuda_profile": "portable", "cuda_architectures": ["86"]}, "keep one"),
        ({"backend": "cpu", "cuda_line": "12"}, "only a cuda leg takes cuda_line"),
        ({"backend": "rocm", "gpu_family": "gfx1100"}, r"no \[rocm_families\.gfx1100\]"),
    ],
)
def test_legs_that_cannot_exist_are_refused_naming_the_leg(leg: dict[str, Any], message: str) -> None:
    data = {
        "cuda_profiles": {"13": {"portable": ["75"]}},
        "rocm_families": {"gfx110X": {"therock": "gfx110X-all", "targets": ["gfx1100"]}},
        **_legs(x=leg),
    }
    with pytest.raises(ConfigError, match=message) as err:
        parse_matrix(data, P)
    assert "legs.x" in str(err.value)


def test_a_family_of_the_table_fills_the_legs_family_and_targets() -> None:
    m = parse_matrix(
        {
            "rocm_families": {"gfx110X": {"therock": "gfx110X-all", "targets": ["gfx1100", "gfx1101"]}},
            **_legs(r={"backend": "rocm", "gpu_family": "gfx110X"}),
        },
        P,
    )
    assert (m.leg("r").family, m.leg("r").targets) == ("gfx110X-all", ("gfx1100", "gfx1101"))


SHA = "a" * 64
SHA_ARM = "b" * 64


def test_cuda_lines_and_the_arm64_wheels() -> None:
    pins = parse_toolchain_pins(
        {
            "cuda": {
                "version": "13.2.86",
                "wheels": [
                    {
                        "name": "nvidia-cuda-nvcc",
                        "version": "13.2.86",
                        "sha256": {"linux": SHA, "linux-aarch64": SHA_ARM},
                    }
                ],
            },
            "cuda-12": {"version": "12.8.93"},
        },
        P,
    )
    assert pins.cuda_for(None) is pins.cuda_for("13") is pins.cuda
    line12 = pins.cuda_for("12")
    assert line12 is not None and line12.version == "12.8.93" and line12.wheels_for("linux") == ()
    arm = pins.for_leg(None, "arm64").cuda
    assert arm is not None and [sha for _, sha in arm.wheels_for("linux")] == [SHA_ARM]
    x64 = pins.for_leg(None, "x64").cuda
    assert x64 is not None and [sha for _, sha in x64.wheels_for("linux")] == [SHA]
    # LunarG's pinned SDK archives are x86-64 ones: an arm64 leg uses the runner's Vulkan.
    assert SHIPPED.toolchains.for_leg(None, "arm64").vulkan == {}
    assert leg_toolkit(SHIPPED, SHIPPED.leg("vulkan-arm64")) == "Vulkan SDK (system)"
    assert leg_toolkit(SHIPPED, SHIPPED.leg("vulkan")) == "Vulkan SDK 1.4.357.1"
    with pytest.raises(ConfigError, match=r"toolchains\.cuda-12\.version: expected a CUDA 12\.x version"):
        parse_toolchain_pins({"cuda-12": {"version": "13.0.1"}}, P)


@pytest.mark.parametrize(
    ("arch", "library", "allowed"),
    [
        ("arm64", "ld-linux-aarch64.so.1", True),
        ("arm64", "ld-linux-x86-64.so.2", False),
        ("arm64", "libmvec.so.1", False),
        ("x64", "libmvec.so.1", True),
        ("arm64", "libstdc++.so.6", True),
        ("arm64", "libgomp.so.1", True),
    ],
)
def test_linux_base_system_per_arch(arch: str, library: str, allowed: bool) -> None:
    assert is_base_system("linux", library, arch) is allowed


@pytest.mark.parametrize(
    ("library", "allowed"),
    [
        ("/usr/lib/libSystem.B.dylib", True),
        ("/usr/lib/libc++.1.dylib", True),
        ("/System/Library/Frameworks/Metal.framework/Versions/A/Metal", True),
        ("@rpath/libggml.dylib", False),
        ("/opt/homebrew/lib/libomp.dylib", False),
        ("/usr/local/lib/libcurl.4.dylib", False),
    ],
)
def test_macos_base_system_is_usr_lib_and_system_library(library: str, allowed: bool) -> None:
    assert is_base_system("macos", library, "arm64") is allowed


def test_how_an_arm64_bundle_runs_on_x86_64() -> None:
    def which(name: str) -> str | None:
        return f"/usr/bin/{name}"

    run = how_to_run("linux", "arm64", host_os="linux", host="x64", which=which, is_dir=lambda _p: True)
    assert run.prefix == ("/usr/bin/qemu-aarch64", "-L", "/usr/aarch64-linux-gnu") and run.skipped is None
    assert how_to_run("linux", "x64", host_os="linux", host="x64", which=which).prefix == ()
    missing = how_to_run("linux", "arm64", host_os="linux", host="x64", which=lambda _n: None)
    assert missing.skipped == "a arm64 bundle on an x64 machine without qemu-aarch64 (Debian: qemu-user)"
    mac = how_to_run("macos", "arm64", host_os="linux", host="x64", which=which)
    assert mac.skipped == "a macos bundle on a linux machine"


def test_the_cross_toolchain_file() -> None:
    leg = SHIPPED.leg("cpu-arm64")
    target = cross_target(leg, host_os="linux", host="x64")
    assert target == CROSS_TARGETS[("linux", "arm64")]
    assert cross_target(leg, host_os="linux", host="arm64") is None
    text = toolchain_file_text(
        target, Path("/usr/bin/aarch64-linux-gnu-gcc"), Path("/usr/bin/aarch64-linux-gnu-g++")
    )
    for line in (
        "set(CMAKE_SYSTEM_NAME Linux)",
        "set(CMAKE_SYSTEM_PROCESSOR aarch64)",
        'set(CMAKE_CXX_COMPILER "/usr/bin/aarch64-linux-gnu-g++")',
        'set(CMAKE_FIND_ROOT_PATH "/usr/aarch64-linux-gnu")',
        "set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)",
    ):
        assert line in text.splitlines()


def test_only_declared_cross_builds_run_on_another_arch() -> None:
    assert cross_problem(SHIPPED.leg("cpu-arm64"), host_os="linux", host="x64") is None
    assert cross_problem(SHIPPED.leg("cpu-windows-arm64"), host_os="windows", host="x64") is None
    # Windows arm64 CUDA: MSVC's amd64_arm64 tools and the tree's toolchain file, from an x64 Windows machine only.
    arm_cuda = SHIPPED.leg("cuda-windows-13-portable-arm64")
    assert cross_problem(arm_cuda, host_os="windows", host="x64") is None
    assert cross_problem(arm_cuda, host_os="windows", host="arm64") is None  # native
    problem = cross_problem(SHIPPED.leg("vulkan-arm64"), host_os="linux", host="x64")
    assert problem == "leg vulkan-arm64 (vulkan) builds for arm64 on an arm64 runner: this machine is x64"


def test_macos_legs_target_the_legs_macos_min() -> None:
    for name in ("metal-macos-arm64", "cpu-macos-x64"):
        leg = SHIPPED.leg(name)
        assert leg.macos_min == "13.3"
        assert f"-DCMAKE_OSX_DEPLOYMENT_TARGET={leg.macos_min}" in leg.cmake_args
    assert "-DGGML_METAL_EMBED_LIBRARY=ON" in SHIPPED.leg("metal-macos-arm64").cmake_args
    assert "-DGGML_METAL=OFF" in SHIPPED.leg("cpu-macos-x64").cmake_args


def _configure(leg_name: str, toolchain_args: tuple[str, ...] = ()) -> dict[str, str]:
    """The leg's configure line as the pipeline builds it on a Windows runner, as -D name -> value (the last wins)."""
    from pipeline.ccache.session import CcacheSetup
    from pipeline.leg.steps import cmake_arguments
    from pipeline.toolchain.toolchain import Toolchain

    ws = Path("C:/a/ws")
    ccache = CcacheSetup(
        executable=ws / "venv/Scripts/ccache.exe",
        version="4.14.2",
        ccache_dir=ws / "ccache",
        base_dir=ws / "out",
        compiler_check="content",
        max_size="5G",
        stats_log=ws / "stats.log",
    )
    toolchain = Toolchain(kind="clang", identity="clang-19", cmake_args=toolchain_args)
    args = cmake_arguments(
        SHIPPED, SHIPPED.leg(leg_name), toolchain, ccache, ws / "out/src/llama.cpp", ws / "out/build"
    )
    values: dict[str, str] = {}
    for arg in args:
        if arg.startswith("-D") and "=" in arg:
            name, value = arg[2:].split("=", 1)
            values[name.split(":", 1)[0]] = value
    return values


# What the release job passes on Windows (upstream release.yml's windows-cpu job, with the arch's
# llama.cpp toolchain file; the other legs add their backend), as -D values.
JOB_WINDOWS_CPU = {"GGML_NATIVE": "OFF", "GGML_BACKEND_DL": "ON", "GGML_OPENMP": "ON"}


@pytest.mark.parametrize(
    ("leg", "arch", "variants"), [("cpu-windows", "x64", "ON"), ("cpu-windows-arm64", "arm64", "OFF")]
)
def test_windows_cpu_configure_lines_are_the_jobs(leg: str, arch: str, variants: str) -> None:
    values = _configure(leg)
    expected = {
        **JOB_WINDOWS_CPU,
        "CMAKE_TOOLCHAIN_FILE": f"cmake/{arch}-windows-llvm.cmake",
        "GGML_CPU_ALL_VARIANTS": variants,
    }
    assert {k: values.get(k) for k in expected} == expected
    # The bundle is a shared-library one, as upstream's zip: programs beside ggml's DLLs.
    assert values["BUILD_SHARED_LIBS"] == "ON"


def test_windows_gpu_configure_lines_add_their_backend() -> None:
    vulkan = _configure("vulkan-windows")
    assert (vulkan["GGML_VULKAN"], vulkan["GGML_BACKEND_DL"], vulkan["GGML_NATIVE"]) == ("ON", "ON", "OFF")
    from pipeline.toolchain.cuda_nvcc import cuda_cmake_args

    leg = SHIPPED.leg("cuda-windows-13-older")
    nvcc = Path("C:/t/cuda/bin/nvcc.exe")
    cuda = _configure(leg.name, cuda_cmake_args(nvcc, Path("C:/msvc/cl.exe"), leg.cuda_architectures))
    assert cuda["GGML_CUDA"] == "ON" and cuda["CMAKE_CUDA_ARCHITECTURES"] == "75;80;86;89"
    assert cuda["CMAKE_CUDA_COMPILER"] == "C:/t/cuda/bin/nvcc.exe"


def test_the_docs_leg_table_is_legs_json() -> None:
    text = (ROOT / "docs" / "whole-release.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if re.match(r"^\| \d+ \| `", line)]
    expected = []
    for i, leg in enumerate(SHIPPED.declared_legs, 1):
        r = leg_description(SHIPPED, leg, tag="b1234")
        targets = " ".join(r["targets"]) or "-"
        expected.append(
            f"| {i} | `{r['name']}` | {r['backend']} | {r['os']} / {r['arch']} | {r['runner']} | {targets} | "
            f"{r['toolkit']} | `{r['bundle']}` |"
        )
    assert rows == expected
    assert "have not run on\n> Windows or macOS" in text


def test_the_pages_counts_are_what_legs_json_says() -> None:
    """The page counts what `legs --json` lists and what is built of it, not a number of bundles that drifts."""
    prose = " ".join((ROOT / "docs" / "whole-release.md").read_text(encoding="utf-8").split())
    described = [leg_description(SHIPPED, leg, tag="b1234") for leg in SHIPPED.declared_legs]
    built = [d for d in described if d["disabled"] is None]
    declared = re.search(r"declares every build of the nightly release: (\d+) legs", prose)
    assert declared is not None and int(declared.group(1)) == len(described)
    builds = re.search(r"So a nightly builds (\d+) legs", prose)
    assert builds is not None and int(builds.group(1)) == len(built) <= len(described)
    entries = re.search(r"`python -m pipeline matrix --github` lists (\d+) entries", prose)
    assert entries is not None and int(entries.group(1)) == len(built)
    # The bundles shipped are the built legs': the page says so rather than counting them with the disabled.
    assert "ships one bundle per leg it builds, and none for a disabled leg" in prose
    assert all(int(n) == len(built) for n in re.findall(r"(\d+) bundles", prose))


def test_reproduce_refuses_a_bundle_of_another_arch_than_the_legs() -> None:
    from pipeline.errors import BundleError
    from pipeline.leg.reproduce import manifest_leg

    # Manifests from before legs had an arch were x64 bundles.
    assert (
        manifest_leg(
            {"leg": {"name": "cpu", "backend": "cpu", "os": "linux", "family": None}}, SHIPPED, "m"
        ).name
        == "cpu"
    )
    arm = {"leg": {"name": "cpu-arm64", "backend": "cpu", "os": "linux", "arch": "arm64", "family": None}}
    assert manifest_leg(arm, SHIPPED, "m").arch == "arm64"
    with pytest.raises(
        BundleError, match=r"m: leg 'cpu' was a arch 'arm64' leg, .*matrix\.toml now says 'x64'"
    ):
        manifest_leg({"leg": {**arm["leg"], "name": "cpu"}}, SHIPPED, "m")


def test_the_workflow_runs_every_leg_on_its_runner_through_the_same_nox_session() -> None:
    import yaml

    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "nightly.yml").read_text(encoding="utf-8"))
    build = flow["jobs"]["build"]
    # One job per matrix entry (one per leg), on the leg's runner, Linux, Windows or macOS alike.
    assert build["runs-on"] == "${{ matrix.runner }}"
    assert build["strategy"]["matrix"] == "${{ fromJSON(needs.resolve.outputs.matrix) }}"
    # bash on every OS (a Windows runner's default shell is PowerShell), and the leg's own nox session.
    assert build["defaults"]["run"]["shell"] == "bash"
    runs = [step.get("run", "") for step in build["steps"]]
    assert any(r.startswith('nox --no-venv -s "$LEG"') for r in runs)
    # The publish job downloads the source archive (a release asset too) through the setup action.
    publish = flow["jobs"]["publish"]["steps"]
    downloads = [str((s.get("with") or {}).get("download", "")) for s in publish]
    assert any("source" in d.split() for d in downloads)


def test_the_nightly_session_and_the_build_share_one_cross_build_rule() -> None:
    """Before, the noxfile let a cpu leg of any arch cross-build on Linux; the build allows CROSS_TARGETS only."""
    import dataclasses

    import noxfile
    from pipeline.toolchain.cross import cross_problem

    riscv = dataclasses.replace(SHIPPED.leg("cpu-arm64"), name="cpu-riscv64", arch="riscv64")
    for leg in (riscv, SHIPPED.leg("cpu-arm64"), SHIPPED.leg("vulkan-arm64")):
        if leg.os == noxfile.HOST_OS:
            assert noxfile.builds_here(leg) == cross_problem(
                leg, host_os=noxfile.HOST_OS, host=noxfile.HOST_ARCH
            )


def test_the_nightly_session_builds_what_this_machine_can() -> None:
    import noxfile

    reasons = {name: noxfile.builds_here(leg) for name, leg in SHIPPED.legs.items()}
    if (noxfile.HOST_OS, noxfile.HOST_ARCH) != ("linux", "x64"):
        pytest.skip(
            f"the expectations are a Linux x64 machine's, this one is {noxfile.HOST_OS}/{noxfile.HOST_ARCH}"
        )
    assert reasons["cpu"] is None and reasons["cpu-arm64"] is None  # cross-built here
    assert (
        reasons["vulkan-arm64"]
        == "leg vulkan-arm64 (vulkan) builds for arm64 on an arm64 runner: this machine is x64"
    )
    assert reasons["metal-macos-arm64"] == "it builds on macos, this machine runs linux"
    # Every Linux x64 leg that is built (7 ROCm, the 3 CUDA 13 and 4 CUDA 12.8 ones, vulkan, cpu) and the
    # cross-built cpu-arm64.
    built = {name for name, reason in reasons.items() if reason is None}
    linux_x64 = {n for n, leg in SHIPPED.legs.items() if (leg.os, leg.arch) == ("linux", "x64")}
    assert len(linux_x64) == 16 and built == linux_x64 | {"cpu-arm64"}


def test_the_13x_wheels_are_pinned_for_the_arm64_runner_too() -> None:
    pins = SHIPPED.toolchains.cuda
    assert pins is not None
    assert all(len(w.sha256.get("linux-aarch64", "")) == 64 for w in pins.wheels)
    # aarch64 wheels are other files than the x86-64 ones.
    assert all(w.sha256["linux-aarch64"] != w.sha256["linux"] for w in pins.wheels)
    arm = SHIPPED.toolchains.for_leg(SHIPPED.leg("cuda-13-portable-arm64").cuda_line, "arm64").cuda
    assert arm is not None
    assert [sha for _, sha in arm.wheels_for("linux")] == [w.sha256["linux-aarch64"] for w in pins.wheels]
