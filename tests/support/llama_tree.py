"""The real llama.cpp tree for end-to-end tests, fetched once and kept between runs.

llama-cpp-python's source distribution (0.3.36) vendors llama.cpp under
``vendor/llama.cpp`` with its git metadata: a ``.git`` file pointing into the
sdist's ``.git/modules/vendor/llama.cpp``, a shallow repository holding one
commit, 0c1e570 (dated 2026-10-01 02:11 UTC). It has no ``b<digits>`` tag, so
:func:`make_forge` builds a local "GitHub" around it:

- ``upstream``: a parentless copy of that commit (same tree, author, dates
  and message; see :func:`_root_copy`) tagged ``b7000`` (a lightweight tag:
  its date is the commit's), plus one newer commit tagged ``b7001`` that is
  too young for ``min_age_hours`` at the test's moment;
- ``gh/ggml-org/llama.cpp``: a fork with one pull-request commit on top of
  ``b7000``, also reachable as ``refs/pull/<N>/head``.

The sdist is fetched and unpacked by scripts/workload/llama_sdist.py (shared
with the benchmark and the GPU check, and imported from there by every test
that builds the tree): downloaded with pip once into the test cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from scripts.workload.llama_sdist import TREE_COMMIT, e2e_cache_root, extract_tree, fetch_sdist
from tests.support.gitrepos import git

# Its tree (the files the build sees), read with `git rev-parse 0c1e570^{tree}`.
TREE_SHA = "b2da53584951ec8aa40680229509a6646a637560"
BASE_TAG = "b7000"
YOUNG_TAG = "b7001"
PR_NUMBER = 4242
PR_REPO = "ggml-org/llama.cpp"


@dataclass(frozen=True)
class Forge:
    """The local upstream, the fork holding the pull request, and the pinned PR commit."""

    upstream: Path
    # PIPELINE_GIT_URL_TEMPLATE for the fork: file://<gh>/{repo}
    template: str
    # The base tag's commit: a parentless copy of the vendored commit (see _root_copy).
    base_sha: str
    pr_sha: str
    young_sha: str


def _root_copy(tree: Path, staging: Path) -> str:
    """A parentless commit with the vendored commit's tree, author, dates and message; its SHA.

    The vendored repository is shallow, and git will not fetch from a shallow
    repository into a fresh clone without ``--update-shallow`` (which the
    pipeline, cloning real GitHub, rightly never passes). The copy has the
    same files, so the build is the same; only the SHA differs from 0c1e570,
    and it is the same on every run (every input of the commit is copied).
    """
    staging.mkdir(parents=True)
    git(staging, "init", "--quiet", "--bare")
    git(staging, "fetch", "--quiet", "--update-shallow", str(tree), f"{TREE_COMMIT}:refs/heads/vendored")
    fields = git(
        staging, "show", "-s", "--format=%an%n%ae%n%ad%n%cn%n%ce%n%cd", "--date=raw", TREE_COMMIT
    ).splitlines()
    message = git(staging, "show", "-s", "--format=%B", TREE_COMMIT)
    names = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
             "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE")  # fmt: skip
    env = {
        **os.environ,
        **dict(zip(names, fields, strict=True)),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    proc = subprocess.run(
        ["git", "commit-tree", f"{TREE_COMMIT}^{{tree}}", "-m", message],
        cwd=staging, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    sha = proc.stdout.strip()
    git(staging, "update-ref", "refs/heads/master", sha)
    return sha


def make_forge(tree: Path, root: Path, *, young_at: datetime, pr_at: datetime) -> Forge:
    """A local upstream and fork around the real tree (see the module docstring)."""
    staging = root / "staging.git"
    base_sha = _root_copy(tree, staging)
    upstream = root / "upstream"
    upstream.mkdir(parents=True)
    git(upstream, "init", "--quiet", "--initial-branch=master")
    git(upstream, "config", "uploadpack.allowReachableSHA1InWant", "true")
    git(upstream, "fetch", "--quiet", str(staging), "master:refs/heads/base")
    git(upstream, "checkout", "--quiet", "-B", "master", "base")
    git(upstream, "tag", BASE_TAG, base_sha)
    # A newer upstream build that is too young to be picked by `latest`.
    notes = upstream / "docs" / "e2e-young-tag.md"
    notes.write_text("A commit made by the end-to-end test: the too-young tag.\n")
    git(upstream, "add", "docs/e2e-young-tag.md")
    git(upstream, "commit", "--quiet", "-m", "too young to build", when=young_at)
    young_sha = git(upstream, "rev-parse", "HEAD")
    git(upstream, "tag", YOUNG_TAG, young_sha)

    gh = root / "gh"
    fork = gh / PR_REPO
    fork.parent.mkdir(parents=True)
    git(fork.parent, "clone", "--quiet", "--no-local", str(upstream), str(fork))
    git(fork, "config", "uploadpack.allowReachableSHA1InWant", "true")
    git(fork, "checkout", "--quiet", "-b", f"pr{PR_NUMBER}", BASE_TAG)
    # The pull request: a real source change in a compiled file, so the mix is in the build.
    source = fork / "tools" / "gguf-split" / "gguf-split.cpp"
    text = source.read_text(encoding="utf-8")
    marker = '    printf("  --version               show version and build info\\n");\n'
    if marker not in text:
        raise AssertionError(f"{source}: the usage line the pull request edits is gone")
    source.write_text(
        text.replace(marker, marker + '    printf("  (built with the e2e mix)\\n");\n'), encoding="utf-8"
    )
    git(fork, "commit", "--quiet", "-am", f"PR {PR_NUMBER}: note the mix in the usage text", when=pr_at)
    pr_sha = git(fork, "rev-parse", "HEAD")
    git(fork, "update-ref", f"refs/pull/{PR_NUMBER}/head", pr_sha)
    shutil.rmtree(staging)
    return Forge(
        upstream=upstream,
        template=f"file://{gh}/{{repo}}",
        base_sha=base_sha,
        pr_sha=pr_sha,
        young_sha=young_sha,
    )


def prepared_forge(root: Path, *, young_at: datetime, pr_at: datetime) -> Forge:
    """Download (once), extract into ``root`` and build the forge; the extracted copy is removed."""
    sdist = fetch_sdist(e2e_cache_root())
    tree = extract_tree(sdist, root / "sdist")
    forge = make_forge(tree, root / "forge", young_at=young_at, pr_at=pr_at)
    shutil.rmtree(root / "sdist")
    return forge
