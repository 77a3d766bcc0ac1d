"""The source fetched once per run: `source` writes one archive, legs build from it (real git, real builds)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.gitrepos import clone, commit_files, git, init_repo, tag
from tests.support.pipeline_cli import ROOT
from tests.support.projects import write_cpp_project

pytestmark = pytest.mark.integration

NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
NOW_TEXT = "2026-03-14T12:00:00Z"
UNITS = 2
# Random hex text: compresses to about half, still far above the rest of the history.
OLD_BLOB_BYTES = 3_000_000

MATRIX = """\
[source]
repo = "{upstream}"
tag = "b1"
min_age_hours = 0

[[source.mix]]
repo = "acme/demo"
number = 7
sha = "{pin}"

[ccache]
compiler_check = "content"

[cmake]
args = ["-DCMAKE_BUILD_TYPE=Release"]

[legs.cpu]
backend = "cpu"
os = "linux"
"""


def _pipeline(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        timeout=600,
    )


@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("srcforge")
    project = write_cpp_project(root / "gen", units=UNITS)
    files = {str(p.relative_to(project)): p.read_text() for p in project.rglob("*") if p.is_file()}
    up = init_repo(root / "upstream")
    # History the build never needs: a blobless clone does not download this file.
    commit_files(up, {"old.bin": os.urandom(OLD_BLOB_BYTES // 2).hex()}, "old", when=NOW - timedelta(days=4))
    git(up, "rm", "--quiet", "old.bin")
    commit_files(up, files, "demo", when=NOW - timedelta(days=3))
    tag(up, "b1", when=NOW - timedelta(days=3))
    # The next night's tag: only a file the build never compiles changed (as a docs-only upstream commit).
    commit_files(up, {"docs/notes.md": "a docs change\n"}, "docs", when=NOW - timedelta(days=2, hours=12))
    tag(up, "b2", when=NOW - timedelta(days=2, hours=12))
    # As GitHub does: the server honours --filter, so the mix's history comes blobless.
    git(up, "config", "uploadpack.allowFilter", "true")
    fork = clone(up, root / "gh" / "acme" / "demo")
    git(fork, "checkout", "--quiet", "-b", "pr7", "b1")
    pin = commit_files(fork, {"PR7.txt": "merged by the mix\n"}, "PR 7", when=NOW - timedelta(days=2))
    matrix = root / "matrix.toml"
    matrix.write_text(MATRIX.format(upstream=up, pin=pin))
    env = {
        "PIPELINE_MATRIX": str(matrix),
        "PIPELINE_GIT_URL_TEMPLATE": f"file://{root}/gh/{{repo}}",
        "PIPELINE_NOW": NOW_TEXT,
    }
    return {"root": root, "env": env}


def _source(forge: dict[str, object], out: Path, *, tag: str | None = None) -> dict[str, object]:
    out.parent.mkdir(parents=True, exist_ok=True)
    outputs = out.parent / "github-output"
    env = {**forge["env"], "GITHUB_OUTPUT": str(outputs)}  # type: ignore[dict-item]
    if tag is not None:
        env["PIPELINE_TAG"] = tag
    proc = _pipeline(["source", "--out", str(out)], env, out.parent)
    assert proc.returncode == 0, proc.stderr
    made: dict[str, object] = json.loads(proc.stdout)
    # The workflow's legs find the archive by this output (the artifact keeps the file name).
    lines = outputs.read_text().splitlines()
    # The runner's output file is appended to: this run's value is the last one.
    start = max(i for i, line in enumerate(lines) if line.startswith("archive<<"))
    assert lines[start + 1] == Path(str(made["path"])).name
    return made


def test_source_archive_is_deterministic_and_its_manifest_names_it(
    forge: dict[str, object], tmp_path: Path
) -> None:
    first = _source(forge, tmp_path / "a" / "out")
    second = _source(forge, tmp_path / "b" / "out")
    a, b = Path(str(first["path"])), Path(str(second["path"]))
    assert a.read_bytes() == b.read_bytes()
    assert first["sha256"] == hashlib.sha256(a.read_bytes()).hexdigest() == second["sha256"]
    assert first["size"] == a.stat().st_size
    assert a.name == "llama.cpp-b1-mix-" + str(first["tag"]).split("-mix-")[1] + ".tar.gz"
    source = first["source"]
    assert isinstance(source, dict)
    assert [p["number"] for p in source["mix"]] == [7]
    # The fetch is in the manifest; the deleted 3 MB file's blob (about 1.5 MB packed) was never fetched.
    assert 0 < source["fetched_bytes"] < OLD_BLOB_BYTES // 4
    with tarfile.open(a) as tar:
        names = tar.getnames()
    assert "llama.cpp/CMakeLists.txt" in names and "llama.cpp/PR7.txt" in names
    # The commit is the mix's merge commit, the same in both runs (fixed identity and dates).
    assert first["commit"] == second["commit"]
    checkout = tmp_path / "a" / "out" / "src" / "llama.cpp"
    assert first["commit"] == git(checkout, "rev-parse", "HEAD").strip()
    # A blobless partial clone: origin is a promisor remote that serves blobs on demand.
    assert git(checkout, "config", "remote.origin.partialclonefilter").strip() == "blob:none"


def test_leg_builds_from_the_archive_without_cloning(forge: dict[str, object], tmp_path: Path) -> None:
    made = _source(forge, tmp_path / "parent" / "out")
    archive = Path(str(made["path"]))
    leg_out = tmp_path / "leg" / "out"
    env = {
        **forge["env"],
        "PIPELINE_SOURCE_ARCHIVE": str(archive),  # type: ignore[dict-item]
        # Any clone would fail: the leg must not fetch.
        "PIPELINE_GIT_URL_TEMPLATE": "file:///nonexistent/{repo}",
    }
    env["PIPELINE_MATRIX"] = str(Path(str(forge["env"]["PIPELINE_MATRIX"])))  # type: ignore[index]
    proc = _pipeline(
        ["build", "cpu", "--out", str(leg_out), "--ccache-dir", str(tmp_path / "cc"), "--no-bundle"],
        env,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((leg_out / "cpu" / "record.json").read_text())
    assert record["source"]["commit"] == made["commit"]
    assert record["source"]["archive_sha256"] == made["sha256"]
    assert record["ccache"]["misses"] == UNITS + 1
    assert not (leg_out / "src" / "llama.cpp").exists()


def test_a_tampered_archive_is_one_clear_error(forge: dict[str, object], tmp_path: Path) -> None:
    made = _source(forge, tmp_path / "out")
    archive = Path(str(made["path"]))
    data = bytearray(archive.read_bytes())
    data[-20] ^= 0xFF
    archive.write_bytes(bytes(data))
    proc = _pipeline(
        ["build", "cpu", "--source-archive", str(archive), "--out", str(tmp_path / "leg"), "--no-bundle"],
        forge["env"],
        tmp_path,
    )  # type: ignore[arg-type]
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert any(
        f"source archive {archive}: sha256" in ln and "does not match its manifest" in ln for ln in lines
    ), proc.stderr


def test_an_archive_without_its_manifest_is_one_clear_error(forge: dict[str, object], tmp_path: Path) -> None:
    made = _source(forge, tmp_path / "out")
    archive = Path(str(made["path"]))
    Path(str(archive) + ".json").unlink()
    proc = _pipeline(
        ["build", "cpu", "--out", str(tmp_path / "leg"), "--no-bundle"],
        {**forge["env"], "PIPELINE_SOURCE_ARCHIVE": str(archive)},
        tmp_path,
    )  # type: ignore[dict-item]
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"error: source archive {archive}: its manifest {archive.name}.json is missing" in proc.stderr


def test_a_leg_that_clones_fetches_blobless_and_records_the_bytes(
    forge: dict[str, object], tmp_path: Path
) -> None:
    leg_out = tmp_path / "out"
    proc = _pipeline(
        ["build", "cpu", "--out", str(leg_out), "--ccache-dir", str(tmp_path / "cc"), "--no-bundle"],
        forge["env"],
        tmp_path,
    )  # type: ignore[arg-type]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((leg_out / "cpu" / "record.json").read_text())
    # The deleted 3 MB file of the history is not fetched; the rest is.
    assert 0 < record["source"]["fetched_bytes"] < OLD_BLOB_BYTES // 4
    assert [p["number"] for p in record["source"]["mix"]] == [7]


def _build_from(forge: dict[str, object], archive: Path, out: Path, cache: Path) -> dict[str, object]:
    env = {**forge["env"], "PIPELINE_SOURCE_ARCHIVE": str(archive)}  # type: ignore[dict-item]
    proc = _pipeline(
        ["build", "cpu", "--out", str(out), "--ccache-dir", str(cache), "--no-bundle"], env, out.parent
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record: dict[str, object] = json.loads((out / "cpu" / "record.json").read_text())
    return record


def test_the_next_nights_archive_of_a_new_tag_hits_every_object(
    forge: dict[str, object], tmp_path: Path
) -> None:
    """Two nights, two tags, the same compiled files: the second build is all hits.

    The archive of each night has another sha256; the tree it unpacks to must
    sit in the same folder, or every compile command (paths, prefix maps) and
    every ccache entry differ.
    """
    out, cache = tmp_path / "ws" / "out", tmp_path / "ccache"
    night1 = _source(forge, out, tag="b1")
    night2 = _source(forge, out, tag="b2")
    assert night1["sha256"] != night2["sha256"] and night1["commit"] != night2["commit"]
    first = _build_from(forge, Path(str(night1["path"])), out, cache)
    assert first["ccache"]["misses"] == UNITS + 1  # type: ignore[index]
    second = _build_from(forge, Path(str(night2["path"])), out, cache)
    assert second["source"]["commit"] == night2["commit"]  # type: ignore[index]
    stats = second["ccache"]
    assert (stats["hits"], stats["misses"]) == (UNITS + 1, 0), stats  # type: ignore[index]
    # The folder holds the second night's tree, whole: its docs change is there.
    tree = out / "cpu" / "src" / "llama.cpp"
    assert (tree / "docs" / "notes.md").read_text() == "a docs change\n"
    assert [p.name for p in tree.parent.iterdir()] == ["llama.cpp"]


def test_an_edited_unpacked_tree_is_replaced_by_the_archives(
    forge: dict[str, object], tmp_path: Path
) -> None:
    """A tree re-used only when it is what the archive holds: an edit since the extraction is undone."""
    out, cache = tmp_path / "ws" / "out", tmp_path / "ccache"
    made = _source(forge, out)
    archive = Path(str(made["path"]))
    _build_from(forge, archive, out, cache)
    tree = out / "cpu" / "src" / "llama.cpp"
    with tarfile.open(archive) as tar:
        member = tar.extractfile("llama.cpp/include/common.h")
        assert member is not None
        original = member.read()
    (tree / "include" / "common.h").write_bytes(original + b"#error edited after extraction\n")
    (tree / "stray.c").write_text("int stray;\n")
    # A dead run's half-extracted tree beside it is cleared too.
    (tree.parent / ".llama.cpp.dead.partial").mkdir()
    record = _build_from(forge, archive, out, cache)
    assert record["status"] == "success"
    assert (tree / "include" / "common.h").read_bytes() == original
    assert not (tree / "stray.c").exists()
    assert [p.name for p in tree.parent.iterdir()] == ["llama.cpp"]


GIT_PROBE = """
# What git answers in the tree's folder at configure time, as llama.cpp's build-info.cmake and ggml ask it.
execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
                OUTPUT_VARIABLE PROBE_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
