"""The real llama.cpp tree as a submodule checkout and as a git worktree, built with ``--source``.

llama-cpp-python 0.3.36's sdist is the submodule shape itself:
``vendor/llama.cpp/.git`` is the file ``gitdir: ../../.git/modules/vendor/llama.cpp``
and that git directory ships beside it (tests/support/llama_tree.py). The cpu
leg is the reduced one of test_real_tree.py. Before the fix its configure
depended on an index Ninja could not find, and the build ended "manifest
'build.ninja' still dirty after 100 tries" (the fast, generated case is
test_git_file_source.py). The worktree is a second folder of the same
commit: built after the submodule into the same cache, every object is a
hit, as the one tree place per leg promises.

Deselect with ``-m "not e2e"``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scripts.workload.llama_sdist import TREE_COMMIT, e2e_cache_root, extract_tree, fetch_sdist
from scripts.workload.reduction import PROGRAM
from tests.support.gitrepos import git
from tests.support.pipeline_cli import ROOT

# The matrix template and the legs it declares (tests/unit/test_tested_flags.py reads them here).
from tests.support.real_tree_matrix import MATRIX as MATRIX
from tests.support.real_tree_matrix import TESTED_LEGS as TESTED_LEGS
from tests.support.real_tree_matrix import TESTED_SHARED as TESTED_SHARED
from tests.support.real_tree_matrix import matrix_text

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

TAG = "b7000"
# The reduced cpu leg's compilations, as test_real_tree.py counts them (`ninja -t commands | grep -c ' -c '`).
COMPILATIONS = 133
# One cold build of the real tree: ~5 min on 2 idle cores; a shared machine takes longer.
BUILD_TIMEOUT = 3600


def build(root: Path, tree: Path, out: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline", "--matrix", str(root / "matrix.toml"), "build", "cpu", "--source", str(tree),
         "--out", out, "--ccache-dir", str(e2e_cache_root() / "ccache"), "--no-bundle"],
        cwd=root, env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200",
                       "PIPELINE_CACHE_HOME": str(root / "cache-home")},
        capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, (
        f"build of {tree} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr}"
    )
    return json.loads((root / out / "cpu" / "record.json").read_text())  # type: ignore[no-any-return]


def test_the_submodule_checkout_and_a_worktree_build_with_their_tag_and_commit(tmp_path: Path) -> None:
    tree = extract_tree(fetch_sdist(e2e_cache_root()), tmp_path / "sdist")
    assert (tree / ".git").read_text() == "gitdir: ../../.git/modules/vendor/llama.cpp\n"
    git(tree, "tag", TAG)
    # The [source] table is not read by a --source build; it only has to be valid.
    (tmp_path / "matrix.toml").write_text(matrix_text(upstream=tree, pr_sha=TREE_COMMIT))
    git(tree, "worktree", "add", "--quiet", "--detach", str(tmp_path / "worktree"), TAG)
    shapes = {"submodule": tree, "worktree": tmp_path / "worktree"}
    records = {shape: build(tmp_path, folder, f"out-{shape}") for shape, folder in shapes.items()}
    for shape, record in records.items():
        assert (record["source"]["tag"], record["source"]["commit"]) == (TAG, TREE_COMMIT), shape
        version = subprocess.run([str(tmp_path / f"out-{shape}" / "cpu" / "build" / "bin" / PROGRAM), "--version"],
                                 capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert f"(build 7000, commit {TREE_COMMIT[:7]})" in version.stderr, (shape, version.stderr)
    warm = records["worktree"]["ccache"]
    assert (warm["hits"], warm["misses"]) == (COMPILATIONS, 0), warm
