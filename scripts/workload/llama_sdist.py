"""The real llama.cpp tree that the end-to-end tests, the benchmark and the GPU check build, fetched once.

llama-cpp-python's source distribution (0.3.36) vendors llama.cpp under
``vendor/llama.cpp`` with its git metadata (a shallow repository holding one
commit, 0c1e570). It is downloaded with pip once into the test cache
(``$PIPELINE_TEST_CACHE``, else ``~/.cache/llama-pipeline-tests``); a rerun
on the same machine finds it there and asks no registry. Here, among the
scripts, because a script never imports the tests; the tests import it from
here too (tests/support/llama_tree.py makes its local forge out of it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

# Points the cache elsewhere (CI keeps the default, so a rerun on the same machine is warm).
CACHE_ENV = "PIPELINE_TEST_CACHE"

SDIST_PROJECT = "llama-cpp-python"
SDIST_VERSION = "0.3.36"
SDIST_NAME = f"llama_cpp_python-{SDIST_VERSION}.tar.gz"
TREE_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"

_TOP = f"llama_cpp_python-{SDIST_VERSION}/"
_TREE = _TOP + "vendor/llama.cpp/"
_GITDIR = _TOP + ".git/modules/vendor/llama.cpp/"


def e2e_cache_root() -> Path:
    """``$PIPELINE_TEST_CACHE`` or ``~/.cache/llama-pipeline-tests``."""
    explicit = os.environ.get(CACHE_ENV)
    return Path(explicit) if explicit else Path.home() / ".cache" / "llama-pipeline-tests"


def cached_sdist() -> Path | None:
    """The sdist in the test cache, or None when nothing has fetched it on this machine (nothing is downloaded)."""
    path = e2e_cache_root() / "sdist" / SDIST_NAME
    return path if path.is_file() else None


def missing_reason() -> str:
    """Why :func:`cached_sdist` found nothing, for a skipped test or a benchmark that stops."""
    return (
        f"the llama-cpp-python {SDIST_VERSION} sdist is not in {e2e_cache_root() / 'sdist'} "
        "(the real-tree tests fetch it once)"
    )


def fetch_sdist(cache: Path) -> Path:
    """The sdist in ``cache/sdist/``, downloaded with pip when it is not there yet."""
    target = cache / "sdist" / SDIST_NAME
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as tmp:
        proc = subprocess.run(
            # --no-binary for this project only: pip still prepares the sdist's metadata, and with
            # ":all:" it would build the build backend's own requirements (CMake!) from source.
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", SDIST_PROJECT,
             f"{SDIST_PROJECT}=={SDIST_VERSION}", "-d", tmp],
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        got = Path(tmp) / SDIST_NAME
        if proc.returncode != 0 or not got.is_file():
            raise AssertionError(
                f"pip download of {SDIST_PROJECT}=={SDIST_VERSION} failed:\n{proc.stderr[-2000:]}"
            )
        # Renamed into place only when complete: an interrupted download is never taken as the sdist.
        got.replace(target)
    return target


def extract_tree(sdist: Path, dest: Path) -> Path:
    """Unpack ``vendor/llama.cpp`` and its git directory from ``sdist`` into ``dest``; return the tree."""
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith((_TREE, _GITDIR))]
        tar.extractall(dest, members=members, filter="tar")
    tree = dest / _TREE
    # The machine's git config is not read: it could rewrite what HEAD resolves to.
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    proc = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    head = proc.stdout.strip()
    if proc.returncode != 0 or head != TREE_COMMIT:
        raise AssertionError(
            f"{sdist}: vendored llama.cpp is at {head or proc.stderr.strip()}, expected {TREE_COMMIT}"
        )
    return tree


def standalone_tree(sdist: Path, dest: Path) -> Path:
    """:func:`extract_tree`, made a repository of its own: ``--source`` can build it.

    In the sdist the tree is a submodule (its ``.git`` a file naming
    ``../../.git/modules/vendor/llama.cpp``). Through the leg's link to it
    (``<out>/<leg>/src/llama.cpp``) that relative gitdir names nothing, and
    Ninja re-runs CMake until "manifest 'build.ninja' still dirty after 100
    tries" (DESIGN.md). The module's git directory moves into the tree and
    forgets its work tree: the same commit, checked out, no superproject.
    """
    import re
    import shutil

    tree = extract_tree(sdist, dest)
    dot_git = tree / ".git"
    gitdir = (tree / dot_git.read_text(encoding="utf-8").removeprefix("gitdir:").strip()).resolve()
    dot_git.unlink()
    shutil.move(gitdir, dot_git)
    # Not `git config --unset`: git would first chdir to the work tree the config names, which is gone.
    config = dot_git / "config"
    config.write_text(
        re.sub(r"(?m)^\s*worktree\s*=.*\n", "", config.read_text(encoding="utf-8")), encoding="utf-8"
    )
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=tree, env=env, capture_output=True, text=True, check=False
        ).stdout.strip()

    if git("rev-parse", "HEAD") != TREE_COMMIT or git("status", "--porcelain", "--untracked-files=no"):
        raise AssertionError(f"{tree}: not a clean checkout of {TREE_COMMIT} once made standalone")
    return tree
