"""Getting the source tree of a leg run when no ``--source`` is given."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from pipeline.config import Matrix
from pipeline.errors import SourceError
from pipeline.options import LegOptions


@dataclass(frozen=True, kw_only=True)
class Checkout:
    path: Path
    url: str
    tag: str
    commit: str | None

    def to_record(self) -> dict[str, Any]:
        return {"url": self.url, "tag": self.tag, "commit": self.commit}


def acquire_source(matrix: Matrix, options: LegOptions, dest_root: Path, console: Console) -> Checkout:
    """Clone the configured repository at the requested tag into ``dest_root``."""
    tag = options.tag or matrix.source.tag
    repo = matrix.source.repo
    dest = dest_root / f"llama.cpp-{tag}"
    if dest.exists():
        shutil.rmtree(dest)
    dest_root.mkdir(parents=True, exist_ok=True)
    cmd = ["git", "clone", "--quiet", "--depth", "1"]
    if tag != "latest":
        cmd += ["--branch", tag]
    with console.status(f"cloning {repo} at {tag}"):
        try:
            proc = subprocess.run([*cmd, repo, str(dest)], capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.SubprocessError) as exc:
            raise SourceError(f"cannot clone {repo} at {tag}: {exc}", hint="pass --source DIR") from None
    if proc.returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)
        last = (proc.stderr.strip().splitlines() or ["git clone failed"])[-1]
        raise SourceError(
            f"cannot clone {repo} at {tag}: {last}",
            hint="offline? pass --source DIR to build an existing llama.cpp checkout",
        )
    head = subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"], capture_output=True, text=True)
    return Checkout(path=dest, url=repo, tag=tag, commit=head.stdout.strip() or None)
