"""One writer at a time: OS-level locks (``filelock``) on a leg's output folder and a toolchain install.

The lock itself is a ``flock`` (Windows: ``msvcrt.locking``) on a lock file,
released by the kernel when its process dies, so a crashed run never leaves
a lock behind. Beside the lock file, the holder writes who it is (pid,
command line, since when) so that a refused run can name it. A run either
fails at once (the default) or waits up to ``--wait-lock`` seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from pipeline.errors import BusyError
from pipeline.redaction import redact, redact_command
from pipeline.util.fsutil import atomic_write_json

LOCK_SUFFIX = ".lock"


def holder_file(lock: Path) -> Path:
    """Where the holder of ``lock`` writes who it is."""
    return lock.with_name(lock.name + ".holder.json")


def describe_holder(lock: Path) -> str:
    """'pid 123 (python -m pipeline build cpu) since 2026-...' or what is known of it."""
    try:
        data = json.loads(holder_file(lock).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "another process (it wrote no holder file)"
    if not isinstance(data, dict):
        return "another process"
    # Written by another run (maybe an older version that stored its command line as is): the
    # one redaction rule applies to what is shown, so a --remote-cache password never reaches a line.
    return redact(f"pid {data.get('pid', '?')} ({data.get('command', '?')}) since {data.get('since', '?')}")


@contextmanager
def hold(lock: Path, *, what: str, since: datetime | None, wait_seconds: float = 0.0) -> Iterator[None]:
    """Hold ``lock`` for the block; BusyError naming the holder when it is taken for ``wait_seconds``.

    ``what`` says what the lock protects, for the message ("out/cpu", "the
    install rocm-7.0.0 ..."). ``since`` is this run's start (written for the next one to read).
    """
    # filelock is imported where a lock is taken or probed: `--help` and the offline commands that only
    # import this module through the record's reader do not pay for it.
    from filelock import FileLock, Timeout

    lock.parent.mkdir(parents=True, exist_ok=True)
    file_lock = FileLock(lock, timeout=wait_seconds)
    try:
        file_lock.acquire()
    except Timeout:
        waited = f" after waiting {wait_seconds:g}s" if wait_seconds > 0 else ""
        raise BusyError(
            f"{what} is in use by {describe_holder(lock)}{waited}",
            hint="wait for it to finish, or pass --wait-lock SECONDS (PIPELINE_WAIT_LOCK) to wait",
        ) from None
    # The lock file's mtime is when its thing (an install, a download) was last used: prune --local reads it.
    with contextlib.suppress(OSError):
        os.utime(lock)
    try:
        atomic_write_json(
            holder_file(lock),
            {
                "pid": os.getpid(),
                # Redacted: the file outlives nothing, but any user can read it while the run lasts.
                "command": redact_command(["python -m pipeline", *sys.argv[1:]]),
                "since": since.isoformat(timespec="seconds") if since is not None else "?",
            },
        )
        yield
    finally:
        holder_file(lock).unlink(missing_ok=True)
        file_lock.release()


def is_held(lock: Path) -> bool:
    """True when a live process holds ``lock`` now (a lock file without a holder is free)."""
    from filelock import FileLock, Timeout

    if not lock.exists():
        return False
    probe = FileLock(lock, timeout=0)
    try:
        probe.acquire()
    except Timeout:
        return True
    except OSError:
        # An unreadable lock file: assume the worst, nothing is removed under it.
        return True
    probe.release()
    return False
