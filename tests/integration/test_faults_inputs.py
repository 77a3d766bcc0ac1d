"""Bad inputs and unwritable outputs, as a hostile environment gives them: `python -m pipeline` each time.

For every case: the documented exit code, exactly one line on stderr naming
what is wrong and where, no traceback, and nothing half-written on disk (no
output file, no temp file left beside it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pipeline.errors import OS_ERROR_EXIT
from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import write_cpp_project, write_matrix

USAGE, CONFIG, BUNDLE, GENERIC = 2, 2, 9, 1


@dataclass(frozen=True)
class Case:
    args: list[str]
    code: int
    says: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    # Paths (relative to the workspace) that must not exist afterwards.
    absent: tuple[str, ...] = ()
    # Extra set-up in the workspace before the run.
    setup: Callable[[Path], None] | None = None


def _matrix_with(extra: str) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        (ws / "matrix.toml").write_text((ws / "matrix.toml").read_text() + extra)

    return setup


def _bom(ws: Path) -> None:
    (ws / "matrix.toml").write_bytes(b"\xef\xbb\xbf" + (ws / "matrix.toml").read_bytes())


def _record(ws: Path, **fields: object) -> None:
    base: dict[str, object] = {
        "leg": "cpu",
        "backend": "cpu",
        "os": "linux",
        "started": "2026-08-09T06:00:00Z",
    }
    base.update(fields)
    rec = ws / "recs" / "cpu" / "record.json"
    rec.parent.mkdir(parents=True, exist_ok=True)
    rec.write_text(json.dumps({k: v for k, v in base.items() if v is not None}))


def _fifo(ws: Path) -> None:
    (ws / "a").mkdir()
    (ws / "b").mkdir()
    (ws / "a" / "x").write_text("same")
    (ws / "b" / "x").write_text("same")
    os.mkfifo(ws / "a" / "pipe")


def _ninja(ws: Path) -> None:
    (ws / "bd").mkdir()
    (ws / "bd" / ".ninja_log").write_text("# ninja log v5\n0\t10\t0\tfoo.o\tabc\n")


BUILD = ["build", "cpu", "--source", "proj"]

CASES: dict[str, Case] = {
    # ---- unwritable outputs: exit 11, the path and the reason
    "--out is a file": Case([*BUILD, "--out", "afile"], OS_ERROR_EXIT, ("afile/cpu", "Not a directory")),
    "--out is /dev/null": Case(
        [*BUILD, "--out", "/dev/null"], OS_ERROR_EXIT, ("/dev/null/cpu", "Not a directory")
    ),
    # Root ignores permission bits: sysfs is a place even root cannot create a folder in.
    "--out not creatable": Case(
        [*BUILD, "--out", "/sys/pipeline-out"], OS_ERROR_EXIT, ("/sys/pipeline-out",)
    ),
    "--ccache-dir under a file": Case(
        [*BUILD, "--out", "out", "--ccache-dir", "afile/cc"],
        OS_ERROR_EXIT,
        ("afile/cc", "Not a directory"),
        absent=("out/cpu/build",),
    ),
    "CCACHE_DIR under /dev/null": Case(
        [*BUILD, "--out", "out"],
        OS_ERROR_EXIT,
        ("/dev/null/cc",),
        env={"CCACHE_DIR": "/dev/null/cc"},
        absent=("out/cpu/build",),
    ),
    "resolve --write at a folder": Case(
        ["resolve", "--no-source", "--write", "adir"], OS_ERROR_EXIT, ("adir", "is a folder")
    ),
    "resolve --write under a file": Case(
        ["resolve", "--no-source", "--write", "afile/r.json"],
        OS_ERROR_EXIT,
        ("afile", "exists and is not a folder"),
    ),
    "report --html at a folder": Case(
        ["report", "--out", "recs", "--html", "adir"], OS_ERROR_EXIT, ("adir", "is a folder"), setup=_record
    ),
    "report --html under a file": Case(
        ["report", "--out", "recs", "--html", "afile/r.html"], OS_ERROR_EXIT, ("afile",), setup=_record
    ),
    "timings --trace at a folder": Case(
        ["timings", "bd", "--trace", "adir"], OS_ERROR_EXIT, ("adir", "is a folder"), setup=_ninja
    ),
    "timings --trace under a file": Case(
        ["timings", "bd", "--trace", "afile/t.json"], OS_ERROR_EXIT, ("afile",), setup=_ninja
    ),
    "GITHUB_OUTPUT is a folder": Case(
        ["cache-key", "cpu", "--tag", "b1"],
        OS_ERROR_EXIT,
        ("adir", "Is a directory"),
        env={"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": "adir"},
    ),
    "GITHUB_OUTPUT under a file": Case(
        ["cache-key", "cpu", "--tag", "b1"],
        OS_ERROR_EXIT,
        ("afile/o",),
        env={"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": "afile/o"},
    ),
    # ---- numbers, strings, dates and URLs that validation must refuse
    "nan threshold": Case(
        ["legs"],
        CONFIG,
        ("report.hit_rate_warning", "a finite number"),
        setup=_matrix_with("\n[report]\nhit_rate_warning = nan\n"),
    ),
    "inf hours": Case(
        ["legs"],
        CONFIG,
        ("source.min_age_hours", "a finite number"),
        setup=lambda ws: (ws / "matrix.toml").write_text(
            (ws / "matrix.toml").read_text().replace('tag = "b1"', 'tag = "b1"\nmin_age_hours = inf')
        ),
    ),
    "1e308 days": Case(
        ["legs"],
        CONFIG,
        ("ccache.evict_older_than_days", "between"),
        setup=lambda ws: (ws / "matrix.toml").write_text(
            (ws / "matrix.toml").read_text().replace("[ccache]", "[ccache]\nevict_older_than_days = 1e308")
        ),
    ),
    "empty runner": Case(
        ["matrix"], CONFIG, ("legs.cpu.runner", "non-empty"), setup=_matrix_with('runner = ""\n')
    ),
    "BOM": Case(["legs"], CONFIG, ("matrix.toml", "byte order mark"), setup=_bom),
    "rocm.source, the key's older name": Case(
        ["legs"],
        CONFIG,
        ("matrix.toml", "rocm.source", "renamed to rocm.distribution"),
        setup=_matrix_with('\n[rocm]\nsource = "wheels"\n'),
    ),
    "malformed IPv6 index_url in matrix": Case(
        ["legs"],
        CONFIG,
        ("rocm.index_url", "well-formed URL"),
        setup=_matrix_with('\n[rocm]\nindex_url = "http://[::1"\n'),
    ),
    "malformed IPv6 --index-url": Case(
        ["resolve", "--os", "linux", "--family", "gfx1151", "--index-url", "http://[::1"],
        USAGE,
        ("--index-url", "malformed URL"),
    ),
    "malformed IPv6 --remote-cache": Case(
        [*BUILD, "--out", "out", "--remote-cache", "http://u:pw@[::1"],
        USAGE,
        ("--remote-cache", "malformed URL", "http://***@[::1"),
        absent=("out",),
    ),
    "--now in year 1": Case(
        ["resolve", "--os", "linux", "--family", "gfx1151", "--now", "0001-01-01T00:00:00+01:00"],
        USAGE,
        ("--now", "outside"),
    ),
    "--now in year 9999": Case(
        ["resolve", "--os", "linux", "--family", "gfx1151", "--now", "9999-12-31T23:00:00-05:00"],
        USAGE,
        ("--now", "outside"),
    ),
    "PIPELINE_HTTP_RETRY_BUDGET nan": Case(
        ["resolve", "--os", "linux", "--family", "gfx1151"],
        USAGE,
        ("PIPELINE_HTTP_RETRY_BUDGET",),
        env={"PIPELINE_HTTP_RETRY_BUDGET": "nan"},
    ),
    # ---- records and folders
    "record without backend": Case(
        ["report", "--out", "recs"],
        GENERIC,
        ("recs/cpu/record.json", "bad record", "backend"),
        setup=lambda ws: _record(ws, backend=None),
    ),
    "record without os": Case(
        ["cache-save", "cpu", "--out", "recs"],
        GENERIC,
        ("recs/cpu/record.json", "'os'"),
        setup=lambda ws: _record(ws, os=None),
    ),
    "compare a folder with a FIFO": Case(
        ["compare", "a", "b"], BUNDLE, ("a/pipe", "not a regular file"), setup=_fifo
    ),
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    write_matrix(tmp_path / "matrix.toml")
    write_cpp_project(tmp_path / "proj", units=2)
    (tmp_path / "afile").write_text("a file where a folder is expected\n")
    (tmp_path / "adir").mkdir()
    return tmp_path


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if "proj" not in p.parts}


@pytest.mark.parametrize("name", CASES)
def test_fault_gives_one_line_and_its_exit_code(name: str, workspace: Path) -> None:
    case = CASES[name]
    if case.setup:
        case.setup(workspace)
    before = _tree(workspace)
    proc = run_pipeline(
        ["--matrix", "matrix.toml", *case.args],
        cwd=workspace,
        env={"PIPELINE_CACHE_HOME": str(workspace / "home"), **case.env},
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert proc.returncode == case.code, proc.stderr
    for text in case.says:
        assert text in lines[0], lines[0]
    # Nothing half-written: no temp file, no output the run was refused to make.
    new = _tree(workspace) - before
    assert not [p for p in new if p.endswith(".tmp") or ".part" in p], new
    for path in case.absent:
        assert not (workspace / path).exists(), path
    assert not (workspace / "adir").is_file() and (workspace / "afile").is_file()
    assert (workspace / "afile").read_text() == "a file where a folder is expected\n"


def test_debug_shows_the_traceback_behind_the_line(workspace: Path) -> None:
    for how in (["--debug"], []):
        env = {} if how else {"PIPELINE_DEBUG": "1"}
        proc = run_pipeline(
            ["--matrix", "matrix.toml", *how, *BUILD, "--out", "afile"], cwd=workspace, env=env
        )
        assert proc.returncode == OS_ERROR_EXIT
        assert "Traceback" in proc.stderr and "NotADirectoryError" in proc.stderr
        assert proc.stderr.strip().splitlines()[-1].startswith("error: build: ")


def test_a_ninja_step_ending_before_it_starts_is_skipped_with_a_line(workspace: Path) -> None:
    (workspace / "bd").mkdir()
    (workspace / "bd" / ".ninja_log").write_text("# ninja log v5\n0\t100\t0\ta.o\th1\n500\t200\t0\tb.o\th2\n")
    proc = run_pipeline(["timings", "bd", "--json"], cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    # The folder as taken from the caller's folder (path arguments are made absolute at the command line).
    assert proc.stderr.strip() == f"{workspace / 'bd' / '.ninja_log'}: 1 malformed line(s) skipped"
    summary = json.loads(proc.stdout)
    assert summary["wall_seconds"] >= 0
    assert "Traceback" not in proc.stderr


def test_a_described_tag_with_a_slash_never_becomes_a_bundle_path(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from pipeline.source.checkout import describe_checkout, folder_tag
    from tests.support.gitrepos import commit_files, init_repo, tag

    when = datetime(2026, 8, 7, 12, tzinfo=UTC)
    repo = init_repo(tmp_path / "src")
    commit_files(repo, {"CMakeLists.txt": "project(x)\n"}, "first", when=when)
    tag(repo, "rel/v1", when=when)
    info = describe_checkout(repo, environ=dict(os.environ))
    assert info.tag == "rel/v1"  # what git itself says
    assert folder_tag(info) == "rel_v1"
