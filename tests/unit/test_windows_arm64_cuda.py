"""The Windows arm64 CUDA leg: its pins from NVIDIA's real 13.4.1 manifest, its two configure lines and build
target, its GitHub matrix entry, its runtime search and its identity.

The expected archive values are typed from the manifest's text as NixOS/nixpkgs @28bfecf41a87 publishes it
(and the versions from the reference's workflow @7762780 and upstream's windows-setup-cuda action), not read
back from the code under test. A Windows machine is needed for the rest (docs/whole-release.md, "Windows arm64
CUDA: one job, two builds").
"""

from __future__ import annotations

import hashlib
from pathlib import Path, PureWindowsPath
from typing import Any

import pytest

from pipeline.backends import BACKENDS, leg_description
from pipeline.ccache.session import CcacheSetup
from pipeline.commands.matrix import github_matrix
from pipeline.errors import ConfigError
from pipeline.inputs.matrix import load_matrix, parse_matrix
from pipeline.inputs.pins import REDIST_PLATFORMS, parse_toolchain_pins
from pipeline.leg.ninja_targets import phony_inputs
from pipeline.leg.steps import cmake_arguments
from pipeline.toolchain.cross import cross_problem
from pipeline.toolchain.cuda_layout import cross_layout, install_folder, missing_layout
from pipeline.toolchain.cuda_msvc_cross import cross_cl, is_msvc_cross, with_msvc_cross
from pipeline.toolchain.cuda_redist import choose_platform_archives, parse_manifest
from pipeline.toolchain.cuda_redist_identity import PLATFORMS, platform_of, redist_identity
from pipeline.toolchain.msvc_env import MsvcEnv
from pipeline.toolchain.toolchain import Toolchain
from tests.support.cuda_redist import REAL_CROSS_MANIFEST
from tests.support.pipeline_cli import ROOT

SHIPPED = load_matrix(ROOT / "matrix.toml")
LEG = SHIPPED.leg("cuda-windows-13-portable-arm64")
PINS = SHIPPED.toolchains.cuda_for("13.4")
P = Path("m.toml")


def real() -> dict[str, Any]:
    return parse_manifest(REAL_CROSS_MANIFEST.read_bytes(), REAL_CROSS_MANIFEST.name)


def test_the_fixture_is_nvidias_13_4_1_manifest_as_pinned() -> None:
    # nixpkgs' text, 51,991 bytes without a final newline, hashes to the value a public build script pins too.
    data = REAL_CROSS_MANIFEST.read_bytes()
    assert len(data) == 51991 and not data.endswith(b"\n")
    assert (
        hashlib.sha256(data).hexdigest() == "291178934b2139727407c76f697bb0dfbac4014753a8094d7c290b0f4124a302"
    )
    assert PINS is not None and PINS.redist is not None
    assert (PINS.redist.manifest, PINS.redist.sha256) == (
        "redistrib_13.4.1.json",
        hashlib.sha256(data).hexdigest(),
    )
    assert real()["release_label"] == "13.4.1"


