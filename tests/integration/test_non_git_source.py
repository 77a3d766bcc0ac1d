"""A ``--source`` folder that is no git repository of its own: one warning saying what the bundle reports.

Without git, llama.cpp's build-info asks nobody: its programs say ``build 0,
commit unknown`` and the bundle is tagged ``local`` (a ``--tag b<N>`` gives
the number). A plain folder inside another project's repository is no
repository either: git there would answer for the other project.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.gitrepos import commit_files, git, init_repo
from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import write_cpp_project, write_matrix

pytestmark = pytest.mark.integration


def build(tmp_path: Path, project: Path, *extra: str) -> tuple[str, dict[str, Any]]:
    write_matrix(tmp_path / "m.toml")
    proc = run_pipeline(
        ["--matrix", str(tmp_path / "m.toml"), "build", "cpu", "--source", str(project), "--out", str(tmp_path / "out"),
         "--ccache-dir", str(tmp_path / "ccache"), "--no-bundle", *extra],
        env={"COLUMNS": "400"}, check=True,
    )  # fmt: skip
    return proc.stdout + proc.stderr, json.loads((tmp_path / "out" / "cpu" / "record.json").read_text())


def test_a_plain_folder_warns_once_with_tag_local_build_0_commit_unknown(tmp_path: Path) -> None:
    project = write_cpp_project(tmp_path / "plain", units=1)
    output, record = build(tmp_path, project)
    warning = (
        f"--source {project} is not a git repository: the bundle is tagged 'local' and its programs "
        "report build 0, commit unknown"
    )
    assert output.count(warning) == 1, output
    assert [w for w in record["warnings"] if w.startswith(warning)] == record["warnings"][:1]
    assert (record["source"]["tag"], record["source"]["commit"]) == ("local", None)


def test_a_numbered_tag_gives_its_build_number(tmp_path: Path) -> None:
    project = write_cpp_project(tmp_path / "plain", units=1)
    output, record = build(tmp_path, project, "--tag", "b4711")
    assert "the bundle is tagged 'b4711' and its programs report build 4711, commit unknown" in output, output
    assert "-DLLAMA_BUILD_NUMBER=4711" in record["cmake_args"]


def test_a_folder_inside_another_repository_is_no_repository(tmp_path: Path) -> None:
    outer = init_repo(tmp_path / "outer")
    commit_files(outer, {"README": "another project\n"}, "outer", when=datetime(2026, 3, 1, tzinfo=UTC))
    project = write_cpp_project(outer / "vendor" / "tree", units=1)
    output, record = build(tmp_path, project)
    assert f"--source {project} is not a git repository" in output, output
    # Not the outer project's commit, nor a tag made from it.
    assert (record["source"]["tag"], record["source"]["commit"]) == ("local", None)


def test_a_git_checkout_gets_no_warning(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write_cpp_project(repo, units=1)
    git(repo, "add", "-A")
    commit_files(repo, {}, "tree", when=datetime(2026, 3, 1, tzinfo=UTC))
    output, record = build(tmp_path, repo)
    assert "not a git repository" not in output and record["warnings"] == []
    assert record["source"]["commit"]
