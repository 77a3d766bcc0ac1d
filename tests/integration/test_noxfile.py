"""The noxfile itself: sessions come from the matrix, a leg session builds, bad input is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from tests.support.gitrepos import commit_tree
from tests.support.pipeline_cli import ROOT, run_pipeline
from tests.support.projects import write_cpp_project, write_matrix


def _nox(
    args: list[str], matrix: Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # --force-venv-backend none: this test runs in an environment that has the
    # project installed already; creating a venv per test would only measure pip.
    # The session's `python` is then PATH's: this interpreter's, as in an activated environment.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), "--force-venv-backend", "none", *args],
        cwd=cwd,
        env={
            **os.environ,
            "PATH": path,
            "PIPELINE_MATRIX": str(matrix),
            "PYTHONPATH": str(ROOT),
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_sessions_come_from_the_matrix(tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path / "m.toml", extra='\n[legs.cpu-clang]\nbackend = "cpu"\n')
    proc = _nox(["-l"], matrix, tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in (
        "cpu",
        "cpu-clang",
        "resolve",
        "nightly",
        "tests",
        "lint",
        "docs",
        "report",
        "prune",
        "publish",
        "bench",
    ):
        assert f"- {name} ->" in proc.stdout or f"* {name} ->" in proc.stdout, name


def test_leg_session_builds_with_arguments_after_dashes(tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path / "m.toml")
    write_cpp_project(tmp_path / "proj", units=3)
    out = tmp_path / "out"
    proc = _nox(
        [
            "-s",
            "cpu",
            "--",
            "--source",
            str(tmp_path / "proj"),
            "--out",
            str(out),
            "--ccache-dir",
            str(tmp_path / "cache"),
            "--no-bundle",
        ],
        matrix,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((out / "cpu" / "record.json").read_text())
    assert record["ccache"]["misses"] == 4


def test_a_leg_session_takes_the_matrix_after_dashes(tmp_path: Path) -> None:
    """`nox -s cpu -- --matrix OTHER`: the global flag after the command reaches the build."""
    matrix = write_matrix(tmp_path / "m.toml")
    other = tmp_path / "other.toml"
    other.write_text(
        matrix.read_text().replace('"-DCMAKE_BUILD_TYPE=Release"', '"-DCMAKE_BUILD_TYPE=MinSizeRel"')
    )
    write_cpp_project(tmp_path / "proj", units=1)
    out = tmp_path / "out"
    proc = _nox(
        [
            "-s",
            "cpu",
            "--",
            "--matrix",
            str(other),
            "--source",
            str(tmp_path / "proj"),
            "--out",
            str(out),
            "--ccache-dir",
            str(tmp_path / "cache"),
            "--no-bundle",
        ],
        matrix,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        "-DCMAKE_BUILD_TYPE=MinSizeRel" in json.loads((out / "cpu" / "record.json").read_text())["cmake_args"]
    )


def test_the_resolve_session_writes_where_the_legs_out_is(tmp_path: Path) -> None:
    """`--out DIR` after dashes, no PIPELINE_OUT: the run's resolution lands in DIR, beside the legs' folders."""
    matrix = write_matrix(tmp_path / "m.toml")
    out = tmp_path / "elsewhere"
    env = dict.fromkeys(("PIPELINE_OUT", "PIPELINE_RESOLVED"), "")
    proc = _nox(["-s", "resolve", "--", "--no-source", "--out", str(out)], matrix, tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((out / "resolved.json").read_text())["legs"] == {}


def test_bad_matrix_is_one_line(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text("[legs.cpu]\nbackend = 'gpu'\n")
    proc = _nox(["-l"], matrix, tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"error: {matrix}: legs.cpu.backend" in proc.stderr


def test_resolve_once_then_legs_without_dependencies_use_the_parents_build(
    http_server, tmp_path: Path
) -> None:
    """`nox -s resolve`, a newer build appears, two legs run with --no-dependencies:
    both build with the parent's toolchain, not the newer one."""
    from tests.support.rocm_leg import (
        NEWER,
        NOW,
        VERSION,
        make_therock_from_debian_clang,
        serve_index,
        tarball_name,
    )

    family = "gfx110X-all"
    first = {
        tarball_name("linux", family, VERSION): make_therock_from_debian_clang(
            tmp_path / "t.tgz"
        ).read_bytes()
    }
    index_url = serve_index(http_server, first)
    matrix = write_matrix(
        tmp_path / "m.toml",
        extra=f"""
[rocm]
policy = "latest"
index_url = "{index_url}"

[legs.rocm-a]
backend = "rocm"
family = "{family}"
targets = ["gfx1100"]

[legs.rocm-b]
backend = "rocm"
family = "{family}"
targets = ["gfx1101"]
# One family, two legs: each bundle needs a name of its own (matrix.toml refuses one name for two).
bundle_name = "llama-{{tag}}-bin-ubuntu-rocm-gfx1101-x64"
""",
    )
    write_cpp_project(tmp_path / "proj", units=2)
    out = tmp_path / "out"
    env_out = {"PIPELINE_OUT": str(out), "PIPELINE_NOW": NOW}

    proc = _nox(["-s", "resolve", "--", "--no-source"], matrix, tmp_path, env=env_out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    resolved = out / "resolved.json"
    data = json.loads(resolved.read_text())
    assert {leg: entry["version"] for leg, entry in data["legs"].items()} == {
        "rocm-a": VERSION,
        "rocm-b": VERSION,
    }

    # The index gains a newer build between the parent job and the leg jobs.
    serve_index(http_server, {**first, tarball_name("linux", family, NEWER): b"never downloaded"})
    for leg in ("rocm-a", "rocm-b"):
        proc = _nox(
            [
                "-s",
                leg,
                "--no-dependencies",
                "--",
                "--source",
                str(tmp_path / "proj"),
                "--ccache-dir",
                str(tmp_path / "cache"),
                "--no-bundle",
            ],
            matrix,
            tmp_path,
            env={**env_out, "PIPELINE_RESOLVED": str(resolved)},
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        record = json.loads((out / leg / "record.json").read_text())
        assert record["toolchain"]["identity"] == f"rocm-{VERSION}"
    assert http_server.hits("/tarball-multi-arch/" + tarball_name("linux", family, NEWER)) == 0


def test_nightly_builds_what_this_os_can_and_says_why_it_skips_the_rest(tmp_path: Path) -> None:
    matrix = write_matrix(
        tmp_path / "m.toml",
        extra='\n[legs.cpu-windows]\nbackend = "cpu"\nos = "windows"\n',
    )
    write_cpp_project(tmp_path / "proj", units=2)
    out = tmp_path / "out"
    proc = _nox(
        [
            "-s",
            "nightly",
            "--",
            "--source",
            str(tmp_path / "proj"),
            "--ccache-dir",
            str(tmp_path / "cache"),
            "--no-bundle",
        ],
        matrix,
        tmp_path,
        env={"PIPELINE_OUT": str(out)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipping cpu-windows: it builds on windows, this machine runs linux" in proc.stderr
    assert json.loads((out / "cpu" / "record.json").read_text())["status"] == "success"
    assert not (out / "cpu-windows").exists()
    assert (out / "report.html").is_file()


def test_leg_session_installs_once_then_starts_without_reinstalling(tmp_path: Path) -> None:
    """A real virtualenv (uv where installed): the first run installs the project, the
    second on the unchanged checkout does not, and neither prints a warning."""
    matrix = write_matrix(tmp_path / "m.toml")
    # A checkout, as a user builds: a plain folder would get the (wanted) not-a-git-repository warning.
    commit_tree(write_cpp_project(tmp_path / "proj", units=2), when=datetime(2026, 3, 1, tzinfo=UTC))
    args = [
        "--envdir",
        str(tmp_path / "envs"),
        "-s",
        "cpu",
        "--",
        "--source",
        str(tmp_path / "proj"),
        "--out",
        str(tmp_path / "out"),
        "--ccache-dir",
        str(tmp_path / "cache"),
        "--no-bundle",
    ]
    env = {**os.environ, "PIPELINE_MATRIX": str(matrix)}
    env.pop("PYTHONPATH", None)  # the session's venv must find the project by its own install
    runs = [
        subprocess.run(
            [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        for _ in range(2)
    ]
    for proc in runs:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "warning" not in (proc.stdout + proc.stderr).lower(), proc.stderr
    assert "pip install -e ." in runs[0].stderr
    assert "pip install" not in runs[1].stderr
    assert "not reinstalled" in runs[1].stderr


def test_install_fingerprint_follows_pyproject_and_extras(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from noxfile import install_fingerprint

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    first = install_fingerprint(tmp_path, "")
    assert install_fingerprint(tmp_path, "") == first
    assert install_fingerprint(tmp_path, "[test]") != first
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["rich"]\n')
    assert install_fingerprint(tmp_path, "") != first


def _offline_matrix(tmp_path: Path) -> Path:
    """A matrix whose source repository does not exist (its clone fails: SourceError), and a disabled leg."""
    matrix = write_matrix(
        tmp_path / "m.toml", extra='\n[legs.cpu-off]\nbackend = "cpu"\ndisabled = "no runner for it yet"\n'
    )
    matrix.write_text(
        matrix.read_text().replace("https://example.invalid/llama.cpp.git", str(tmp_path / "no-such-repo"))
    )
    return matrix


def test_a_failed_leg_session_ends_with_the_pipelines_code_and_its_error_on_stderr(tmp_path: Path) -> None:
    matrix = _offline_matrix(tmp_path)
    args = ["--out", str(tmp_path / "out"), "--tag", "b1"]
    direct = run_pipeline(["--matrix", str(matrix), "build", "cpu", *args])
    assert direct.returncode not in (0, 1), direct.stderr  # a code of its own, which nox's 1 would hide
    error = next(line for line in direct.stderr.splitlines() if line.startswith("error: "))
    proc = _nox(["-s", "cpu", "--", *args], matrix, tmp_path)
    assert proc.returncode == direct.returncode, proc.stdout + proc.stderr
    assert error in proc.stderr.splitlines()
    assert "error: " not in proc.stdout


def test_a_disabled_leg_is_a_session_that_says_why_and_exits_2(tmp_path: Path) -> None:
    matrix = _offline_matrix(tmp_path)
    listed = _nox(["-l"], matrix, tmp_path)
    assert (
        "- cpu-off -> Build the cpu-off bundle (cpu, linux/x64) (disabled: no runner for it yet)."
        in listed.stdout
    )
    proc = _nox(["-s", "cpu-off"], matrix, tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"leg 'cpu-off' is disabled in {matrix}: no runner for it yet" in proc.stderr
    assert "python -m pipeline" not in proc.stderr  # refused by the noxfile: nothing installed or run


def test_a_reason_with_newlines_cannot_start_a_workflow_command_on_actions(tmp_path: Path) -> None:
    """matrix.toml's free text printed into an Actions log: a line of its own starting with ``::`` is a command
    the runner executes. Every way the reason is printed (nox's listing, its refusal, ``legs``, the pipeline's
    error annotation) keeps it inside its line, escaped as Actions specifies (``%0A``, ``%25``)."""
    matrix = write_matrix(
        tmp_path / "m.toml",
        extra=(
            '\n[legs.cpu-off]\nbackend = "cpu"\ndisabled = """no runner\n::error::injected 100%\n::add-mask::secret"""\n'
        ),
    )
    actions = {"GITHUB_ACTIONS": "true"}
    listed = _nox(["-l"], matrix, tmp_path, env=actions)
    refused = _nox(["-s", "cpu-off"], matrix, tmp_path, env=actions)
    legs = run_pipeline(["--matrix", str(matrix), "legs"], env=actions)
    build = run_pipeline(["--matrix", str(matrix), "build", "cpu-off"], env=actions)
    assert refused.returncode == 2 and legs.returncode == 0 and build.returncode == 2
    escaped = "no runner%0A::error::injected 100%25%0A::add-mask::secret"
    for proc in (listed, refused, legs, build):
        out = proc.stdout + proc.stderr
        # An error is one line wherever it runs: its newlines are spaces before the annotation escapes it.
        assert (escaped if proc is not build else escaped.replace("%0A", " ")) in out, out
        injected = [
            line
            for line in out.splitlines()
            if line.lstrip().startswith(("::error::injected", "::add-mask::"))
        ]
        assert injected == [], out
    # Outside Actions the reason is printed as written.
    assert (
        "no runner\n::error::injected 100%"
        in run_pipeline(["--matrix", str(matrix), "legs"], env={"GITHUB_ACTIONS": ""}).stdout
    )


def test_a_mistyped_session_gets_the_nearest_name(tmp_path: Path) -> None:
    matrix = write_matrix(tmp_path / "m.toml")
    proc = _nox(["-s", "cpux", "--", "-s", "not-a-session"], matrix, tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # nox's own code for a session it does not know
    assert proc.stderr.splitlines() == [
        "error: noxfile.py has no session 'cpux' (did you mean 'cpu'?); `nox -l` lists them"
    ]


def test_nox_runs_the_uv_binary_of_its_environment_not_a_uv_shim_on_path(tmp_path: Path) -> None:
    """The test extra installs uv beside nox, as the README does: nox's uv backend then runs the uv
    package's binary, never a ``uv`` earlier on PATH (a pyenv shim costs 0.17 s per nox start, which
    the bench's ``nox -s cpu`` figure paid)."""
    shim = tmp_path / "bin" / "uv"
    shim.parent.mkdir()
    marker = tmp_path / "shim-ran"
    shim.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n", encoding="utf-8")
    shim.chmod(0o755)
    code = "import nox.virtualenv as v; print(v.find_uv()[1])"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": os.pathsep.join([str(shim.parent), os.environ.get("PATH", "")])},
    )
    assert proc.returncode == 0, proc.stderr
    found = Path(proc.stdout.strip())
    assert found.is_absolute() and found.is_file(), found
    with found.open("rb") as binary:
        assert binary.read(4) == b"\x7fELF", found
    assert not marker.exists(), "nox ran the uv on PATH"
