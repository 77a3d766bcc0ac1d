"""NVIDIA's redistributable CUDA: the real 12.8.1 manifest read, the components chosen per platform,
the pins' checks, and the driver floor a CUDA bundle states and check-bundle holds it to.

The expected archive values are NVIDIA's as nixpkgs @f803fb87 and conda-forge's feedstocks publish
them (cuda_nvcc linux-x86_64 9961b348...8210d3, libcublas 21718957...f323bb, 939 MB), typed here from
those sources, not read back from the code under test.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.bundle.check import check_tree
from pipeline.bundle.closure import CopiedFile
from pipeline.bundle.third_party import TOOLCHAIN_LICENSES, describe_third_party
from pipeline.errors import ConfigError, ToolchainError
from pipeline.inputs.cuda_driver import driver_floor, runtime_line
from pipeline.inputs.matrix import load_matrix
from pipeline.inputs.pins import parse_toolchain_pins
from pipeline.release.plan import leg_result
from pipeline.toolchain.cuda_redist import choose_archives, parse_manifest
from pipeline.toolchain.cuda_redist_identity import platform_of
from tests.support.cuda_redist import REAL_MANIFEST
from tests.support.pipeline_cli import ROOT

P = Path("m.toml")
COMPONENTS = ("cuda_nvcc", "cuda_cudart", "cuda_cccl", "libcublas")


def real() -> dict[str, Any]:
    return parse_manifest(REAL_MANIFEST.read_bytes(), "redistrib_12.8.1.json")


def test_the_fixture_is_nvidias_manifest_as_rules_ml_toolchain_pins_it() -> None:
    # google-ml-infra/rules_ml_toolchain cuda_redist_versions.bzl @141ef829: "12.8.1": [..., "249e28a8..."].
    digest = hashlib.sha256(REAL_MANIFEST.read_bytes()).hexdigest()
    assert digest == "249e28a83008d711d5f72880541c8be6253f6d61608461de4fcb715554a6cf17"
    pins = load_matrix(ROOT / "matrix.toml").toolchains.cuda_for("12")
    assert pins is not None and pins.redist is not None
    assert (pins.redist.manifest, pins.redist.sha256, pins.redist.components) == (
        REAL_MANIFEST.name,
        digest,
        COMPONENTS,
    )
    assert real()["release_label"] == "12.8.1"


def test_the_linux_x64_archives_are_the_published_ones() -> None:
    got = {a.component: a for a in choose_archives(real(), COMPONENTS, "linux-x86_64", "m")}
    assert list(got) == list(COMPONENTS)
    assert (got["cuda_nvcc"].version, got["cuda_nvcc"].sha256, got["cuda_nvcc"].size) == (
        "12.8.93",
        "9961b3484b6b71314063709a4f9529654f96782ad39e72bf1e00f070db8210d3",
        79015464,
    )
    assert (
        got["cuda_nvcc"].relative_path
        == "cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.8.93-archive.tar.xz"
    )
    assert got["cuda_cudart"].sha256 == "8d566b5fe745c46842dc16945cf36686227536decd2302c372be86da37faca68"
    assert got["cuda_cccl"].sha256 == "0740e9e01e4f15e17c5ab8d68bba4f8ec0eb6b84edccba4ac45112d2d2174e4b"
    assert (got["libcublas"].version, got["libcublas"].sha256, got["libcublas"].size) == (
        "12.8.4.1",
        "21718957c2cf000bacd69d36c95708a2319199e39e056f8b4f0f68e3b9f323bb",
        938651324,
    )
    assert {a.license for a in got.values()} == {"CUDA Toolkit"}
    # The pinned version is the manifest's nvcc: the check the installer makes holds for the shipped pins.
    pins = load_matrix(ROOT / "matrix.toml").toolchains.cuda_for("12")
    assert pins is not None and pins.version == got["cuda_nvcc"].version


def test_each_platform_gets_its_own_archives() -> None:
    windows = {
        a.component: a for a in choose_archives(real(), COMPONENTS, platform_of("windows", "x64"), "m")
    }
    assert windows["cuda_nvcc"].file_name == "cuda_nvcc-windows-x86_64-12.8.93-archive.zip"
    assert windows["libcublas"].sha256 == "57a470112cec7e112c95253dde8b3c7184d795dbd92b0bde77a4cb7f8c94c8aa"
    # An arm64 Linux runner is a server: linux-sbsa, not the Jetson's linux-aarch64.
    assert platform_of("linux", "arm64") == "linux-sbsa"
    sbsa = {a.component: a for a in choose_archives(real(), COMPONENTS, "linux-sbsa", "m")}
    assert sbsa["cuda_nvcc"].sha256 == "dc0b713ce69fd921aa53ac68610717d126fc273a3c554b0465cf44d7e379f467"
    with pytest.raises(ToolchainError, match="no archives for macos/arm64"):
        platform_of("macos", "arm64")


def test_a_component_the_manifest_lacks_or_lacks_for_the_platform_is_named() -> None:
    # 12.x has no cuda_crt component: its crt headers are inside cuda_nvcc (13.x split them out).
    with pytest.raises(ToolchainError) as err:
        choose_archives(real(), ("cuda_nvcc", "cuda_crt"), "linux-x86_64", "toolchains.cuda-12.redist")
    assert err.value.message == (
        "toolchains.cuda-12.redist: cuda_crt: no such component in the manifest (release 12.8.1)"
    )
    with pytest.raises(ToolchainError) as err:
        choose_archives(real(), ("visual_studio_integration",), "linux-x86_64", "m")
    assert (
        err.value.message == "m: visual_studio_integration: the manifest has no linux-x86_64 archive for it"
    )


def test_a_manifest_entry_that_could_leave_the_folder_is_refused() -> None:
    bad = json.loads(REAL_MANIFEST.read_text())
    bad["cuda_nvcc"]["linux-x86_64"]["relative_path"] = "../../etc/passwd"
    with pytest.raises(
        ToolchainError, match=r"cuda_nvcc: linux-x86_64\.relative_path '\.\./\.\./etc/passwd'"
    ):
        choose_archives(bad, ("cuda_nvcc",), "linux-x86_64", "m")
    with pytest.raises(ToolchainError, match="m: not a JSON manifest"):
        parse_manifest(b"<html>", "m")


def _redist(**over: Any) -> dict[str, Any]:
    table = {
        "url": "https://example.invalid/redist/",
        "manifest": "redistrib_12.8.1.json",
        "sha256": "a" * 64,
        "components": ["cuda_nvcc"],
        **over,
    }
    return {"cuda-12": {"version": "12.8.93", "redist": table}}


def test_the_redist_pins_are_checked_where_they_are_written() -> None:
    pins = parse_toolchain_pins(_redist(), P).cuda_for("12")
    assert pins is not None and pins.redist is not None
    assert pins.redist.manifest_url == "https://example.invalid/redist/redistrib_12.8.1.json"
    assert pins.redist.key == "toolchains.cuda-12.redist"
    # The arm64 form of the pins keeps them: the manifest names every platform's archive.
    assert pins.for_arch("arm64").redist == pins.redist
    cases = [
        (_redist(url="https://example.invalid/redist"), "toolchains.cuda-12.redist.url: expected the folder"),
        (
            _redist(manifest="redist.json"),
            "toolchains.cuda-12.redist.manifest: expected NVIDIA's manifest name",
        ),
        (_redist(sha256="abc"), "toolchains.cuda-12.redist.sha256: expected a sha256"),
        (_redist(components=[]), "toolchains.cuda-12.redist.components: expected a non-empty array"),
        (_redist(components=["cuda_nvcc", "cuda_nvcc"]), "components[1]: 'cuda_nvcc' is listed twice"),
        (_redist(extra=1), "toolchains.cuda-12.redist.extra: unknown key"),
    ]
    for data, message in cases:
        with pytest.raises(ConfigError) as err:
            parse_toolchain_pins(data, P)
        assert message in err.value.message and err.value.message.startswith("m.toml: ")
    both = _redist()
    both["cuda-12"]["wheels"] = [
        {"name": "nvidia-cuda-nvcc", "version": "12.8.93", "sha256": {"linux": "b" * 64}}
    ]
    with pytest.raises(ConfigError, match="wheels and redist both install the toolkit: keep one"):
        parse_toolchain_pins(both, P)


def test_the_driver_floor_of_each_line() -> None:
    # NVIDIA's CUDA Toolkit release notes, "CUDA Toolkit and Corresponding Driver Versions".
    floor12, floor13 = driver_floor("12.8.93"), driver_floor("13.2.86")
    assert floor12 is not None and floor13 is not None
    assert floor12.text("linux") == "R525 (525.60.13 or newer)"
    assert floor12.text("windows") == "R525 (528.33 or newer)"
    assert floor13.text("linux") == "R580 (580.65.06 or newer)"
    assert floor13.text("windows") == "R580 or newer"
    assert driver_floor("11.8.89") is None
    assert [
        runtime_line(n) for n in ("libcudart.so.12", "cudart64_13.dll", "libcudart.so", "libcublas.so.12")
    ] == ["12", "13", None, None]


def _bundle(root: Path, *files: str) -> Path:
    root.mkdir()
    (root / "LICENSE").write_text("MIT\n")
    for name in files:
        (root / name).write_bytes(b"not an ELF file")
    return root


def _runtime_problems(root: Path, os_name: str, cuda_line: str | None = None) -> list[tuple[str, str, str]]:
    # The files are stand-ins, not ELF or PE: the check's "nothing was examined" problem is not this test's.
    problems = check_tree(root, os_name=os_name, glibc_max=None, cuda_line=cuda_line).problems
    return [(p.file, p.kind, p.message) for p in problems if p.kind != "empty"]


def test_check_bundle_refuses_a_runtime_of_a_newer_line_than_the_legs(tmp_path: Path) -> None:
    twelve = _bundle(tmp_path / "a", "libcudart.so.13")
    assert _runtime_problems(twelve, "linux", "12") == [
        (
            "libcudart.so.13",
            "runtime",
            "a CUDA 13.x runtime, which needs an R580 driver, newer than the leg's CUDA 12.x line",
        )
    ]
    # Its own line's runtime, or an older one, passes; a leg that is not CUDA is not asked.
    assert _runtime_problems(_bundle(tmp_path / "b", "libcudart.so.12"), "linux", "12") == []
    assert _runtime_problems(_bundle(tmp_path / "c", "cudart64_12.dll"), "windows", "13") == []
    assert _runtime_problems(twelve, "linux") == []


def test_the_release_notes_name_the_driver_of_a_cuda_bundle() -> None:
    data = {
        "leg": "cuda-12.8-older",
        "status": "success",
        "bundle": "dist/x.tar.gz",
        "toolchain": {
            "identity": "cuda-12.8.93-0123abcd-gcc-12.2.0",
            "details": {"driver_min": "R525 (525.60.13 or newer)"},
        },
    }
    assert (
        leg_result(data, where="r").toolchain
        == "cuda-12.8.93-0123abcd-gcc-12.2.0; NVIDIA driver R525 (525.60.13 or newer)"
    )
    plain = {**data, "toolchain": {"identity": "gcc-12.2.0", "details": {}}}
    assert leg_result(plain, where="r").toolchain == "gcc-12.2.0"


def test_a_redist_install_gives_each_library_its_components_license(tmp_path: Path) -> None:
    root = tmp_path / "cuda-12.8.93-linux"
    (root / "lib").mkdir(parents=True)
    for lib in ("libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12"):
        (root / "lib" / lib).write_bytes(b"\x7fELF " + lib.encode())
    for component in COMPONENTS:
        (root / "licenses" / component).mkdir(parents=True)
        (root / "licenses" / component / "LICENSE").write_text("NVIDIA CUDA Toolkit EULA\n")
    (root / ".pipeline-install.json").write_text(
        json.dumps(
            {
                "archives": [
                    {"label": f"{c}-linux-x86_64-archive.tar.xz", "sha256": "1" * 64} for c in COMPONENTS
                ]
            }
        )
    )
    stage = tmp_path / "stage"
    stage.mkdir()
    copied = [CopiedFile(path=n, origin=f"lib/{n}") for n in ("libcublas.so.12", "libcudart.so.12")]
    listed = {
        e["path"]: e
        for e in describe_third_party(
            stage, copied, toolchain_root=root, details={"kind": "cuda", "version": "12.8.93"}
        )
    }
    assert listed["libcublas.so.12"]["licenses"] == [f"{TOOLCHAIN_LICENSES}/licenses/libcublas/LICENSE"]
    # libcudart is cuda_cudart's (its archive's name is not in the library's): never every component's.
    assert listed["libcudart.so.12"]["licenses"] == [f"{TOOLCHAIN_LICENSES}/licenses/cuda_cudart/LICENSE"]
    assert (
        stage / TOOLCHAIN_LICENSES / "licenses" / "libcublas" / "LICENSE"
    ).read_text() == "NVIDIA CUDA Toolkit EULA\n"


def test_a_cuda_bundles_manifest_names_its_line_and_driver_floor() -> None:
    from pipeline.bundle.make import build_manifest
    from pipeline.inputs.leg import Leg
    from pipeline.toolchain.toolchain import Toolchain

    leg = Leg(
        name="cuda-12.8-older",
        backend="cuda",
        os="linux",
        runner="ubuntu-22.04",
        cuda_line="12",
        cuda_architectures=("70", "75"),
    )
    toolchain = Toolchain(
        kind="cuda",
        identity="cuda-12.8.93-0123abcd-gcc-12.2.0",
        compilers={},
        details={"version": "12.8.93", "driver_min": "R525 (525.60.13 or newer)", "cuda_root": "/x"},
    )
    manifest = build_manifest(
        name="b",
        leg=leg,
        tag="b7000",
        source={},
        commit=None,
        toolchain=toolchain,
        cmake_args=[],
        roots={},
        files=[],
    )
    assert manifest["leg"]["cuda_line"] == "12"
    assert manifest["toolchain"] == {
        "kind": "cuda",
        "identity": "cuda-12.8.93-0123abcd-gcc-12.2.0",
        "version": "12.8.93",
        "driver_min": "R525 (525.60.13 or newer)",
    }
    # The default line is named too; a leg of another backend has none.
    default = Leg(name="cuda", backend="cuda", os="linux", runner="ubuntu-22.04")
    assert (
        build_manifest(
            name="b",
            leg=default,
            tag="b7000",
            source={},
            commit=None,
            toolchain=toolchain,
            cmake_args=[],
            roots={},
            files=[],
        )["leg"]["cuda_line"]
        == "13"
    )
    cpu = Leg(name="cpu", backend="cpu", os="linux", runner="ubuntu-22.04")
    assert (
        "cuda_line"
        not in build_manifest(
            name="b",
            leg=cpu,
            tag="b7000",
            source={},
            commit=None,
            toolchain=toolchain,
            cmake_args=[],
            roots={},
            files=[],
        )["leg"]
    )


def test_no_cuda_leg_makes_its_configure_fetch_cccl_from_the_network() -> None:
    # ggml-cuda's GGML_CUDA_CUB_3DOT2=ON runs FetchContent(CCCL GIT_TAG v3.2.0): unpinned, at configure time.
    matrix = load_matrix(ROOT / "matrix.toml")
    cuda = [leg for leg in matrix.declared_legs if leg.backend == "cuda"]
    assert len(cuda) == 16
    shared = list(matrix.cmake_args)
    assert not [
        leg.name for leg in cuda if any("GGML_CUDA_CUB_3DOT2" in a for a in [*shared, *leg.cmake_args])
    ]
