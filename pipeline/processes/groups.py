"""Child processes in their own process group, stopped as a whole when the pipeline stops.

CMake, Ninja, git and pip start children of their own (compilers, remote
helpers). Killing only the direct child on Ctrl-C or SIGTERM would leave
those running as orphans, still writing into the build folder. Each child
therefore starts a new process group (a new session on POSIX, a new process
group on Windows), and :func:`stop_group` ends the whole group: first
politely (Ninja then stops its own jobs), then for good. A child that must
leave nothing behind at all (a bundle's program in the smoke run) also runs
under :func:`adopting_orphans`, which catches what left the group.

An interrupt that lands while a child is being started (inside ``Popen``,
after the fork, or before the code that would stop it has begun) used to
escape with nobody holding the child: the pipeline exited 143 and the child
lived on. The signal handlers therefore hand their exception to
:func:`deliver_interrupt`, which holds it while this thread starts a child
and raises it once the child's group can be stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from pipeline.errors import ToolchainError
from pipeline.processes.pause_points import checkpoint
from pipeline.redaction import redact_command, secrets_in

# How long a group gets to stop after the polite signal before it is killed.
GRACE_SECONDS = 10.0


def group_kwargs() -> dict[str, Any]:
    """Popen arguments that start the child in a process group of its own."""
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


class _Held(threading.local):
    # Children being started by this thread, and an interrupt that arrived meanwhile.
    depth = 0
    pending: BaseException | None = None


_held = _Held()


def deliver_interrupt(exc: BaseException) -> None:
    """What the SIGINT/SIGTERM handlers call: raise ``exc`` now, or, while a child is being started, once
    the child is in the hands of the code that stops its group."""
    if _held.depth:
        _held.pending = _held.pending or exc
        return
    raise exc


def _start(cmd: str | Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """``Popen`` in a group of its own with interrupts held; the caller calls :func:`_release` first thing
    inside the ``try`` whose ``except`` stops the group."""
    _held.depth += 1
    try:
        proc = subprocess.Popen(cmd if isinstance(cmd, str) else list(cmd), **group_kwargs(), **kwargs)
        # The interrupt tests' point: a signal sent while the run is held here lands in the race's window.
        checkpoint("child")
        return proc
    except BaseException:
        _release()  # the child never started: an interrupt held meanwhile is raised instead
        raise


def _release() -> None:
    """End the hold of :func:`_start`; an interrupt that arrived meanwhile is raised here."""
    _held.depth -= 1
    if not _held.depth and _held.pending is not None:
        exc, _held.pending = _held.pending, None
        raise exc


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
    try:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    finally:
        # Whatever is left of the group (the leader, or a member that ignored SIGTERM) goes now,
        # also when a second Ctrl-C cuts the grace period short.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# prctl(2): orphaned descendants re-parent to the nearest ancestor that set this, not to init.
_PR_SET_CHILD_SUBREAPER = 36
# Rounds of "kill what was adopted, reap it": each round's kills orphan the next generation.
_ADOPTION_ROUNDS = 64


def _set_subreaper(on: bool) -> bool:
    """Make this process the subreaper of its descendants (Linux); False where the OS has none."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _own_children() -> set[int]:
    """The pids whose parent is this process (zombies included): each thread's ``children`` file,
    else a scan of /proc where the kernel has no such file."""
    listed = _listed_children()
    return listed if listed is not None else _scanned_children()


