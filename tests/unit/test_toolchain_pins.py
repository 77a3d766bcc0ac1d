"""[toolchains] of matrix.toml: pinned CUDA wheels and SDK archives, validated with the file."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pipeline.errors import ConfigError
from pipeline.inputs.matrix import load_matrix, parse_matrix
from pipeline.inputs.pins import parse_toolchain_pins

ROOT = Path(__file__).resolve().parents[2]
P = Path("m.toml")
SHA_A = "a" * 64
SHA_B = "b" * 64


def cuda(**wheel: object) -> dict[str, object]:
    w = {
        "name": "nvidia-cuda-nvcc",
        "version": "13.2.86",
        "sha256": {"linux": SHA_A, "windows": SHA_B},
        **wheel,
    }
    return {"cuda": {"version": "13.2.86", "wheels": [w]}}


def test_repository_matrix_pins_every_cuda_wheel_for_both_oses() -> None:
    pins = load_matrix(ROOT / "matrix.toml").toolchains.cuda
    assert pins is not None
    names = {w.name for w in pins.wheels}
    # The wheels the 13.x toolkit needs to compile and link llama.cpp's CUDA backend (DESIGN.md).
    assert {"nvidia-cuda-nvcc", "nvidia-cuda-runtime", "nvidia-cublas", "nvidia-cuda-cccl",
            "nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cuda-nvrtc"} <= names  # fmt: skip
    for os_name in ("linux", "windows"):
        pairs = pins.wheels_for(os_name)
        assert len(pairs) == len(pins.wheels)
        assert all(len(sha) == 64 for _, sha in pairs)
    # Linux and Windows wheels are different files.
    assert all(w.sha256["linux"] != w.sha256["windows"] for w in pins.wheels)


def test_repository_legs_run_on_ubuntu_22_04_and_gpu_legs_ship_rpc_dl_and_cpu_variants() -> None:
    matrix = load_matrix(ROOT / "matrix.toml")
    for leg in matrix.legs.values():
        if leg.os == "linux":
            # The release job's runners: 22.04 (x64 and arm), 24.04-arm only for arm64 CUDA 13.
            expected = (
                "ubuntu-24.04-arm"
                if (leg.arch, leg.backend) == ("arm64", "cuda")
                else ("ubuntu-22.04-arm" if leg.arch == "arm64" else "ubuntu-22.04")
            )
            assert leg.runner == expected, leg.name
        if leg.base is not None:
            # Its CPU side and RPC are its base's build (Windows arm64: one CPU variant, as upstream's); its own
            # build adds the backend module alone.
            base = matrix.legs[leg.base]
            assert {"-DGGML_RPC=ON", "-DGGML_BACKEND_DL=ON"} <= set(base.cmake_args), leg.name
            assert {"-DGGML_BACKEND_DL=ON", "-DGGML_CPU=OFF"} <= set(leg.cmake_args), leg.name
        elif leg.backend not in ("cpu", "metal"):
            for flag in ("-DGGML_RPC=ON", "-DGGML_BACKEND_DL=ON", "-DGGML_CPU_ALL_VARIANTS=ON"):
                assert flag in leg.cmake_args, (leg.name, flag)
        if leg.backend == "rocm":
            assert "-DGGML_OPENMP=OFF" in leg.cmake_args, leg.name
    assert {"90", "100"} <= set(matrix.legs["cuda"].cuda_architectures)


def test_cuda_pins_parse() -> None:
    pins = parse_toolchain_pins(cuda(), P).cuda
    assert pins is not None
    assert pins.wheels[0].requirement == "nvidia-cuda-nvcc==13.2.86"
    assert pins.wheels_for("linux") == ((pins.wheels[0], SHA_A),)


def test_a_wheel_without_a_windows_hash_leaves_windows_unpinned() -> None:
    pins = parse_toolchain_pins(cuda(sha256={"linux": SHA_A}), P).cuda
    assert pins is not None
    assert pins.wheels_for("windows") == ()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (cuda(sha256={"linux": "abc"}), "m.toml: toolchains.cuda.wheels[0].sha256.linux: expected a sha256"),
        (cuda(version=">=13"), "m.toml: toolchains.cuda.wheels[0].version: expected an exact version"),
        (cuda(sha256={"macos": SHA_A}), "m.toml: toolchains.cuda.wheels[0].sha256.macos: unknown key"),
        (cuda(extra=1), "m.toml: toolchains.cuda.wheels[0].extra: unknown key"),
        (
            {"cuda": {"version": "13.2.86", "wheels": []}},
            "m.toml: toolchains.cuda.wheels: expected a non-empty",
        ),
        (
            {"vulkan": {"linux": {"url": "ftp://x", "sha256": SHA_A, "version": "1.4.1"}}},
            "m.toml: toolchains.vulkan.linux.url: expected an http(s):// or file:// URL",
        ),
        (
            {
                "vulkan": {
                    "linux": {
                        "url": "https://h/x.tar.xz",
                        "sha256": SHA_A,
                        "version": "1.4.1",
                        "root": "../up",
                    }
                }
            },
            "m.toml: toolchains.vulkan.linux.root: expected a relative folder",
        ),
        ({"vulkan": {"macos": {}}}, "m.toml: toolchains.vulkan.macos: unknown key"),
        ({"rust": {}}, "m.toml: toolchains.rust: unknown key"),
    ],
)
def test_bad_pins_name_the_file_and_key(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_toolchain_pins(data, P)
    assert str(err.value).startswith(message)


def test_duplicate_wheel_is_refused() -> None:
    data = cuda()
    wheels = data["cuda"]["wheels"]  # type: ignore[index]
    wheels.append(dict(wheels[0]))
    with pytest.raises(ConfigError, match=r"wheels\[1\].name: 'nvidia-cuda-nvcc' is listed twice"):
        parse_toolchain_pins(data, P)


def test_matrix_without_toolchains_has_no_pins() -> None:
    text = '[legs.cpu]\nbackend = "cpu"\n'
    matrix = parse_matrix(tomllib.loads(text), P)
    assert matrix.toolchains.cuda is None and dict(matrix.toolchains.vulkan) == {}


def test_vulkan_pin_parses_through_the_matrix() -> None:
    text = (f'[toolchains.vulkan.linux]\nurl = "https://h/sdk.tar.xz"\nsha256 = "{SHA_A.upper()}"\n'
            'version = "1.4.328.1"\nroot = "x86_64"\n[legs.vulkan]\nbackend = "vulkan"\n')  # fmt: skip
    pin = parse_matrix(tomllib.loads(text), P).toolchains.vulkan["linux"]
    assert (pin.url, pin.sha256, pin.version, pin.root) == (
        "https://h/sdk.tar.xz",
        SHA_A,
        "1.4.328.1",
        "x86_64",
    )
