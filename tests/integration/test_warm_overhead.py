"""What a warm build costs beside CMake and Ninja: the record times every step, and what is not done
is not paid for (the goal: a warm build within half a second of raw cmake + ninja + ccache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scripts.bench.project import MATRIX, write_project
from tests.support.pipeline_cli import ROOT

pytestmark = pytest.mark.integration

STEPS = ["source", "toolchain", "preflight", "ccache", "configure", "build", "bundle", "check"]


def test_a_build_without_bundle_times_every_step_and_imports_no_bundle_code(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", units=1)
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(MATRIX)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PIPELINE_CACHE_HOME": str(tmp_path / "home")}
    env.pop("PIPELINE_MATRIX", None)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pipeline", "--matrix", str(matrix), "build", "cpu",
         "--source", str(project), "--out", str(tmp_path / "out"), "--ccache-dir", str(tmp_path / "ccache"),
         "--no-bundle"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    record = json.loads((tmp_path / "out" / "cpu" / "record.json").read_text())
    # Every step of the chain has its wall time; "package" (the archive writing) only with a bundle.
    assert sorted(record["phases"]) == sorted(STEPS)
    assert all(isinstance(v, float) and v >= 0 for v in record["phases"].values())
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "pipeline.leg.steps" in imported
    # --no-bundle: neither the bundle's code nor what it reads ELF files with.
    assert not {"pipeline.bundle.make", "pipeline.bundle.check", "elftools"} & imported


def _libraries_one_of_which_needs_libcuda(tmp_path: Path) -> Path:
    """``tmp_path/bundle`` with libggml-cuda.so, which needs libcuda.so.1 (a stand-in linked from outside the
    bundle), and libggml-base.so, which does not."""
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    root, stub = tmp_path / "bundle", tmp_path / "stub"
    root.mkdir()
    stub.mkdir()
    (tmp_path / "a.c").write_text("int cuInit(unsigned f) { return (int)f; }\n")
    (tmp_path / "b.c").write_text("extern int cuInit(unsigned); int use(void) { return cuInit(0); }\n")
    (tmp_path / "c.c").write_text("int plain(void) { return 1; }\n")
    subprocess.run(
        [cc, "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(stub / "libcuda.so.1"), "a.c"],
        cwd=tmp_path,
        check=True,
    )
    (stub / "libcuda.so").symlink_to("libcuda.so.1")
    subprocess.run(
        [cc, "-shared", "-fPIC", "-o", str(root / "libggml-cuda.so"), "b.c", f"-L{stub}", "-lcuda"],
        cwd=tmp_path,
        check=True,
    )
    subprocess.run(
        [cc, "-shared", "-fPIC", "-o", str(root / "libggml-base.so"), "c.c"], cwd=tmp_path, check=True
    )
    return root


def test_the_old_build_folder_is_moved_aside_and_gone_when_the_next_build_ends(tmp_path: Path) -> None:
    """The fresh build folder no longer waits for the old one's deletion (a second of a warm build
    on a busy disk): the old one is removed while CMake runs, and is gone when the run ends."""
    project = write_project(tmp_path / "project", units=1)
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(MATRIX)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PIPELINE_CACHE_HOME": str(tmp_path / "home")}
    env.pop("PIPELINE_MATRIX", None)
    leg = tmp_path / "out" / "cpu"
    # What a run stopped during the removal leaves: the next run removes it too.
    (leg / ".build.old-stopped" / "build" / "CMakeFiles").mkdir(parents=True)
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "pipeline", "--matrix", str(matrix), "build", "cpu", "--source", str(project),
             "--out", str(tmp_path / "out"), "--ccache-dir", str(tmp_path / "ccache"), "--no-bundle"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        marker = leg / "build" / "mine.txt"
        assert not marker.exists()  # a fresh folder: nothing of the build before
        marker.write_text("left by the build before\n")
    assert sorted(p.name for p in leg.iterdir() if p.name.startswith(".")) == [
        ".lock"
    ]  # the leg folder's lock
    record = json.loads((leg / "record.json").read_text())
    # Nothing was left behind: no warning of a folder that could not be removed.
    assert record["status"] == "success"
    assert not [w for w in record["warnings"] if "could not remove" in w], record["warnings"]


def test_only_files_that_name_the_driver_are_parsed_to_find_its_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    from pipeline.bundle import driver_standin

    root = _libraries_one_of_which_needs_libcuda(tmp_path)
    parsed: list[str] = []
    real = driver_standin.read_elf
    monkeypatch.setattr(driver_standin, "read_elf", lambda p: (parsed.append(p.name), real(p))[1])
    assert driver_standin.driver_users(root) == ("libggml-cuda.so",)
    # The library that never names libcuda.so.1 was not parsed.
    assert parsed == ["libggml-cuda.so"]


def test_check_bundle_parses_each_elf_file_once_and_the_driver_look_up_takes_what_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The libraries, RUNPATHs, glibc floor and architecture of a file come from one parse of it, and the
    smoke run's look for the files that need libcuda.so.1 parses none again."""

    from elftools.elf.elffile import ELFFile

    from pipeline.bundle import driver_standin, elfdeps
    from pipeline.bundle.check import check_tree
    from pipeline.util.this_machine import host_arch

    root = _libraries_one_of_which_needs_libcuda(tmp_path)
    (root / "LICENSE").write_text("MIT\n")
    parsed: list[str] = []

    def counting(stream: Any) -> ELFFile:
        parsed.append(Path(stream.name).name)
        return ELFFile(stream)

    monkeypatch.setattr(elfdeps, "ELFFile", counting)
    monkeypatch.setattr(driver_standin, "ELFFile", counting)
    result = check_tree(root, os_name="linux", glibc_max=None)
    assert result.files_checked == 2
    # The architecture came with the rest (it was a second parse of every file).
    assert {info.arch for _, info in result.elves} == {host_arch()}
    assert driver_standin.driver_users(root, result.elves) == ("libggml-cuda.so",)
    assert sorted(parsed) == ["libggml-base.so", "libggml-cuda.so"]


