"""One GNU Make jobserver for the test session's real-tree builds: two builds at once share the cores.

Under ``nox -s tests`` two pytest workers run at once, and for most of a cold
run both are in a real-tree build (docs/testing.md, "Wall times"). Each build's
Ninja, left to itself, runs as many compiles as it guesses (three on two cores):
six heavy compiles on two cores, which on the 2-core machine finish later than
the same work two or three at a time (docs/testing.md, "Compiles that share the
cores": four nvcc units at once took 18% longer than two and two).

Ninja (1.13 and later, the pipeline's pinned one) joins a jobserver named in
``MAKEFLAGS`` (``--jobserver-auth=fifo:PATH``, GNU Make 4.4's form): a compile
starts only with a token from the fifo, or on the one slot every client has
without one. The session's controller makes the fifo and puts ``cores - 1``
tokens in it, as ``make -j<cores>`` would; each build then runs one compile of
its own plus what the tokens allow: two builds at once run three compiles, a
build alone runs two. The pipeline passes its environment to CMake and Ninja
(pipeline/leg/steps.py), so a build joins it with ``MAKEFLAGS`` alone; nothing
of the shipped leg changes (which compiles run, their flags, the objects).

The fifo's path reaches the workers in ``PIPELINE_TESTS_JOBSERVER`` (they
inherit the controller's environment); a run without the session's jobserver
(``pytest`` on one file, say) gets ``{}`` from :func:`build_env` and Ninja's own
parallelism.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

ENV = "PIPELINE_TESTS_JOBSERVER"
TOKEN = b"+"


@dataclass
class Jobserver:
    """A jobserver fifo, held open (a fifo's buffered tokens live only while some end of it is open)."""

    fifo: Path
    tokens: int
    _fd: int

    @property
    def makeflags(self) -> str:
        """``MAKEFLAGS`` naming this fifo (:func:`makeflags`)."""
        return makeflags(self.fifo, self.tokens)

    def available(self) -> int:
        """The tokens in the fifo now (read, counted and put back: no build may hold one meanwhile)."""
        taken = b""
        while True:
            try:
                chunk = os.read(self._fd, 4096)
            except BlockingIOError:
                break
            if not chunk:
                break
            taken += chunk
        if taken:
            os.write(self._fd, taken)
        return len(taken)

    def close(self) -> None:
        os.close(self._fd)
        shutil.rmtree(self.fifo.parent, ignore_errors=True)


def make(tokens: int) -> Jobserver:
    """A new fifo holding ``tokens`` tokens."""
    folder = Path(tempfile.mkdtemp(prefix="pipeline-jobserver-"))
    fifo = folder / "fifo"
    os.mkfifo(fifo, 0o600)
    # Read-write: open() of a fifo for reading alone would wait for a writer.
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    os.write(fd, TOKEN * tokens)
    return Jobserver(fifo=fifo, tokens=tokens, _fd=fd)


def start(tokens: int) -> Jobserver:
    """The session's jobserver: :func:`make`, its fifo's path exported in ``PIPELINE_TESTS_JOBSERVER``."""
    jobserver = make(tokens)
    os.environ[ENV] = str(jobserver.fifo)
    return jobserver


def session_tokens() -> int:
    """``make -j<cores>``'s count: every client's own slot is the one not in the fifo."""
    return max((os.cpu_count() or 1) - 1, 0)


def fifo() -> Path | None:
    """The session's fifo, when there is one (a real-tree build inside a Debian root binds its folder)."""
    path = os.environ.get(ENV)
    return Path(path) if path and Path(path).exists() else None


def makeflags(fifo: Path, tokens: int) -> str:
    """``MAKEFLAGS`` as GNU Make 4.4 sets it for its children (a leading space: no flag letters)."""
    return f" -j{tokens + 1} --jobserver-auth=fifo:{fifo}"


def build_env() -> dict[str, str]:
    """What a real-tree build adds to its environment to take its compiles' slots from the session."""
    path = fifo()
    return {} if path is None else {"MAKEFLAGS": makeflags(path, session_tokens())}
