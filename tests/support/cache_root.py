"""Where tests keep what outlives a run (the sdist, its ccache, wheels): one folder outside the clone."""

from __future__ import annotations

import os
from pathlib import Path

# Points the cache elsewhere (CI keeps the default, so a rerun on the same machine is warm).
CACHE_ENV = "PIPELINE_TEST_CACHE"


def e2e_cache_root() -> Path:
    """``$PIPELINE_TEST_CACHE`` or ``~/.cache/llama-pipeline-tests``."""
    explicit = os.environ.get(CACHE_ENV)
    return Path(explicit) if explicit else Path.home() / ".cache" / "llama-pipeline-tests"
