"""macOS bundles from real Mach-O files made here: the closure, install-name rewriting and check-bundle.

The files are made with Debian's LLVM: ``clang -target arm64-apple-macos13
-c`` and ``ld64.lld`` (which signs arm64 output ad hoc, as Apple's ld does),
the way a macOS runner's Xcode makes llama.cpp's. What the pipeline did to
them is read back with ``llvm-otool`` (the tool, not the pipeline's reader).
libSystem is a stand-in dylib with the install name ``/usr/lib/libSystem.B.dylib``
(nothing here has the macOS SDK); the smoke run cannot happen on Linux and is
skipped, saying so.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.bundle.check import BundleCheck, check_bundle, check_tree
from pipeline.bundle.macho_closure import MachoTools, complete_macho_runtime
from pipeline.bundle.machodeps import read_macho, signature_matches
from pipeline.inputs.leg import Leg
from pipeline.results.record import LegRecord
from pipeline.toolchain.toolchain import Toolchain
from tests.support.bundles import make_bundle
from tests.support.llvm_tools import llvm_tool

pytestmark = pytest.mark.integration

TOOLS = {
    k: llvm_tool(v)
    for k, v in {
        "clang": "clang",
        "ld": "ld64.lld",
        "otool": "llvm-otool",
        "int": "llvm-install-name-tool",
    }.items()
}
_missing = [t for t in TOOLS.values() if shutil.which(t) is None]
if _missing:
    pytest.skip(
        f"real Mach-O files need {', '.join(_missing)} (Debian: clang, lld, llvm)", allow_module_level=True
    )

TRIPLES = {"arm64": "arm64-apple-macos13", "x64": "x86_64-apple-macos13"}
LD_ARCH = {"arm64": "arm64", "x64": "x86_64"}
SOURCES = {
    "sys": 'int puts(const char *s) { return 0; }\nvoid stub(void) __asm__("dyld_stub_binder");\nvoid stub(void) {}\n',
    "omp": "int omp_get_max_threads(void) { return 4; }\n",
    "bar": "int omp_get_max_threads(void);\nint bar(void) { return omp_get_max_threads(); }\n",
    "foo": "int bar(void);\nint foo(void) { return bar() + 42; }\n",
    "main": 'int foo(void);\nint puts(const char *);\nint main(void) { puts("hi"); return foo(); }\n',
}


def run(*args: str | Path) -> str:
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True).stdout


def otool(flag: str, path: Path) -> str:
    return run(TOOLS["otool"], flag, path)


@dataclass
class Made:
    bin: Path
    lib: Path
    brew: Path


def make_files(root: Path, arch: str = "arm64", *, minos: str = "13.0") -> Made:
    """A build's bin/ and lib/ as a macOS llama.cpp build leaves them, plus a 'Homebrew' libomp outside."""
    objs, brew, lib, bindir = (
        root / "obj",
        root / "brew" / "lib",
        root / "build" / "lib",
        root / "build" / "bin",
    )
    for d in (objs, brew, lib, bindir):
        d.mkdir(parents=True, exist_ok=True)
    # A Homebrew keg keeps the formula's license at its top, beside lib/ (Cellar/libomp/<version>/LICENSE.TXT).
    (brew.parent / "LICENSE.TXT").write_text("Apache License 2.0 with LLVM Exceptions\n")
    for name, text in SOURCES.items():
        (objs / f"{name}.c").write_text(text)
        run(TOOLS["clang"], "-target", TRIPLES[arch], "-c", objs / f"{name}.c", "-o", objs / f"{name}.o")

    def link(out: Path, obj: str, *extra: str | Path, dylib: str | None = None) -> None:
        kind = ["-dylib", "-install_name", dylib] if dylib else ["-execute"]
        run(
            TOOLS["ld"],
            "-arch",
            LD_ARCH[arch],
            "-platform_version",
            "macos",
            minos,
            minos,
            *kind,
            objs / f"{obj}.o",
            *extra,
            "-o",
            out,
        )

    system = objs / "libSystem.B.dylib"
    link(system, "sys", dylib="/usr/lib/libSystem.B.dylib")
    # An absolute install name outside the base system, as Homebrew's libomp has.
    link(brew / "libomp.dylib", "omp", system, dylib=str(brew / "libomp.dylib"))
    link(
        lib / "libggml-bar.dylib",
        "bar",
        brew / "libomp.dylib",
        system,
        "-rpath",
        root / "build" / "lib",
        dylib="@rpath/libggml-bar.dylib",
    )
    link(
        lib / "libllama.dylib",
        "foo",
        lib / "libggml-bar.dylib",
        system,
        "-rpath",
        "@loader_path",
        dylib="@rpath/libllama.dylib",
    )
    link(
        bindir / "llama-demo",
        "main",
        lib / "libllama.dylib",
        system,
        "-rpath",
        root / "build" / "lib",
        "-rpath",
        "@loader_path",
    )
    return Made(bin=bindir, lib=lib, brew=brew)