def test_the_closure_sets_every_files_runpath_in_one_patchelf_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """patchelf edits each file it is given on its own: the files that get the same RUNPATH share one run
    (a warm build of the real tree's cpu leg ran it five times), and a file already right gets none."""
    import shutil

    from pipeline.bundle import closure
    from pipeline.bundle.elfdeps import read_elf

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    stage = tmp_path / "bundle"
    stage.mkdir()
    (tmp_path / "lib.c").write_text("int plain(void) { return 1; }\n")
    (tmp_path / "main.c").write_text("int plain(void); int main(void) { return plain(); }\n")
    subprocess.run(
        [cc, "-shared", "-fPIC", "-o", str(stage / "libplain.so"), "lib.c", "-Wl,-rpath,/build/lib"],
        cwd=tmp_path,
        check=True,
    )
    for name, rpath in (("llama-a", "/build/bin"), ("llama-b", "/build/bin"), ("llama-c", "$ORIGIN")):
        subprocess.run(
            [
                cc,
                "-o",
                str(stage / name),
                "main.c",
                f"-L{stage}",
                "-lplain",
                "-Wl,--enable-new-dtags",
                f"-Wl,-rpath,{rpath}",
            ],
            cwd=tmp_path,
            check=True,
        )
    runs: list[list[str]] = []
    real = closure.run_child
    monkeypatch.setattr(closure, "run_child", lambda cmd, **kw: (runs.append(list(cmd)), real(cmd, **kw))[1])
    made = closure.complete_runtime(stage, os_name="linux", backend="cpu", targets=(), toolchain_root=None)
    assert sorted(made.runpaths) == [
        ("libplain.so", "$ORIGIN"),
        ("llama-a", "$ORIGIN"),
        ("llama-b", "$ORIGIN"),
    ]
    assert len(runs) == 1 and sorted(Path(a).name for a in runs[0][3:]) == [
        "libplain.so",
        "llama-a",
        "llama-b",
    ]
    assert {
        name: ":".join(read_elf(stage / name).runpath)
        for name in ("libplain.so", "llama-a", "llama-b", "llama-c")
    } == dict.fromkeys(("libplain.so", "llama-a", "llama-b", "llama-c"), "$ORIGIN")
