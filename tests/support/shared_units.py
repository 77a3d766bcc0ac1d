"""The units the real-tree legs share: one ccache remote storage, written by the cpu leg, read by the others.

The reduction's ``shared units`` part (scripts/workload/reduction.py, REDUCTIONS):
the cpu leg's real-tree build (tests/integration/test_real_tree.py) stores every
object it compiles here as well as in its own cache, through the pipeline's
``--remote-cache`` (ccache's HTTP storage, docs/caches.md "Shared remote
cache"); act's nightly (tests/integration/test_act_nightly.py), whose runners
start from an empty home, reads them ``read-only``: the same compiles of the
same tree with the same compiler, so its first night compiles only what the cpu
leg did not (the build-info unit that names the tag). On a machine whose test
cache is cold, that is one cold build of the cpu leg's units instead of two.

The entries live in ``<test cache>/units`` and outlast the run; each pytest
worker serves the folder on its own port (HttpStorage writes an entry by
rename, so two workers storing the same entry never tear it).

With several workers the reader may start beside the writer: on a cold
machine it then waits for the writer's build (:func:`wait_for_the_writer`)
instead of compiling the same units at the same time; once the folder has
been filled, nobody waits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from scripts.workload.llama_sdist import e2e_cache_root
from tests.support.ccache_http import HttpStorage

FOLDER = "units"
# In the folder: the cpu leg's build stored every unit (it outlasts the run, as the units do).
FILLED = ".filled"
# The test file that writes the units, as pytest names its tests.
WRITER = "tests/integration/test_real_tree.py::"

_store: HttpStorage | None = None


def shared_units() -> HttpStorage:
    """This process's server of the shared units (started at the first call, stopped with the process)."""
    global _store
    if _store is None:
        _store = HttpStorage(e2e_cache_root() / FOLDER).__enter__()
    return _store


def read_only(url: str) -> str:
    """A remote storage spec that reads ``url`` and never writes to it (ccache's ``read-only`` property)."""
    return f"{url}|read-only"


def xdist_run(config: object) -> str | None:
    """This pytest-xdist run's id, the same in every worker (None outside xdist)."""
    workerinput = getattr(config, "workerinput", None)
    return None if workerinput is None else str(workerinput["testrunuid"])


def writer_done_marker(run: str) -> Path:
    """The file the writer leaves, filled or not, when its build ended in test run ``run`` (xdist's run id)."""
    return e2e_cache_root() / FOLDER / f".writer-done-{run}"


def writer_finished(run: str | None, *, filled: bool) -> None:
    """The writer's build ended (``filled``: every unit stored): readers waiting in this run go on."""
    folder = e2e_cache_root() / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    if filled:
        (folder / FILLED).touch()
    if run is not None:
        writer_done_marker(run).touch()


def wait_for_the_writer(
    run: str | None, writer_in_run: bool, *, timeout: float = 3600.0, say: Callable[[str], None] = print
) -> float:
    """Seconds waited until the units are there or the writer of this run is done (0: no need to wait).

    No wait when the folder was filled before, when this run has no writer, or
    outside pytest-xdist (``run`` None: one worker runs the files in order, the
    writer first).
    """
    folder = e2e_cache_root() / FOLDER
    if run is None or not writer_in_run or (folder / FILLED).exists():
        return 0.0
    say("shared units: waiting for the cpu leg's real-tree build to store them (a cold machine)")
    started = time.monotonic()
    while not ((folder / FILLED).exists() or writer_done_marker(run).exists()):
        if time.monotonic() - started > timeout:
            break
        time.sleep(5)
    return time.monotonic() - started