def stage_flat(made: Made, stage: Path) -> Path:
    stage.mkdir()
    for d in (made.bin, made.lib):
        for f in d.iterdir():
            shutil.copy2(f, stage / f.name)
    (stage / "LICENSE").write_text("MIT\n")
    return stage


def test_the_closure_copies_absolute_names_in_and_makes_every_name_bundle_relative(tmp_path: Path) -> None:
    made = make_files(tmp_path)
    stage = stage_flat(made, tmp_path / "stage")
    before = otool("-L", stage / "libggml-bar.dylib")
    assert str(made.brew / "libomp.dylib") in before
    tools = MachoTools(install_name_tool=Path(shutil.which(TOOLS["int"]) or ""))
    result = complete_macho_runtime(stage, arch="arm64", tools=tools)
    assert result.copied == [("libomp.dylib", str(made.brew / "libomp.dylib"))]
    assert result.unresolved == [] and result.not_resigned == []
    # What llvm-otool reads back: @rpath names only, beside the base system; no build-machine LC_RPATH.
    bar = otool("-L", stage / "libggml-bar.dylib")
    assert "@rpath/libomp.dylib" in bar and str(made.brew) not in bar
    assert otool("-L", stage / "libomp.dylib").splitlines()[1].strip().startswith("@rpath/libomp.dylib")
    for name in ("llama-demo", "libggml-bar.dylib", "libllama.dylib"):
        commands = otool("-l", stage / name).split("\n", 1)[1]  # after the line naming the file
        assert str(tmp_path) not in commands, name
        assert "path @loader_path" in commands, name
    # ld64.lld signed them; llvm-install-name-tool kept each edited file's ad-hoc signature matching.
    assert all(signature_matches(stage / f) for f in ("llama-demo", "libggml-bar.dylib", "libomp.dylib"))
    check = check_tree(stage, os_name="macos", glibc_max=None, arch="arm64", macos_min="13.3")
    assert check.problems == () and check.files_checked == 4
    # What a Mac's smoke run would start: the llama-* programs, and the ggml modules beside them.
    from pipeline.bundle.smoke import backend_modules, main_programs

    assert main_programs(stage, "macos") == ["llama-demo"]
    assert backend_modules(stage, "macos") == {"bar": ["libggml-bar.dylib"]}


