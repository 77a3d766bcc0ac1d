"""Which compiler_check ccache gets: the ``toolchain`` mode only for verified, self-installed toolchains."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pipeline.ccache.compiler_check import resolve_compiler_check, verified_archive_digest
from pipeline.errors import ConfigError, ToolchainError
from pipeline.inputs.matrix import parse_matrix
from pipeline.toolchain.toolchain import Toolchain

DIGEST = "ab" * 32
ROOT = Path("/opt/toolchains/rocm-7.0.0a20250104-linux-gfx110X-all")
CLANG = ROOT / "lib/llvm/bin/clang"


def rocm(
    details: dict[str, str] | None = None, compilers: tuple[Path, ...] = (CLANG, CLANG.with_name("clang++"))
) -> Toolchain:
    langs = ("C", "CXX", "HIP")
    args = tuple(
        f"-DCMAKE_{lang}_COMPILER={path}"
        for lang, path in zip(langs, [*compilers, compilers[-1]], strict=False)
    )
    return Toolchain(
        kind="rocm",
        identity="rocm-7.0.0a20250104",
        details={"origin": "download", "sha256": DIGEST, "root": str(ROOT), **(details or {})},
        cmake_args=(*args, "-DGPU_TARGETS=gfx1100"),
    )


def versions(path: Path) -> str:
    return f"clang version 14.0.6 ({path.name})\n"


def test_verified_install_gets_a_string_check() -> None:
    check = resolve_compiler_check("toolchain", rocm(), version_of=versions)
    expected = hashlib.sha256()
    for name in ("clang", "clang++"):  # HIP repeats clang++: each compiler once
        expected.update(f"clang version 14.0.6 ({name})\n".encode() + b"\0")
    assert check.value == f"string:{DIGEST}+{expected.hexdigest()}"
    assert check.mode == "toolchain" and check.note is None


def test_another_archive_or_another_version_output_changes_the_string() -> None:
    base = resolve_compiler_check("toolchain", rocm(), version_of=versions).value
    other_archive = resolve_compiler_check(
        "toolchain", rocm({"sha256": "cd" * 32}), version_of=versions
    ).value
    other_version = resolve_compiler_check("toolchain", rocm(), version_of=lambda p: "clang 15\n").value
    assert len({base, other_archive, other_version}) == 3


@pytest.mark.parametrize(
    ("details", "why"),
    [
        ({"origin": "rocm-path"}, "not installed by the pipeline from a verified archive"),
        ({"sha256": "not-a-digest"}, "not installed by the pipeline from a verified archive"),
    ],
)
def test_unverified_installs_fall_back_to_content(details: dict[str, str], why: str) -> None:
    check = resolve_compiler_check("toolchain", rocm(details), version_of=versions)
    assert check.value == "content"
    assert check.note is not None and why in check.note and "rocm-7.0.0a20250104" in check.note


def test_a_compiler_outside_the_install_falls_back() -> None:
    check = resolve_compiler_check(
        "toolchain", rocm(compilers=(Path("/usr/bin/gcc"), CLANG)), version_of=versions
    )
    assert check.value == "content"
    assert check.note is not None and "/usr/bin/gcc is not part of" in check.note


def test_a_compiler_that_cannot_run_falls_back() -> None:
    def broken(path: Path) -> str:
        raise ToolchainError(f"{path}: cannot run '--version': Exec format error")

    check = resolve_compiler_check("toolchain", rocm(), version_of=broken)
    assert check.value == "content" and check.note is not None and "Exec format error" in check.note


@pytest.mark.parametrize("mode", ["content", "mtime"])
def test_other_modes_pass_through_without_running_anything(mode: str) -> None:
    def never(path: Path) -> str:
        raise AssertionError("no --version for " + mode)

    assert resolve_compiler_check(mode, rocm(), version_of=never).value == mode


def test_archive_sha256_from_other_installers_counts() -> None:
    wheels = Toolchain(
        kind="cuda", identity="cuda-13.0", details={"origin": "wheels", "archive_sha256": "EF" * 32}
    )
    assert verified_archive_digest(wheels) == "ef" * 32
    assert verified_archive_digest(Toolchain(kind="gcc", identity="gcc-14")) is None


def test_matrix_accepts_toolchain_and_rejects_near_misses() -> None:
    base = {"legs": {"cpu": {"backend": "cpu"}}}
    assert (
        parse_matrix(
            {**base, "ccache": {"compiler_check": "toolchain"}}, Path("m.toml")
        ).ccache.compiler_check
        == "toolchain"
    )
    assert parse_matrix(base, Path("m.toml")).ccache.compiler_check == "content"
    with pytest.raises(ConfigError) as info:
        parse_matrix({**base, "ccache": {"compiler_check": "toolchian"}}, Path("m.toml"))
    assert "ccache.compiler_check" in str(info.value) and "toolchain" in str(info.value)