file(WRITE "${CMAKE_BINARY_DIR}/git-answer.txt" "[${PROBE_COMMIT}]")
file(WRITE "${CMAKE_BINARY_DIR}/build-info.txt" "[${LLAMA_BUILD_NUMBER}] [${LLAMA_BUILD_COMMIT}]")
"""


def test_an_archive_build_inside_another_repository_reports_the_runs_tag_and_commit(tmp_path: Path) -> None:
    """The tree unpacked inside the pipeline's own checkout is not that checkout.

    CMake is handed the run's build number and commit, and git, asked in the
    tree's folder, finds no repository (not the one around the workspace).
    """
    project = write_cpp_project(tmp_path / "gen", units=1)
    (project / "CMakeLists.txt").write_text((project / "CMakeLists.txt").read_text() + GIT_PROBE)
    up = init_repo(tmp_path / "upstream")
    commit_files(
        up,
        {str(p.relative_to(project)): p.read_text() for p in project.rglob("*") if p.is_file()},
        "demo",
        when=NOW - timedelta(days=3),
    )
    tag(up, "b4242", when=NOW - timedelta(days=3))
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(
        f'[source]\nrepo = "{up}"\ntag = "b4242"\nmin_age_hours = 0\n\n'
        '[cmake]\nargs = ["-DCMAKE_BUILD_TYPE=Release"]\n\n[legs.cpu]\nbackend = "cpu"\nos = "linux"\n'
    )
    # The workspace is a git repository of its own, as the pipeline's checkout on a runner.
    ws = init_repo(tmp_path / "pipeline-checkout")
    outer = commit_files(ws, {"README.md": "the pipeline\n"}, "pipeline", when=NOW - timedelta(days=1))
    env = {"PIPELINE_MATRIX": str(matrix), "PIPELINE_NOW": NOW_TEXT, "PIPELINE_TAG": "b4242"}
    made = json.loads(_pipeline(["source", "--out", "out"], env, ws).stdout)
    proc = _pipeline(
        [
            "build",
            "cpu",
            "--source-archive",
            str(made["path"]),
            "--out",
            "out",
            "--no-bundle",
            "--ccache-dir",
            str(tmp_path / "cc"),
        ],
        env,
        ws,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    build = ws / "out" / "cpu" / "build"
    assert (build / "build-info.txt").read_text() == f"[4242] [{made['commit'][:7]}]"
    assert (build / "git-answer.txt").read_text() == "[]", f"git answered for {outer[:7]}"


def test_a_manifest_tag_that_leaves_the_output_folder_is_refused(
    forge: dict[str, object], tmp_path: Path
) -> None:
    made = _source(forge, tmp_path / "src" / "out")
    archive = Path(str(made["path"]))
    manifest = Path(str(archive) + ".json")
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "tag": "../../probe-evil-tag"}))
    leg_out = tmp_path / "leg" / "out"
    proc = _pipeline(
        ["build", "cpu", "--out", str(leg_out), "--ccache-dir", str(tmp_path / "cc")],
        {**forge["env"], "PIPELINE_SOURCE_ARCHIVE": str(archive)},
        tmp_path,
    )  # type: ignore[dict-item]
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {manifest}: manifest tag '../../probe-evil-tag' is not a safe tag (letters, digits, '.', '_', '+', '-')"
    ]
    assert not list(tmp_path.rglob("probe-evil-tag*"))


def test_an_edited_extracted_tree_is_not_built(forge: dict[str, object], tmp_path: Path) -> None:
    made = _source(forge, tmp_path / "src" / "out")
    archive = Path(str(made["path"]))
    leg_out = tmp_path / "leg" / "out"
    env = {**forge["env"], "PIPELINE_SOURCE_ARCHIVE": str(archive)}  # type: ignore[dict-item]

    def build() -> subprocess.CompletedProcess[str]:
        return _pipeline(["build", "cpu", "--out", str(leg_out), "--ccache-dir", str(tmp_path / "cc"), "--no-bundle"],
                         env, tmp_path)  # fmt: skip

    first = build()
    assert first.returncode == 0, first.stdout + first.stderr
    # The leg's one fixed folder for an unpacked archive (whatever the tag).
    tree = leg_out / "cpu" / "src" / "llama.cpp"
    assert tree.is_dir()
    cmake = tree / "CMakeLists.txt"
    inode = cmake.stat().st_ino
    again = build()
    assert again.returncode == 0, again.stdout + again.stderr
    assert cmake.stat().st_ino == inode  # an untouched tree is reused, not extracted again

    sources = sorted(p for p in tree.rglob("*.cpp"))
    assert sources
    pristine = sources[0].read_text()
    sources[0].write_text(pristine + "\n#error this edit must never be built\n")
    (tree / "injected.cpp").write_text("#error nor this file\n")
    edited = build()
    assert edited.returncode == 0, edited.stdout + edited.stderr
    assert sources[0].read_text() == pristine and not (tree / "injected.cpp").exists()
    record = json.loads((leg_out / "cpu" / "record.json").read_text())
    assert record["source"]["archive_sha256"] == made["sha256"]