def test_check_bundle_names_what_would_not_run_on_a_mac(tmp_path: Path) -> None:
    made = make_files(tmp_path)
    stage = stage_flat(made, tmp_path / "stage")
    lines = {
        p.line
        for p in check_tree(stage, os_name="macos", glibc_max=None, arch="arm64", macos_min="13.3").problems
    }
    build_lib = str(tmp_path / "build" / "lib")
    assert f"llama-demo: build-machine LC_RPATH {build_lib!r} (want @loader_path-relative)" in lines
    assert (
        f"libggml-bar.dylib: needs {made.brew / 'libomp.dylib'}: an absolute install name outside the macOS "
        "base system (want @rpath/... and the library in the bundle)"
    ) in lines
    # A newer deployment target than the leg's, an x86-64 file in an arm64 bundle, a broken signature.
    newer = make_files(tmp_path / "newer", minos="14.0")
    shutil.copy2(newer.lib / "libllama.dylib", stage / "libllama.dylib")
    other = make_files(tmp_path / "x64", "x64")
    shutil.copy2(other.lib / "libggml-bar.dylib", stage / "libggml-x64.dylib")
    data = bytearray((stage / "llama-demo").read_bytes())
    data[0x1000 + 8] ^= 0xFF
    (stage / "llama-demo").write_bytes(bytes(data))
    lines = {
        p.line
        for p in check_tree(stage, os_name="macos", glibc_max=None, arch="arm64", macos_min="13.3").problems
    }
    assert (
        "libllama.dylib: requires macOS 14.0 (LC_BUILD_VERSION minos), above the leg's macos_min = 13.3"
        in lines
    )
    assert "libggml-x64.dylib: built for x64, the bundle is for arm64" in lines
    assert (
        "llama-demo: no code signature that matches its bytes: arm64 macOS kills it "
        "(sign it ad hoc: codesign --force --sign -)"
    ) in lines


def test_an_x64_macos_bundle_needs_no_signature(tmp_path: Path) -> None:
    made = make_files(tmp_path, "x64")
    stage = stage_flat(made, tmp_path / "stage")
    assert read_macho(stage / "llama-demo")[0].arch == "x64"
    tools = MachoTools(install_name_tool=Path(shutil.which(TOOLS["int"]) or ""))
    complete_macho_runtime(stage, arch="x64", tools=tools)
    assert check_tree(stage, os_name="macos", glibc_max=None, arch="x64", macos_min="13.3").problems == ()


def test_a_macos_bundle_packs_checks_and_skips_its_smoke_run_on_linux(tmp_path: Path) -> None:
    make_files(tmp_path)
    source = tmp_path / "src"
    source.mkdir()
    (source / "LICENSE").write_text("MIT License\n")
    leg = Leg(
        name="metal-macos-arm64",
        backend="metal",
        os="macos",
        arch="arm64",
        runner="macos-26",
        cmake_args=("-DGGML_METAL=ON",),
    )
    record = LegRecord(
        leg=leg.name,
        backend="metal",
        os="macos",
        arch="arm64",
        started="2026-10-01T12:00:00+00:00",
        source={"tag": "b7000", "commit": "0" * 40, "path": str(source)},
    )
    toolchain = Toolchain(kind="clang", identity="clang-15")
    bundle = make_bundle(
        leg=leg,
        record=record,
        build_dir=tmp_path / "build",
        out_dir=tmp_path / "out",
        toolchain=toolchain,
        tag="b7000",
        commit="0" * 40,
    )
    assert bundle.name == "llama-b7000-bin-macos-arm64.tar.gz"
    result = check_bundle(bundle, scratch=tmp_path / "check", host_os="linux")
    assert result.ok, [p.line for p in result.problems]
    assert (result.os, result.arch, result.files_checked) == ("macos", "arm64", 4)
    # The Homebrew libomp it copied in travels with its keg's license.
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
    assert "llama-b7000/licenses/toolchain/LICENSE.TXT" in names, names
    assert result.smoke_skipped == "a macos bundle on a linux machine"


def closed_stage(tmp_path: Path) -> Path:
    """A flat stage after the closure: it passes check-bundle (the tests below each break one thing)."""
    stage = stage_flat(make_files(tmp_path), tmp_path / "stage")
    complete_macho_runtime(
        stage, arch="arm64", tools=MachoTools(install_name_tool=Path(shutil.which(TOOLS["int"]) or ""))
    )
    assert check(stage).problems == ()
    return stage


def check(root: Path) -> BundleCheck:
    return check_tree(root, os_name="macos", glibc_max=None, arch="arm64", macos_min="13.3")


