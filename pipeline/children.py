"""Child processes in their own process group, stopped as a whole when the pipeline stops.

CMake, Ninja, git and pip start children of their own (compilers, remote
helpers). Killing only the direct child on Ctrl-C or SIGTERM would leave
those running as orphans, still writing into the build folder. Each child
therefore starts a new process group (a new session on POSIX, a new process
group on Windows), and :func:`stop_group` ends the whole group: first
politely (Ninja then stops its own jobs), then for good.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

# How long a group gets to stop after the polite signal before it is killed.
GRACE_SECONDS = 10.0


def group_kwargs() -> dict[str, Any]:
    """Popen arguments that start the child in a process group of its own."""
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


def stop_group(proc: subprocess.Popen[Any], grace: float = GRACE_SECONDS) -> None:
    """End ``proc`` and every process of its group; returns once ``proc`` is gone."""
    if sys.platform == "win32":
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        return
    # The child's pid is its group's id (start_new_session); the group may outlive the child.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    # Whatever is left of the group (the leader, or a member that ignored SIGTERM) goes now.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def run_child(
    cmd: Sequence[str], *, timeout: float | None = None, input: str | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` in a process group of its own, whose whole group is stopped on any exception.

    Takes ``subprocess.run``'s keyword arguments (``capture_output``,
    ``text``, ``check``, ``env``, ``cwd``...); a timeout raises
    ``subprocess.TimeoutExpired`` as ``subprocess.run`` does.
    """
    check = kwargs.pop("check", False)
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    proc = subprocess.Popen(list(cmd), **group_kwargs(), **kwargs)
    try:
        stdout, stderr = proc.communicate(input, timeout=timeout)
    except BaseException:
        stop_group(proc)
        raise
    result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    if check:
        result.check_returncode()
    return result
