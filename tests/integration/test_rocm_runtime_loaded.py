"""What a ROCm bundle must carry that no import names: libraries loaded by name at run time, and GCC's
libatomic, which TheRock's tarball does not hold.

A TheRock-shaped toolchain is built here with gcc (lib/, lib/llvm/lib, lib/rocm_sysdeps/lib, as the tarball
lays them out): libamdhip64 opens libamd_comgr with ``dlopen``, libhipblaslt needs libtensilelite-host, which
opens the unversioned ``libomp.so`` of lib/llvm/lib, and TheRock's private libnuma needs ``libatomic.so.1``,
found on this machine only. The shipped rocm backend's declarations (pipeline/backends/rocm.py) drive the
closure and check-bundle; what the loader does is the judge: the program runs from the bundle alone. A Windows
zip is made the same way with mingw: amdhip64 loads comgr with ``LoadLibrary``, its name as an ANSI or a
UTF-16 string.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.backends import runtime_profile
from pipeline.bundle.check import check_tree
from pipeline.bundle.closure import complete_runtime
from pipeline.bundle.pedeps import read_pe_imports
from pipeline.bundle.third_party import describe_third_party

pytestmark = pytest.mark.integration

MINGW = "x86_64-w64-mingw32-gcc"
SYSTEM_ATOMIC = Path("/usr/lib/x86_64-linux-gnu/libatomic.so.1")


def gcc(*args: str | Path) -> None:
    subprocess.run(["gcc", *map(str, args)], check=True)


def readelf_needed(path: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def _library(folder: Path, soname: str, source: str, tmp: Path, *link: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    c = tmp / f"{soname}.c"
    c.write_text(source)
    gcc("-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", folder / soname, c, *link)
    return folder / soname


def therock(tmp: Path, *, tensile_opens_omp: bool = True) -> Path:
    """A toolchain root shaped like TheRock's tarball; returns it."""
    root = tmp / "therock"
    lib, llvm, sysdeps = root / "lib", root / "lib" / "llvm" / "lib", root / "lib" / "rocm_sysdeps" / "lib"
    _library(lib, "libamd_comgr.so.3", "int comgr_demo(void) { return 1; }\n", tmp)
    _library(
        lib,
        "libamdhip64.so.7",
        '#include <dlfcn.h>\nint hip_demo(void) { return dlopen("libamd_comgr.so.3", RTLD_NOW) != 0; }\n',
        tmp,
        "-ldl",
    )
    _library(llvm, "libomp.so", "int omp_demo(void) { return 2; }\n", tmp)
    opens = '"libomp.so"' if tensile_opens_omp else '"libm.so.6"'
    _library(
        lib,
        "libtensilelite-host.so.1",
        f"#include <dlfcn.h>\nint tensile_demo(void) {{ return dlopen({opens}, RTLD_NOW) != 0; }}\n",
        tmp,
        "-ldl",
    )
    _library(
        lib,
        "libhipblaslt.so.1",
        "int tensile_demo(void);\nint blaslt_demo(void) { return 2 * tensile_demo(); }\n",
        tmp,
        f"-L{lib}",
        "-l:libtensilelite-host.so.1",
    )
    # An atomic the compiler leaves to libatomic (16 bytes): the DT_NEEDED is a real one.
    _library(
        sysdeps,
        "librocm_sysdeps_numa.so.1",
        "#include <stdatomic.h>\n_Atomic __int128 x;\n"
        "int numa_demo(void) { atomic_store(&x, 4); return (int)atomic_load(&x); }\n",
        tmp,
        "-Wl,--no-as-needed",
        "-latomic",
    )
    return root


def bundle_with_program(tmp: Path, toolchain: Path) -> Path:
    root = tmp / "bundle"
    root.mkdir()
    (root / "LICENSE").write_text("MIT\n")
    main = tmp / "main.c"
    main.write_text(
        "int hip_demo(void); int blaslt_demo(void); int numa_demo(void);\n"
        "int main(void) { return hip_demo() + blaslt_demo() + numa_demo(); }\n"
    )
    lib = toolchain / "lib"
    gcc(
        "-o",
        root / "llama-demo",
        main,
        f"-L{lib}",
        f"-L{lib}/rocm_sysdeps/lib",
        "-l:libamdhip64.so.7",
        "-l:libhipblaslt.so.1",
        "-l:librocm_sysdeps_numa.so.1",
        f"-Wl,-rpath-link,{lib}",
    )
    return root


