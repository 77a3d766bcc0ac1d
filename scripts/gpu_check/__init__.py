"""A GPU bundle on a real GPU, on a lent machine: ``bash scripts/gpu_check/gpu_check.sh`` (docs/gpu-checks.md).

``prepare`` makes ``.gpu-check/`` here (what the lent machine cannot download); ``check`` builds and
checks the leg there (``python -m scripts.gpu_check``), with ``rocm`` for an AMD GPU's target and leg.
Standard library only at import: the lent machine has the pipeline's dependencies only once ``check``
has unpacked them.
"""
