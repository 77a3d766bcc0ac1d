"""Where tests keep what outlives a run (the sdist, its ccache, wheels): one folder outside the clone.

Declared in scripts/llama_sdist.py, which the benchmark and the GPU check share (a script never imports the tests).
"""

from scripts.llama_sdist import CACHE_ENV, e2e_cache_root

__all__ = ["CACHE_ENV", "e2e_cache_root"]