def test_the_leg_takes_the_x64_compiler_and_the_arm64_libraries_the_reference_installs() -> None:
    assert PINS is not None and PINS.redist is not None
    wanted = PINS.redist.platforms(platform_of(LEG.os, LEG.arch))
    got = {a.component: a for a in choose_platform_archives(real(), wanted, "m")}
    # The reference's six URLs: cccl, crt, nvcc, nvvm for windows-x86_64; cudart and cuBLAS for windows-arm64.
    expected = {
        "cuda_nvcc": ("windows-x86_64", "13.4.59", "06a4fe6ec543030c5e5a7b85493cda90612015d9fff2a54ed0227162c937ea46"),
        "cuda_crt": ("windows-x86_64", "13.4.59", "f969a0e3b086a48f940563cd1b965cb5197fd9540c79cc952b1abfa479f9ede7"),
        "libnvvm": ("windows-x86_64", "13.4.59", "a7a07bcc21cc05bce83eedebcbcd9b9f5418c58316b0fa28a57cb2c548b29841"),
        "cccl": ("windows-x86_64", "13.3.4.2.1", "ea3ebdd98d4d98819cc26b66bc5a0931004ed35ff18eea8b93e0bd2c8bfa5d7c"),
        "cuda_cudart": ("windows-arm64", "13.4.49", "d48085b557db615f1095d4a6f96d4d1fcc8ba0c4fd16ad40f30f953b6ae422cf"),
        "libcublas": ("windows-arm64", "13.7.0.27", "932794dcd1e67e152ab2aeaf32ee8141ded807c6ea6d8f85692c40b02fdd09d7"),
    }  # fmt: skip
    assert {c: (a.platform, a.version, a.sha256) for c, a in got.items()} == expected
    assert (
        got["libcublas"].relative_path
        == "libcublas/windows-arm64/libcublas-windows-arm64-13.7.0.27-archive.zip"
    )
    assert got["libcublas"].size == 154100004
    assert got["cccl"].license == "CCCL EULA" and got["cuda_cudart"].license == "CUDA Toolkit"
    # The pinned version is the manifest's nvcc: the check the installer makes holds for the shipped pins.
    assert PINS.version == got["cuda_nvcc"].version == "13.4.59"
    assert install_folder(PINS.version, LEG.os, LEG.arch) == "cuda-13.4.59-windows-arm64"
    assert install_folder("12.8.93", "windows") == "cuda-12.8.93-windows"


