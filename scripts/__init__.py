"""The project's scripts beside the pipeline, run from the repository root as ``python -m scripts.<package>``.

- ``bench/``: the benchmarks (``python -m scripts.bench``, ``nox -s bench``);
- ``gpu_check/``: the check of a GPU bundle on a lent GPU machine (``scripts/gpu_check/gpu_check.sh``);
- ``workload/``: what the tests, the benchmarks and the GPU check build: the real llama.cpp tree, its
  one CI reduction, Debian 13's Vulkan SDK.

A script never imports the tests (tests/unit/test_scripts_imports.py), and reaches the pipeline through
its entry modules only (the import contracts of pyproject.toml cover ``scripts`` too).
"""
