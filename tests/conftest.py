"""Fixtures shared by unit and integration tests."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.httpserver import LocalServer

if TYPE_CHECKING:
    from tests.support.shared_jobs import Jobserver

_JOBSERVER: pytest.StashKey[Jobserver] = pytest.StashKey()

# The test files whose first build on a cold machine takes ten minutes or more (docs/testing.md, "Wall
# times"), in the order they start. Under ``nox -s tests`` (``--dist loadfile --no-loadscope-reorder``) each
# pytest worker takes the next file when it runs out, so the longest start first and the short files fill
# the end; the order also puts every leg that reads the cpu leg's units (one ccache for cuda and vulkan,
# tests/support/shared_units.py for act's runners) after it: the second worker starts on the rocm leg,
# which shares nothing, and asks for its next file only when its build is done.
FIRST = (
    "integration/test_real_tree.py",  # the cpu leg: the units the vulkan and act legs share
    "integration/test_rocm_real_tree.py",  # ~35 min: its own units (sid's compilers)
    "integration/test_act_nightly.py",  # night 1 reads the cpu leg's units
    # In `nox -s e2e` (marker long), longest first: the reduced cuda and vulkan builds' host units are the cpu leg's.
    "integration/test_real_tree_cuda.py",
    "integration/test_real_tree_arm64.py",
    "integration/test_vulkan_real_tree.py",
    "integration/test_real_tree_shards.py",  # the cpu leg three times: cold, in two shards, warm from them
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--leg",
        action="append",
        default=[],
        metavar="LEG",
        help="only the tests marked leg(LEG): the real-tree builds of that matrix.toml leg (repeatable; "
        "`nox -s e2e -- --leg cuda`)",
    )


def _select_legs(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--leg``: keep the tests whose ``leg`` marker names one of the legs asked for; a name matrix.toml
    does not declare is a usage error, not an empty run."""
    asked: list[str] = config.getoption("--leg")
    if not asked:
        return
    from pipeline.inputs.matrix import load_matrix
    from pipeline.inputs.toml_table import did_you_mean

    known = list(load_matrix(Path(__file__).resolve().parents[1] / "matrix.toml").all_legs)
    for name in asked:
        if name not in known:
            raise pytest.UsageError(
                f"--leg {name}: matrix.toml declares no such leg{did_you_mean(name, known)}"
            )
    kept, dropped = [], []
    for item in items:
        legs = {leg for mark in item.iter_markers("leg") for leg in mark.args}
        (kept if legs & set(asked) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--leg``'s selection, then the files of ``FIRST`` first, in that order; every other test after them, in
    collection order."""
    _select_legs(config, items)
    tests = Path(__file__).parent

    def rank(item: pytest.Item) -> int:
        try:
            return FIRST.index(item.path.relative_to(tests).as_posix())
        except ValueError:
            return len(FIRST)

    items.sort(key=rank)  # stable: a file's tests keep their order


def pytest_configure(config: pytest.Config) -> None:
    """The session's jobserver (tests/support/shared_jobs.py), made once by the controller: pytest-xdist's
    workers start after this hook and inherit its path; a worker makes none of its own.

    Also, in the controller and in every worker: an ignored SIGINT becomes Python's default again. A
    shell starts a background job (``cmd &``) with SIGINT ignored, exec keeps it ignored, and the
    pipeline keeps an ignored SIGINT ignored on purpose (pipeline/cli.py), so the tests that send
    SIGINT would wait for an exit that never comes. Restoring the handler gives the pipelines these
    tests start a SIGINT they can receive (exec turns Python's handler into the default action)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    from tests.support import shared_jobs

    config.stash[_JOBSERVER] = shared_jobs.start(shared_jobs.session_tokens())


def pytest_unconfigure(config: pytest.Config) -> None:
    jobserver = config.stash.get(_JOBSERVER, None)
    if jobserver is not None:
        jobserver.close()


@pytest.fixture
def http_server() -> Iterator[LocalServer]:
    """A real HTTP server on 127.0.0.1 with scripted routes (tests/support/httpserver.py)."""
    with LocalServer() as srv:
        yield srv


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the selected tests share, prepared before any runs: under ``pytest -n`` any file may run first.

    - The sdist, when a selected module reads it (``READS_THE_SDIST``): unit tests start no pip.
    - The Debian roots a module needs (``DEBIAN_ROOTS``), made in the background: minutes of download
      and unpacking that overlap the tests before the ones that need them (tests/support/sid_root.py's
      ``prepare_in_background``). Only where a root can be made at all (root, mmdebstrap); elsewhere the
      tests that need one say why they cannot.
    """
    if session.config.option.collectonly:
        return
    modules = {getattr(item, "module", None) for item in session.items}
    if any(getattr(module, "READS_THE_SDIST", False) for module in modules):
        # Unit tests that read the real tree start no pip: under pytest -n no earlier file may have fetched it.
        from scripts.workload.llama_sdist import e2e_cache_root, fetch_sdist

        try:
            fetch_sdist(e2e_cache_root())
        except AssertionError as exc:
            print(f"\nthe llama-cpp-python sdist could not be fetched; the tests that read it say so: {exc}")
    if os.geteuid() != 0 or shutil.which("mmdebstrap") is None:
        return
    roots = [root for module in modules for root in getattr(module, "DEBIAN_ROOTS", ())]
    if roots:
        from tests.support.sid_root import prepare_in_background

        prepare_in_background(roots)
