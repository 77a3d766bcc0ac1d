"""Git as the source steps run it: one environment (isolated from the user's config when asked), one runner whose error is git's last line, and the URL a repository is fetched from."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.errors import SourceError
from pipeline.inputs.resolution_file import SourceSpec
from pipeline.processes.groups import run_child


def git_url(repo: str, template: str) -> str:
    """The fetch URL of a pin's ``owner/name`` repo."""
    if "{repo}" not in template:
        raise SourceError(f"git URL template {template!r} has no '{{repo}}' placeholder")
    return template.replace("{repo}", repo)


def git_env(
    base: Mapping[str, str], extra: Mapping[str, str] | None = None, *, isolated: bool = False
) -> dict[str, str]:
    env = dict(base)
    # A private or missing repository must fail, not wait for a password.
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    # Every call names its repository by cwd; an inherited GIT_DIR would override it.
    for key in (
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    ):
        env.pop(key, None)
    if isolated:
        # The merge commits must not depend on ~/.gitconfig or /etc/gitconfig
        # (merge.log, rerere, signing, a user identity...).
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["GIT_CONFIG_GLOBAL"] = os.devnull
        for key in [
            k
            for k in env
            if k.startswith("GIT_CONFIG_") and k not in ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL")
        ]:
            del env[key]
    if extra:
        env.update(extra)
    return env


def run_git(
    args: Sequence[str],
    *,
    base: Mapping[str, str],
    cwd: Path | None = None,
    what: str,
    env: Mapping[str, str] | None = None,
    isolated: bool = False,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``git args``; on failure raise SourceError naming ``what`` and git's last message."""
    try:
        proc = run_child(
            ["git", *args],
            cwd=cwd,
            env=git_env(base, env, isolated=isolated),
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        raise SourceError("git not found on PATH: install git") from None
    if check and proc.returncode != 0:
        raise SourceError(f"{what}: {last_message(proc)}")
    return proc


def last_message(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
    return (fatal or lines or [f"git exited with {proc.returncode}"])[-1]


def fetch_location(repo: str) -> str:
    """A URL git can fetch from any working directory (relative local paths made absolute)."""
    if "://" in repo or re.match(r"^[\w.-]+@[\w.-]+:", repo):
        return repo
    path = Path(repo)
    return str(path.resolve()) if path.exists() else repo


def prepare_clone(dest: Path, url: str, *, environ: Mapping[str, str]) -> None:
    """Make ``dest`` a git repository whose origin is ``url`` (re-using one that already is)."""
    if (dest / ".git").exists():
        current = run_git(
            ["config", "--get", "remote.origin.url"], cwd=dest, what="", check=False, base=environ
        ).stdout.strip()
        if current != url:
            raise SourceError(
                f"{dest}: already a clone of {current or 'an unknown repository'}, not of {url}"
            )
        return
    if dest.exists() and any(dest.iterdir()):
        raise SourceError(f"{dest}: exists and is not a git clone; choose an empty folder")
    dest.mkdir(parents=True, exist_ok=True)
    run_git(["init", "--quiet", str(dest)], what=f"cannot create a repository in {dest}", base=environ)
    run_git(["remote", "add", "origin", url], cwd=dest, what=f"cannot add origin to {dest}", base=environ)
    # Same bytes in the tree on every OS: no line-ending conversion.
    run_git(["config", "core.autocrlf", "false"], cwd=dest, what=f"cannot configure {dest}", base=environ)


def local_commit(dest: Path, rev: str, *, environ: Mapping[str, str]) -> str | None:
    proc = run_git(
        ["rev-parse", "-q", "--verify", f"{rev}^{{commit}}"], cwd=dest, what="", check=False, base=environ
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def fetch_base(dest: Path, spec: SourceSpec, *, environ: Mapping[str, str]) -> str:
    ref = f"refs/tags/{spec.base_tag}"
    have = local_commit(dest, ref, environ=environ)
    shallow = (
        run_git(["rev-parse", "--is-shallow-repository"], cwd=dest, what="", base=environ).stdout.strip()
        == "true"
    )
    # Merging needs the true merge base, so a mix needs the full history; a
    # plain tag build needs only its commit. The history comes blobless
    # (a partial clone): commits and trees only, and checkout and merge fetch
    # the blobs they touch from origin (a server without filters sends all).
    up_to_date = have is not None and (spec.base_commit in (None, have)) and not (spec.mix and shallow)
    if not up_to_date:
        blobless = ["--filter=blob:none"] if spec.mix else []
        depth = (
            ["--unshallow", *blobless] if spec.mix and shallow else blobless if spec.mix else ["--depth=1"]
        )
        run_git(
            ["fetch", "--quiet", "--no-tags", *depth, "origin", f"+{ref}:{ref}"],
            cwd=dest,
            what=f"cannot fetch tag {spec.base_tag} from {spec.repo}",
            base=environ,
        )
        have = local_commit(dest, ref, environ=environ)
    if have is None:
        raise SourceError(f"tag {spec.base_tag} of {spec.repo} is not a commit")
    if spec.base_commit is not None and have != spec.base_commit:
        raise SourceError(
            f"tag {spec.base_tag} of {spec.repo} moved: it points at {have[:12]}, the run resolved {spec.base_commit[:12]}"
        )
    return have


def origin_url(path: Path, *, environ: Mapping[str, str]) -> str | None:
    """The repository's ``remote.origin.url`` without credentials (a user name, a token); None when it has none.

    It names where a ``--source`` tree came from in the manifest and the SBOM, which are published:
    a token in a clone URL (``https://x-access-token:...@github.com/...``) must not travel with them.
    """
    from urllib.parse import urlsplit, urlunsplit

    from pipeline.redaction import redact_url

    proc = run_git(["config", "--get", "remote.origin.url"], cwd=path, what="", check=False, base=environ)
    url = proc.stdout.strip()
    if proc.returncode != 0 or not url:
        return None
    parts = urlsplit(url)
    if parts.scheme and parts.netloc:
        url = urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query, ""))
    return redact_url(url)