def _listed_children() -> set[int] | None:
    """The children the kernel lists for each thread of this process (``/proc/self/task/*/children``,
    CONFIG_PROC_CHILDREN), or None where it lists none. A few small reads, where the scan of /proc reads
    one file per process of the machine: three scans per smoke program, 43 ms of CPU for a warm build's
    seven programs on a machine running 114 processes."""
    found: set[int] = set()
    try:
        tasks = list(Path("/proc/self/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            found.update(int(pid) for pid in (task / "children").read_text(encoding="ascii").split())
        except FileNotFoundError:
            if not task.is_dir():
                continue  # the thread ended meanwhile: its children went to another thread of this process
            return None  # no children file: the kernel does not list them
        except OSError:
            return None
    return found


def _scanned_children() -> set[int]:
    """The pids whose parent is this process, read from every process's stat in /proc (zombies included)."""
    me, found = os.getpid(), set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, the last ')' ends it.
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 1 and fields[1] == str(me):
            found.add(int(entry.name))
    return found


class Containment:
    """What :func:`adopting_orphans` yields: whether it holds, and how to end what it caught now."""

    def __init__(self, before: set[int], active: bool) -> None:
        self._before = before
        self.active = active

    def stop_adopted(self) -> None:
        """Kill and reap every process adopted so far, round after round (killing one orphans its
        own children, which are adopted in turn)."""
        if not self.active:
            return
        for _ in range(_ADOPTION_ROUNDS):
            adopted = _own_children() - self._before
            if not adopted:
                return
            for pid in adopted:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            for pid in adopted:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)


@contextlib.contextmanager
def adopting_orphans() -> Iterator[Containment]:
    """Contain what children start, even what leaves their process group and session.

    Inside, this process is the subreaper of its descendants (``PR_SET_CHILD_SUBREAPER``): a
    grandchild that calls ``setsid()`` and whose parent exits (a daemon) re-parents to this
    process instead of init. On leaving (or at ``stop_adopted()``), every process adopted
    meanwhile is killed and reaped. A cgroup would contain them too, but an unprivileged runner
    cannot create one; the subreaper needs no privilege. Linux only: elsewhere ``active`` is
    False and only the process group is stopped.
    """
    before = _own_children() if sys.platform.startswith("linux") else set()
    containment = Containment(before, _set_subreaper(True))
    try:
        yield containment
    finally:
        if containment.active:
            try:
                containment.stop_adopted()
            finally:
                _set_subreaper(False)


def run_child(
    cmd: str | Sequence[str], *, timeout: float | None = None, input: str | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` in a process group of its own, whose whole group is stopped on any exception.

    Takes ``subprocess.run``'s keyword arguments (``capture_output``,
    ``text``, ``check``, ``env``, ``cwd``...); a timeout raises
    ``subprocess.TimeoutExpired`` as ``subprocess.run`` does. A string is one
    command line, as Windows' ``cmd /c`` wants it (``vcvarsall.bat``).
    """
    check = kwargs.pop("check", False)
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    proc = _start(cmd, **kwargs)
    try:
        _release()
        stdout, stderr = proc.communicate(input, timeout=timeout)
    except BaseException:
        stop_group(proc)
        raise
    result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    if check:
        result.check_returncode()
    return result


def wait_for_exit(proc: subprocess.Popen[Any], timeout: float) -> int:
    """``proc.wait(timeout=timeout)``, woken by the exit itself where the OS can say it (a pidfd, Linux 5.3).

    ``Popen.wait`` with a timeout polls: it sleeps up to 50 ms between looks, which a warm build's
    smoke run (seven short programs) paid up to seven times. Raises ``subprocess.TimeoutExpired``
    when the process is still running after ``timeout`` seconds, as ``Popen.wait`` does.
    """
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None or proc.returncode is not None:
        return proc.wait(timeout=timeout)
    try:
        fd = pidfd_open(proc.pid)
    except OSError:
        return proc.wait(timeout=timeout)  # no pidfds in this kernel: Popen's polling
    try:
        import select

        # Readable once the process has exited; select retries after a signal with the time left.
        ready, _, _ = select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    if not ready:
        raise subprocess.TimeoutExpired(proc.args, timeout)
    return proc.wait()


@contextlib.contextmanager
def popen_child(cmd: Sequence[str], **kwargs: Any) -> Iterator[subprocess.Popen[Any]]:
    """``subprocess.Popen`` in a process group of its own, for a child whose output is streamed.

    Any exception in the block (an interrupt, a full disk while copying its
    output) stops the whole group before it propagates; a normal exit waits
    for the child and closes its pipes.
    """
    proc = _start(cmd, **kwargs)
    try:
        _release()
        yield proc
        proc.wait()
    except BaseException:
        # Not Popen's own __exit__: it waits for the child unbounded (only a plain Ctrl-C gets a short wait).
        stop_group(proc)
        raise
    finally:
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


# Lines of a failed step's output shown on screen (the whole output is in the log).
TAIL_LINES = 25


def run_logged(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str],
    log: IO[str],
    cwd: Path | None = None,
    on_line: Callable[[str], None] | None = None,
) -> tuple[int, deque[str]]:
    """Run ``cmd``, copying its output to ``log``; returns (exit code, last lines)."""
    # A command line can carry a remote-cache password or a token: the log gets it masked.
    log.write(f"$ {redact_command(cmd, secrets_in(env))}\n")
    log.flush()
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    try:
        # Its own group: Ctrl-C or SIGTERM to the pipeline stops the whole tree (no orphan Ninja).
        proc = _start(
            cmd,
            cwd=cwd,
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            bufsize=1,
        )
    except OSError as exc:
        raise ToolchainError(f"cannot run {cmd[0]}: {exc.strerror}") from None
    assert proc.stdout is not None
    try:
        _release()
        for line in proc.stdout:
            log.write(line)
            tail.append(line.rstrip("\n"))
            if on_line:
                on_line(line)
    except BaseException:
        stop_group(proc)
        log.write(f"--- {cmd[0]} stopped: the pipeline was interrupted ---\n")
        raise
    return proc.wait(), tail