def test_an_install_name_that_leaves_the_bundle_is_named_although_a_file_of_that_name_is_beside(
    tmp_path: Path,
) -> None:
    stage = closed_stage(tmp_path)
    # libllama.dylib is at the root, beside llama-demo; the name now points at ../Frameworks, outside.
    run(
        TOOLS["int"],
        "-change",
        "@rpath/libllama.dylib",
        "@loader_path/../Frameworks/libllama.dylib",
        stage / "llama-demo",
    )
    (tmp_path / "Frameworks").mkdir()
    shutil.copy2(stage / "libllama.dylib", tmp_path / "Frameworks" / "libllama.dylib")
    assert "@loader_path/../Frameworks/libllama.dylib" in otool("-L", stage / "llama-demo")
    assert [p.line for p in check(stage).problems] == [
        "llama-demo: needs @loader_path/../Frameworks/libllama.dylib: it points outside the bundle"
    ]


def test_an_lc_rpath_that_leaves_the_bundle_is_named_although_another_finds_the_library(
    tmp_path: Path,
) -> None:
    stage = closed_stage(tmp_path)
    run(TOOLS["int"], "-add_rpath", "@loader_path/../../..", stage / "llama-demo")
    assert "path @loader_path/../../.." in otool("-l", stage / "llama-demo")
    assert [p.line for p in check(stage).problems] == [
        "llama-demo: LC_RPATH '@loader_path/../../..' leaves the bundle"
    ]


def test_at_rpath_is_resolved_through_the_program_that_loads_the_library(tmp_path: Path) -> None:
    stage = closed_stage(tmp_path)
    # libllama keeps no LC_RPATH of its own: dyld finds its @rpath/libggml-bar.dylib through llama-demo's.
    run(TOOLS["int"], "-delete_rpath", "@loader_path", stage / "libllama.dylib")
    assert "LC_RPATH" not in otool("-l", stage / "libllama.dylib")
    assert check(stage).problems == ()
    # The library no program loads (a module opened with dlopen) is taken as loaded by each program.
    run(TOOLS["int"], "-delete_rpath", "@loader_path", stage / "libggml-bar.dylib")
    assert check(stage).problems == ()
    # Without the program's LC_RPATH nothing finds them.
    run(TOOLS["int"], "-delete_rpath", "@loader_path", stage / "llama-demo")
    lines = [p.line for p in check(stage).problems]
    assert (
        "llama-demo: needs @rpath/libllama.dylib: not found in the bundle through its LC_RPATHs or those of "
        "the files that load it"
    ) in lines


def test_mach_o_files_in_bin_and_lib_are_checked_there(tmp_path: Path) -> None:
    stage = closed_stage(tmp_path)
    for folder, names in {
        "bin": ["llama-demo"],
        "lib": ["libllama.dylib", "libggml-bar.dylib", "libomp.dylib"],
    }.items():
        (stage / folder).mkdir()
        for name in names:
            (stage / name).rename(stage / folder / name)
    # llama-demo's @loader_path is bin/ now: libllama.dylib is in lib/, so it is not found.
    result = check(stage)
    assert result.files_checked == 4
    assert [p.line for p in result.problems] == [
        "bin/llama-demo: needs @rpath/libllama.dylib: not found in the bundle through its LC_RPATHs or those of "
        "the files that load it"
    ]
    # An LC_RPATH to ../lib mends it; libllama's own @loader_path (lib/) finds the rest.
    run(TOOLS["int"], "-add_rpath", "@loader_path/../lib", stage / "bin" / "llama-demo")
    assert check(stage).problems == ()


def test_a_macos_bundle_with_no_mach_o_file_fails(tmp_path: Path) -> None:
    (tmp_path / "LICENSE").write_text("MIT\n")
    (tmp_path / "README.md").write_text("a bundle of nothing\n")
    result = check(tmp_path)
    assert result.files_checked == 0
    assert [p.line for p in result.problems] == [
        ".: no Mach-O program or library anywhere in the bundle: nothing was checked"
    ]