def test_the_cross_pins_are_checked_where_they_are_written() -> None:
    def pins(**over: Any) -> dict[str, Any]:
        table = {"url": "https://example.invalid/redist/", "manifest": "redistrib_13.4.1.json", "sha256": "a" * 64,
                 "components": ["cuda_nvcc", "cuda_cudart"], **over}  # fmt: skip
        return {"cuda-13.4": {"version": "13.4.59", "redist": table}}

    parsed = parse_toolchain_pins(pins(host_platform="windows-x86_64", host_components=["cuda_nvcc"]), P)
    line = parsed.cuda_for("13.4")
    assert line is not None and line.redist is not None
    assert line.redist.platforms("windows-arm64") == (
        ("cuda_nvcc", "windows-x86_64"),
        ("cuda_cudart", "windows-arm64"),
    )
    # Without host pins every component is the leg's platform's (the 12.8 line's way).
    plain = parse_toolchain_pins(pins(), P).cuda_for("13.4")
    assert plain is not None and plain.redist is not None
    assert {p for _, p in plain.redist.platforms("windows-x86_64")} == {"windows-x86_64"}
    for over, message in (
        (
            {"host_platform": "windows-x86", "host_components": ["cuda_nvcc"]},
            r"host_platform: expected one of",
        ),
        (
            {"host_platform": "windows-x86_64", "host_components": ["libnvvm"]},
            r"host_components\[0\]: expected one",
        ),
        ({"host_platform": "windows-x86_64"}, "host_platform and host_components go together"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_toolchain_pins(pins(**over), P)
    with pytest.raises(
        ConfigError, match=r"toolchains\.cuda-13\.4\.version: expected a CUDA 13\.4\.x version"
    ):
        parse_toolchain_pins({"cuda-13.4": {"version": "13.2.86"}}, P)
    # Every platform the identity and the installer name is one the pins accept.
    assert set(PLATFORMS.values()) == set(REDIST_PLATFORMS)


def test_the_leg_is_built_with_the_references_archs_name_and_runner() -> None:
    assert LEG.disabled is None and SHIPPED.disabled_legs == {}
    assert (LEG.runner, LEG.cuda_line, LEG.cuda_major, LEG.cuda_architectures) == (
        "windows-2022",
        "13.4",
        "13",
        ("120", "121"),
    )
    assert (LEG.base, LEG.build_targets) == ("cpu-windows-arm64", ("ggml-cuda",))
    row = leg_description(SHIPPED, LEG, tag="b1234")
    assert (row["toolkit"], row["bundle"]) == ("CUDA 13.4.59", "app-b1234-windows-arm64-cuda13-portable.zip")
    # Signed, as every Windows leg: its GitHub job runs in the signing environment.
    assert SHIPPED.signing.covers(LEG)
    entries = github_matrix(SHIPPED, list(SHIPPED.legs))["include"]
    assert len(entries) == len(SHIPPED.all_legs) == 39
    entry = next(e for e in entries if e["leg"] == LEG.name)
    assert entry == {"leg": LEG.name, "session": LEG.name, "runner": "windows-2022", "os": "windows", "arch": "arm64",
                     "backend": "cuda", "environment": "release-signing"}  # fmt: skip
    # Built on the x64 runner: a declared cross build; the MSVC cross toolset is this leg's alone.
    assert cross_problem(LEG, host_os="windows", host="x64") is None
    assert is_msvc_cross(LEG) and not any(
        is_msvc_cross(leg) for leg in SHIPPED.legs.values() if leg is not LEG
    )


def _ccache(ws: Path) -> CcacheSetup:
    return CcacheSetup(executable=ws / "venv/Scripts/ccache.exe", version="4.14.2", ccache_dir=ws / "ccache",
                       base_dir=ws / "out", compiler_check="content", max_size="5G", stats_log=ws / "stats.log")  # fmt: skip


def _values(args: list[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for arg in args:
        if arg.startswith("-D") and "=" in arg:
            name, value = arg[2:].split("=", 1)
            values[name.split(":", 1)[0]] = value
    return values


MSVC = MsvcEnv(
    tools_version="14.44.35207",
    vs_version="17.0",
    sdk_version="10.0.26100.0",
    installation=r"C:\Program Files\Microsoft Visual Studio\2022\Enterprise",
    changed={
        "VCToolsInstallDir": r"C:\Program Files\Microsoft Visual Studio\2022\Enterprise\VC\Tools\MSVC\14.44.35207"
        + "\\",
        "PATH": r"C:\msvc\bin\Hostx64\arm64;C:\Windows",
    },
)
CL = "C:/Program Files/Microsoft Visual Studio/2022/Enterprise/VC/Tools/MSVC/14.44.35207/bin/Hostx64/arm64/cl.exe"


def _cuda_toolchain(root: str) -> Toolchain:
    """What the redist install gives before the MSVC cross toolset is put under it (the host's compilers)."""
    return Toolchain(kind="cuda", identity="cuda-13.4.59-0123abcd-clang-19.1.5",
                     compilers={"C": "clang 19.1.5", "CXX": "clang 19.1.5", "CUDA": "nvcc 13.4.59"},
                     details={"version": "13.4.59", "cuda_root": root}, env={"CUDA_PATH": root, "PATH": root + "/bin"},
                     cmake_args=("-DCMAKE_C_COMPILER=C:/llvm/bin/clang.exe",), launcher_languages=("CUDA",))  # fmt: skip


def test_the_legs_own_configure_line_is_the_references_with_msvcs_cross_compiler() -> None:
    root = "C:/a/tc/cuda-13.4.59-windows-arm64"
    toolchain = with_msvc_cross(_cuda_toolchain(root), MSVC, LEG, {"PATH": r"C:\Windows"})
    ws = Path("C:/a/ws")
    args = cmake_arguments(SHIPPED, LEG, toolchain, _ccache(ws), ws / "out/src/llama.cpp", ws / "out/build")
    values = _values(args)
    # The reference's line (less GGML_CUDA_CUB_3DOT2, which fetches CCCL unpinned), and the compilers by path.
    expected = {
        "CMAKE_TOOLCHAIN_FILE": "cmake/arm64-windows-msvc-cuda.cmake",
        "CMAKE_BUILD_TYPE": "Release", "GGML_NATIVE": "OFF", "GGML_BACKEND_DL": "ON", "GGML_CPU": "OFF",
        "GGML_CUDA": "ON", "LLAMA_BUILD_TESTS": "OFF", "LLAMA_BUILD_EXAMPLES": "OFF", "LLAMA_BUILD_TOOLS": "OFF",
        "LLAMA_BUILD_SERVER": "OFF", "LLAMA_BUILD_APP": "OFF", "CMAKE_CUDA_ARCHITECTURES": "120;121",
        "CMAKE_C_COMPILER": CL, "CMAKE_CXX_COMPILER": CL, "CMAKE_CUDA_HOST_COMPILER": CL,
        "CMAKE_CUDA_COMPILER": f"{root}/bin/nvcc.exe", "CUDAToolkit_ROOT": root,
    }  # fmt: skip
    assert {k: values.get(k) for k in expected} == expected
    assert "GGML_CUDA_CUB_3DOT2" not in values
    # ccache before every compiler; no -ffile-prefix-map, which cl does not take (nor through nvcc).
    assert {
        lang: values[f"CMAKE_{lang}_COMPILER_LAUNCHER"] for lang in ("C", "CXX", "CUDA")
    } == dict.fromkeys(("C", "CXX", "CUDA"), str(ws / "venv/Scripts/ccache.exe"))
    assert not [a for a in args if "file-prefix-map" in a]
    # MSVC's toolset is in the identity (on the runner) and its environment beneath the toolkit's.
    assert toolchain.identity == "cuda-13.4.59-0123abcd-clang-19.1.5-msvc-14.44.35207"
    assert toolchain.compilers["CUDA_HOST"] == f"MSVC 14.44.35207 arm64 ({PureWindowsPath(CL)})"
    assert toolchain.env["PATH"].startswith(root + "/bin")


def test_the_base_configure_line_is_the_arm64_cpu_legs_own() -> None:
    # The base is cpu-windows-arm64: clang's toolchain file, its flags, every target; prefix maps as usual.
    base = SHIPPED.leg(LEG.base or "")
    ws = Path("C:/a/ws")
    host = Toolchain(
        kind="clang", identity="clang-19.1.5", cmake_args=("-DCMAKE_C_COMPILER=C:/llvm/bin/clang.exe",)
    )
    args = cmake_arguments(SHIPPED, base, host, _ccache(ws), ws / "out/src/llama.cpp", ws / "out/build-base")
    values = _values(args)
    assert values["CMAKE_TOOLCHAIN_FILE"] == "cmake/arm64-windows-llvm.cmake"
    assert (values["GGML_CPU_ALL_VARIANTS"], values["GGML_OPENMP"], values["GGML_RPC"]) == ("OFF", "ON", "ON")
    assert "GGML_CUDA" not in values and "-ffile-prefix-map" in values["CMAKE_C_FLAGS"]
    assert base.build_targets == () and base.base is None


def test_the_build_takes_what_ninjas_graph_says_the_target_made() -> None:
    query = "ggml-cuda:\n  input: phony\n    bin/ggml-cuda.dll\n    | order-only\n  outputs:\n    all\n"
    assert phony_inputs(query, "ggml-cuda") == ("bin/ggml-cuda.dll",)
    assert phony_inputs("bin/ggml-cuda.dll:\n  input: CXX_SHARED_LIBRARY_LINKER\n", "ggml-cuda") == ()


def test_an_arm64_bundle_takes_cudas_dlls_from_the_arm64_folder_only() -> None:
    profile = BACKENDS["cuda"].runtime("windows")
    assert profile.dirs_for("arm64") == ("bin/arm64",)
    assert profile.dirs_for("x64") == ("bin", "bin/x64")


def test_the_cross_layout_is_what_the_trees_toolchain_file_reads() -> None:
    expected = cross_layout("windows", "arm64", "13.4.59")
    assert [p for p, _ in expected] == [
        "bin/nvcc.exe", "lib/arm64/cudart.lib", "lib/arm64/cuda.lib", "lib/arm64/cublas.lib",
        "lib/arm64/cublasLt.lib", "bin/arm64/cudart64_13.dll", "bin/arm64/cublas64_13.dll",
        "bin/arm64/cublasLt64_13.dll",
    ]  # fmt: skip
    assert cross_layout("windows", "x64", "12.8.93") == ()
    have = [p for p, _ in expected if p != "lib/arm64/cublasLt.lib"]
    assert missing_layout([p.upper() for p in have], expected) == [("lib/arm64/cublasLt.lib", "libcublas")]
    assert (
        cross_cl(r"C:\VC\Tools\MSVC\14.44.35207" + "\\", "arm64")
        .as_posix()
        .endswith("/bin/Hostx64/arm64/cl.exe")
    )


def test_the_identity_carries_each_components_platform() -> None:
    assert PINS is not None and PINS.redist is not None
    cross = redist_identity(PINS, PINS.redist, "windows-arm64", "gcc-12.2.0")
    assert cross.startswith("cuda-13.4.59-") and cross.endswith("-gcc-12.2.0")
    # Another host platform (or none) is another toolkit: another identity.
    import dataclasses

    native = dataclasses.replace(PINS.redist, host_platform=None, host_components=())
    assert redist_identity(PINS, native, "windows-arm64", "gcc-12.2.0") != cross


def test_a_leg_with_a_base_is_checked_where_it_is_written() -> None:
    def legs(**plug: Any) -> dict[str, Any]:
        return {"legs": {"cpu": {"backend": "cpu"}, "plug": {"backend": "cpu", **plug}}}

    m = parse_matrix(legs(base="cpu", build_targets=["demo-plug"]), P)
    assert (m.leg("plug").base, m.leg("plug").build_targets) == ("cpu", ("demo-plug",))
    for plug, message in (
        (
            {"base": "cpux", "build_targets": ["x"]},
            r"legs\.plug\.base: no other leg 'cpux'.*did you mean 'cpu'",
        ),
        ({"base": "plug", "build_targets": ["x"]}, r"legs\.plug\.base: no other leg 'plug'"),
        ({"base": "cpu"}, r"legs\.plug\.build_targets: required with base"),
        (
            {"base": "cpu", "build_targets": ["a b"]},
            r"legs\.plug\.build_targets: expected each item a CMake target",
        ),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_matrix(legs(**plug), P)


def test_the_bundle_adds_what_the_targets_made_and_refuses_a_file_both_builds_made(tmp_path: Path) -> None:
    from pipeline.bundle.make import added_payload, collect_payload
    from pipeline.errors import BundleError

    base, own = tmp_path / "build-base", tmp_path / "build"
    for folder, names in ((base, ("llama-server.exe", "ggml-base.dll", "ggml-cpu.dll")),
                          (own, ("ggml-base.dll", "ggml-cuda.dll"))):  # fmt: skip
        (folder / "bin").mkdir(parents=True)
        for name in names:
            (folder / "bin" / name).write_bytes(b"MZ " + name.encode())
    (own / "lib").mkdir()
    (own / "lib" / "ggml-cuda.lib").write_bytes(b"!<arch>")  # the import library: not shipped
    payload = collect_payload(base, symlinks=False)
    added = added_payload(own, ("bin/ggml-cuda.dll", "lib/ggml-cuda.lib"), payload)
    assert [(p.relpath, p.path) for p in added] == [("ggml-cuda.dll", own / "bin" / "ggml-cuda.dll")]
    # The own build's ggml-base.dll is MSVC's copy: the bundle has the base build's, and never two.
    with pytest.raises(BundleError, match=r"ggml-base\.dll is made by the base's build too"):
        added_payload(own, ("bin/ggml-cuda.dll", "bin/ggml-base.dll"), payload)
    with pytest.raises(BundleError, match="the leg's targets made no program or library"):
        added_payload(own, ("lib/ggml-cuda.lib",), payload)
