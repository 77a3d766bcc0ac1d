"""The units the real-tree legs share: one ccache remote storage, written by the cpu leg, read by the others.

The reduction's ``shared units`` part (tests/support/reduction.py, REDUCTIONS):
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
"""

from __future__ import annotations

from tests.support.cache_root import e2e_cache_root
from tests.support.ccache_http import HttpStorage

FOLDER = "units"

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
