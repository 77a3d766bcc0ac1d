"""Real git repositories made by tests: an upstream with dated tags, and pull-request repos."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.invalid",
}


def git(cwd: Path, *args: str, when: datetime | None = None) -> str:
    """Run git in ``cwd`` with a fixed identity, ignoring the machine's git config."""
    env = dict(os.environ, **IDENTITY, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    if when is not None:
        stamp = f"{int(when.timestamp())} +0000"
        env["GIT_AUTHOR_DATE"] = stamp
        env["GIT_COMMITTER_DATE"] = stamp
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr}")
    return proc.stdout.strip()


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "--initial-branch=master")
    # Let tests fetch any reachable commit by SHA, as GitHub does.
    git(path, "config", "uploadpack.allowReachableSHA1InWant", "true")
    return path


def commit_files(repo: Path, files: dict[str, str], message: str, *, when: datetime) -> str:
    """Write ``files`` (relative path -> text), commit them at ``when``; return the SHA."""
    for rel, text in files.items():
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        git(repo, "add", rel)
    git(repo, "commit", "--quiet", "-m", message, when=when)
    return git(repo, "rev-parse", "HEAD")


def tag(repo: Path, name: str, *, when: datetime, annotated: bool = False) -> None:
    """Tag HEAD; an annotated tag's date is ``when`` (a lightweight tag's is its commit's)."""
    if annotated:
        git(repo, "tag", "-a", name, "-m", f"release {name}", when=when)
    else:
        git(repo, "tag", name, when=when)


def clone(src: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    git(dest.parent, "clone", "--quiet", str(src), str(dest))
    git(dest, "config", "uploadpack.allowReachableSHA1InWant", "true")
    return dest


def commit_tree(path: Path, *, when: datetime, message: str = "tree") -> str:
    """Make the folder ``path`` (a generated project) a repository of its own with one commit of all of it.

    A ``--source`` that is no repository gets the pipeline's warning: tests about other warnings build
    from a checkout, as users normally do. The identity and date are fixed: the same files give the same SHA.
    """
    init_repo(path)
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", message, when=when)
    return git(path, "rev-parse", "HEAD")
