"""Two legs whose bundles share a name: matrix.toml refuses them, and a build never replaces another leg's bundle.

`cpu` and a `cpu-o3` with other flags both get upstream's default name
(``llama-<tag>-bin-ubuntu-x64.tar.gz``): each build wrote ``out/dist/`` under
that name, and the second silently replaced the first's bundle.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import write_cpp_project, write_matrix

pytestmark = pytest.mark.integration

O3_LEG = """
[legs.cpu-o3]
backend = "cpu"
os = "linux"
cmake_args = ["-DCMAKE_C_FLAGS=-O3"]
"""


def one_error_line(proc: subprocess.CompletedProcess[str], code: int) -> str:
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("command", [["legs"], ["matrix", "--github"], ["build", "cpu", "--no-bundle"]])
def test_the_matrix_refuses_two_legs_with_one_bundle_name(tmp_path: Path, command: list[str]) -> None:
    matrix = write_matrix(tmp_path / "m.toml", extra=O3_LEG)
    proc = run_pipeline(["--matrix", str(matrix), *command, "--out", str(tmp_path / "out")] if command[0] == "build"
                        else ["--matrix", str(matrix), *command])  # fmt: skip
    assert one_error_line(proc, 2) == (
        f"error: {matrix}: legs 'cpu' and 'cpu-o3' both name their bundle 'llama-b1-bin-ubuntu-x64.tar.gz': give "
        "one a bundle_name of its own (its template may use {leg})"
    )
    assert not (tmp_path / "out").exists()  # refused before any work


def test_names_that_differ_only_in_case_clash_and_a_template_of_its_own_passes(tmp_path: Path) -> None:
    upper = write_matrix(
        tmp_path / "upper.toml", extra=O3_LEG + 'bundle_name = "LLAMA-{tag}-bin-ubuntu-x64"\n'
    )
    assert "both name their bundle 'LLAMA-b1-bin-ubuntu-x64.tar.gz'" in one_error_line(
        run_pipeline(["--matrix", str(upper), "legs"]), 2
    )
    own = write_matrix(
        tmp_path / "own.toml", extra=O3_LEG + 'bundle_name = "llama-{tag}-bin-ubuntu-o3-x64"\n'
    )
    proc = run_pipeline(["--matrix", str(own), "legs"])
    assert proc.returncode == 0 and "cpu-o3" in proc.stdout, proc.stderr


def test_a_build_never_replaces_another_legs_bundle(tmp_path: Path) -> None:
    """Two matrix files into one --out (each valid alone): the second leg's bundle would take the first's name."""
    project = write_cpp_project(tmp_path / "project", units=1)
    out, cache = tmp_path / "out", tmp_path / "ccache"
    first = write_matrix(tmp_path / "first.toml")
    # The same legs, cpu disabled: only cpu-o3 is built, so no two built legs clash in either file.
    second = write_matrix(tmp_path / "second.toml", extra=O3_LEG)
    second.write_text(
        second.read_text().replace('os = "linux"\n', 'os = "linux"\ndisabled = "not here"\n', 1)
    )
    build = ["build", "--source", str(project), "--out", str(out), "--ccache-dir", str(cache), "--tag", "b5"]
    made = run_pipeline(["--matrix", str(first), build[0], "cpu", *build[1:]])
    assert made.returncode == 0, made.stdout + made.stderr
    bundle = out / "dist" / "llama-b5-bin-ubuntu-x64.tar.gz"
    before = hashlib.sha256(bundle.read_bytes()).hexdigest()
    proc = run_pipeline(["--matrix", str(second), build[0], "cpu-o3", *build[1:]])
    assert one_error_line(proc, 9) == (
        f"error: cpu-o3: {bundle} is leg 'cpu''s bundle; refusing to replace it (give 'cpu-o3' a bundle_name of "
        "its own, or build it into another --out)"
    )
    assert hashlib.sha256(bundle.read_bytes()).hexdigest() == before
    # The first leg rebuilds its own bundle in place.
    again = run_pipeline(["--matrix", str(first), build[0], "cpu", *build[1:]])
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_file_name_with_a_backslash_is_refused_at_build_time(tmp_path: Path) -> None:
    """A program ``bin/odd\\back`` (a legal Linux name) packed as is, then read back by verify as ``odd/back``:
    a bundle its own verify refused. The build refuses it instead, naming the file, before dist/ is written."""
    project = write_cpp_project(tmp_path / "project", units=1)
    odd = "${CMAKE_BINARY_DIR}/bin/odd\\\\back"
    with (project / "CMakeLists.txt").open("a") as fh:
        fh.write(
            f'file(WRITE "{odd}" "#!/bin/sh\\n")\n'
            f'file(CHMOD "{odd}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)\n'
        )
    out = tmp_path / "out"
    proc = run_pipeline(["--matrix", str(write_matrix(tmp_path / "m.toml")), "build", "cpu", "--source", str(project),
                         "--out", str(out), "--ccache-dir", str(tmp_path / "ccache"), "--tag", "b5"])  # fmt: skip
    made = out / "cpu" / "build" / "bin" / "odd\\back"
    assert made.is_file()  # the build made it, under that one name
    line = one_error_line(proc, 9)
    assert line.endswith(
        "cannot go into the bundle as 'odd\\\\back': a backslash in its name, which a bundle's "
        "readers and Windows take for a folder separator (rename it)"
    ), line
    assert not (out / "dist").exists() or list((out / "dist").iterdir()) == []
