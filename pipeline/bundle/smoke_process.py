"""How one program of the smoke run runs: the scrubbed environment, a process group of its own that is stopped with whatever left it, a time limit, and output kept to its first and last bytes."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pipeline.processes.groups import adopting_orphans, popen_child, stop_group, wait_for_exit

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


TIMEOUT_SECONDS = 120


# How long the output readers get after the program and its tree are gone (a writer that escaped
# containment, on an OS without it, is not waited for).
_READ_WAIT = 10.0


@dataclass(frozen=True, kw_only=True)
class ProgramRun:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def text(self) -> str:
        return (self.stdout + self.stderr).strip()

    @property
    def both(self) -> str:
        """stderr then stdout, each ending a line: what a log line is searched in."""
        return f"{self.stderr}\n{self.stdout}\n"

    def last_line(self) -> str:
        lines = self.text.splitlines()
        return lines[-1].strip() if lines else "(no output)"


# What every program of one smoke run is started under (``qemu-aarch64 -L <sysroot>`` for an arm64
# bundle on x86-64: pipeline.bundle.emulation); set by smoke_checks for the run, empty: directly.
PROGRAM_PREFIX_ARGS: ContextVar[tuple[str, ...]] = ContextVar("smoke_prefix", default=())


def scrubbed_env(home: Path, driver_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a smoke run: nothing of the build machine's.

    ``driver_env``: how the run finds the GPU driver, kept as given: the
    machine's Vulkan loader selection (its ICD variables), or
    ``LD_LIBRARY_PATH`` to a folder outside the bundle holding only
    check-bundle's stand-in NVIDIA driver (:mod:`pipeline.bundle.driver_standin`).
    """
    return {**(driver_env or {}), "PATH": SYSTEM_PATH, "HOME": str(home), "LC_ALL": "C", "TMPDIR": str(home)}


# What is kept of each stream of a smoke program: its start and its end (what the checks read:
# ggml's log of the backends it loaded comes first, the result last); the middle of a longer one
# is counted and left out, so a program that prints gigabytes costs no memory.
HEAD_BYTES = 256 * 1024


TAIL_BYTES = 256 * 1024


_CHUNK = 64 * 1024


class _Bounded:
    """One output stream read to its end, keeping its first and last bytes."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.left_out = 0
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: IO[bytes]) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(pipe.fileno(), _CHUNK):
                room = HEAD_BYTES - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self.tail.append(chunk)
                    self.tail_size += len(chunk)
                    while self.tail_size - len(self.tail[0]) >= TAIL_BYTES:
                        self.left_out += len(self.tail[0])
                        self.tail_size -= len(self.tail.popleft())

    def text(self, wait: float) -> str:
        self._thread.join(wait)
        tail = b"".join(self.tail)
        cut = max(0, len(tail) - TAIL_BYTES)
        left_out = self.left_out + cut
        middle = f"\n[... {left_out} bytes left out ...]\n".encode() if left_out else b""
        return (bytes(self.head) + middle + tail[cut:]).decode(errors="replace")


def run_program(
    root: Path, program: str, args: Sequence[str], home: Path, driver_env: Mapping[str, str] | None = None
) -> ProgramRun:
    """``<root>/<program> ARGS`` from ``home`` in the scrubbed environment; a program that cannot
    start or hangs is exit code -1 with the reason as its output.

    The program runs in a session of its own; once it exits (or times out) its group is stopped,
    and so is whatever left the group (a ``setsid`` daemon: :func:`adopting_orphans`), so nothing
    it started outlives the check, and nothing holds its output pipes open.
    """
    home.mkdir(parents=True, exist_ok=True)
    with adopting_orphans() as contained:
        try:
            with popen_child(
                [*PROGRAM_PREFIX_ARGS.get(), str(root / program), *args],
                cwd=home,
                env=scrubbed_env(home, driver_env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            ) as proc:
                assert proc.stdout is not None and proc.stderr is not None
                out, err = _Bounded(proc.stdout), _Bounded(proc.stderr)
                try:
                    returncode = wait_for_exit(proc, TIMEOUT_SECONDS)
                except subprocess.TimeoutExpired:
                    stop_group(proc, grace=1.0)
                    return ProgramRun(exit_code=-1, stdout="", stderr=f"no answer within {TIMEOUT_SECONDS}s")
                finally:
                    stop_group(proc, grace=0.0)
                    contained.stop_adopted()
                # Every writer is gone now (where containment holds): the readers reach the end at once.
                return ProgramRun(
                    exit_code=returncode, stdout=out.text(_READ_WAIT), stderr=err.text(_READ_WAIT)
                )
        except OSError as exc:
            return ProgramRun(exit_code=-1, stdout="", stderr=f"cannot start: {exc.strerror}")
