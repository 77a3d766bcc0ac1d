"""A ``--source`` checkout names the repository git knows for it (its origin), credentials left out.

The record's source, the manifest and the SBOM's llama.cpp component all carry
it: a bundle built from a local clone says where its tree came from.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.bundle.make import source_manifest
from pipeline.bundle.sbom import sbom_json
from tests.support.gitrepos import commit_files, git, init_repo
from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import write_cpp_project, write_matrix

pytestmark = pytest.mark.integration

SECRET = "ghp_0123456789abcdefSECRET"


def test_a_source_checkout_names_its_origin_without_the_token(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write_cpp_project(repo, units=1)
    git(repo, "add", "-A")
    commit_files(repo, {}, "tree", when=datetime(2026, 3, 1, tzinfo=UTC))
    git(
        repo,
        "remote",
        "add",
        "origin",
        f"https://x-access-token:{SECRET}@example.invalid/ggml-org/llama.cpp.git",
    )
    write_matrix(tmp_path / "m.toml")
    proc = run_pipeline(
        ["--matrix", str(tmp_path / "m.toml"), "build", "cpu", "--source", str(repo), "--out", str(tmp_path / "out"),
         "--ccache-dir", str(tmp_path / "ccache"), "--no-bundle"],
        env={"COLUMNS": "400"}, check=True,
    )  # fmt: skip
    text = (tmp_path / "out" / "cpu" / "record.json").read_text()
    record = json.loads(text)
    assert record["source"]["repo"] == "https://example.invalid/ggml-org/llama.cpp.git"
    assert SECRET not in text + proc.stdout + proc.stderr
    # What the bundle's manifest and SBOM make of that source.
    manifest = {"name": "llama-local-bin-ubuntu-x64.tar.gz", "tag": "local", "leg": {"name": "cpu", "arch": "x64"},
                "source": source_manifest(record["source"], tag="local", commit=record["source"]["commit"]),
                "files": []}  # fmt: skip
    sbom = json.loads(sbom_json(manifest, manifest_sha256="0" * 64))
    [llama] = [c for c in sbom["components"] if c["name"] == "llama.cpp"]
    assert llama["externalReferences"] == [
        {"type": "vcs", "url": "https://example.invalid/ggml-org/llama.cpp.git"}
    ]


def test_a_checkout_without_an_origin_names_no_repository(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write_cpp_project(repo, units=1)
    git(repo, "add", "-A")
    commit_files(repo, {}, "tree", when=datetime(2026, 3, 1, tzinfo=UTC))
    write_matrix(tmp_path / "m.toml")
    run_pipeline(
        ["--matrix", str(tmp_path / "m.toml"), "build", "cpu", "--source", str(repo), "--out", str(tmp_path / "out"),
         "--ccache-dir", str(tmp_path / "ccache"), "--no-bundle"],
        env={"COLUMNS": "400"}, check=True,
    )  # fmt: skip
    assert "repo" not in json.loads((tmp_path / "out" / "cpu" / "record.json").read_text())["source"]