@pytest.mark.skipif(not SYSTEM_ATOMIC.exists(), reason=f"{SYSTEM_ATOMIC} (libatomic1) is not installed")
def test_a_therock_bundle_carries_what_its_libraries_load_by_name_and_runs_from_the_bundle_alone(
    tmp_path: Path,
) -> None:
    toolchain = therock(tmp_path)
    # What the linker recorded: nothing names comgr or libomp; libnuma names libatomic, which TheRock lacks.
    assert "libamd_comgr.so.3" not in readelf_needed(toolchain / "lib" / "libamdhip64.so.7")
    assert "libomp.so" not in readelf_needed(toolchain / "lib" / "libtensilelite-host.so.1")
    assert "libatomic.so.1" in readelf_needed(
        toolchain / "lib" / "rocm_sysdeps" / "lib" / "librocm_sysdeps_numa.so.1"
    )
    root = bundle_with_program(tmp_path, toolchain)

    closure = complete_runtime(
        root, os_name="linux", backend="rocm", targets=("gfx1100",), toolchain_root=toolchain
    )
    copied = {c.path: c.origin for c in closure.copied}
    atomic_real = SYSTEM_ATOMIC.resolve()
    assert copied == {
        "libamdhip64.so.7": "lib/libamdhip64.so.7",
        "libamd_comgr.so.3": "lib/libamd_comgr.so.3",
        "libhipblaslt.so.1": "lib/libhipblaslt.so.1",
        "libtensilelite-host.so.1": "lib/libtensilelite-host.so.1",
        "libomp.so": "lib/llvm/lib/libomp.so",
        "librocm_sysdeps_numa.so.1": "lib/rocm_sysdeps/lib/librocm_sysdeps_numa.so.1",
        atomic_real.name: str(atomic_real),
        "libatomic.so.1": str(SYSTEM_ATOMIC),
    }
    assert closure.unresolved == ()
    # The loader's verdict: every dlopen and DT_NEEDED is met from the bundle ($ORIGIN), nothing else on the path.
    ran = subprocess.run([str(root / "llama-demo")], capture_output=True, check=False, env={})
    assert ran.returncode == 1 + 2 * 1 + 4, ran

    opened = runtime_profile("rocm", "linux").opened
    assert [p.line for p in check_tree(root, os_name="linux", glibc_max=None, opened=opened).problems] == []
    # The build machine's libatomic travels with its Debian package's copyright.
    listed = {
        e["path"]: e
        for e in describe_third_party(
            root, closure.copied, toolchain_root=toolchain, details={"kind": "rocm"}
        )
    }
    atomic = listed[atomic_real.name]
    assert (
        atomic["package"] == "libatomic1"
        and "licenses/toolchain/share/doc/libatomic1/copyright" in atomic["licenses"]
    )
    assert (root / "licenses/toolchain/share/doc/libatomic1/copyright").is_file()

    (root / "libomp.so").unlink()
    lines = [p.line for p in check_tree(root, os_name="linux", glibc_max=None, opened=opened).problems]
    assert len(lines) == 1 and lines[0].startswith(
        "libtensilelite-host.so.1: loads libomp.so by name at run time, and the bundle lacks it (ROCm/TheRock "
    ), lines
    ran = subprocess.run([str(root / "llama-demo")], capture_output=True, check=False, env={})
    assert ran.returncode != 1 + 2 * 1 + 4  # the loader agrees: without it the dlopen fails


def test_a_library_that_asks_for_no_such_name_needs_none_of_it(tmp_path: Path) -> None:
    toolchain = therock(tmp_path, tensile_opens_omp=False)
    root = bundle_with_program(tmp_path, toolchain)
    closure = complete_runtime(
        root, os_name="linux", backend="rocm", targets=("gfx1100",), toolchain_root=toolchain
    )
    assert "libomp.so" not in {c.path for c in closure.copied} and closure.unresolved == ()
    opened = runtime_profile("rocm", "linux").opened
    assert [p.line for p in check_tree(root, os_name="linux", glibc_max=None, opened=opened).problems] == []


@pytest.mark.skipif(
    shutil.which(MINGW) is None, reason=f"{MINGW} not installed (.ci/run installs gcc-mingw-w64-x86-64)"
)
@pytest.mark.parametrize("call", ['LoadLibraryA("amd_comgr0713.dll")', 'LoadLibraryW(L"amd_comgr0713.dll")'])
def test_a_windows_zip_carries_the_comgr_dll_amdhip64_loads_and_fails_without_it(
    tmp_path: Path, call: str
) -> None:
    bin_dir = tmp_path / "therock" / "bin"
    bin_dir.mkdir(parents=True)

    def mingw(*args: str | Path) -> None:
        subprocess.run([MINGW, *map(str, args)], check=True)

    (tmp_path / "comgr.c").write_text("__declspec(dllexport) int comgr_demo(void) { return 1; }\n")
    mingw("-shared", "-o", bin_dir / "amd_comgr0713.dll", tmp_path / "comgr.c")
    (tmp_path / "hip.c").write_text(
        f"#include <windows.h>\n__declspec(dllexport) int hip_demo(void) {{ return {call} != 0; }}\n"
    )
    mingw("-shared", "-o", bin_dir / "amdhip64_7.dll", tmp_path / "hip.c")
    root = tmp_path / "zip"
    root.mkdir()
    (root / "LICENSE").write_text("MIT\n")
    (tmp_path / "main.c").write_text("int hip_demo(void);\nint main(void) { return hip_demo(); }\n")
    mingw("-o", root / "llama-demo.exe", tmp_path / "main.c", bin_dir / "amdhip64_7.dll")
    # mingw's own reading: the comgr DLL is in no import table.
    dump = subprocess.run(
        ["x86_64-w64-mingw32-objdump", "-p", str(bin_dir / "amdhip64_7.dll")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "amd_comgr" not in "".join(line for line in dump.splitlines() if "DLL Name" in line)
    assert "amd_comgr0713.dll" not in [n.lower() for n in read_pe_imports(bin_dir / "amdhip64_7.dll")]

    closure = complete_runtime(
        root, os_name="windows", backend="rocm", targets=("gfx1151",), toolchain_root=tmp_path / "therock"
    )
    assert {c.path: c.origin for c in closure.copied} == {
        "amdhip64_7.dll": "bin/amdhip64_7.dll",
        "amd_comgr0713.dll": "bin/amd_comgr0713.dll",
    }
    opened = runtime_profile("rocm", "windows").opened
    assert [p.line for p in check_tree(root, os_name="windows", glibc_max=None, opened=opened).problems] == []
    (root / "amd_comgr0713.dll").unlink()
    lines = [p.line for p in check_tree(root, os_name="windows", glibc_max=None, opened=opened).problems]
    assert len(lines) == 1 and lines[0].startswith(
        "amdhip64_7.dll: loads amd_comgr0713.dll by name at run time, and the bundle lacks it"
    ), lines
