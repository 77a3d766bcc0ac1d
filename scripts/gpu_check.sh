#!/usr/bin/env bash
# The CUDA bundle on a real NVIDIA GPU, in one call on a lent machine: the cuda leg for sm_90 with
# the machine's CUDA, check-bundle against the real driver, and the forward pass offloaded to the GPU.
# Prepare .gpu-check/ first, here: python3 scripts/gpu_check_prepare.py (docs/cuda.md).
# Usage: scripts/gpu_check.sh [--cuda-path DIR] [--dry-run]
set -euo pipefail
cd "$(dirname "$0")/.."
# The wheels in .gpu-check/ are for one Python (gpu_check_prepare.py --python-version, 3.12 by default).
want=$(cat .gpu-check/python-version 2>/dev/null || echo 3.12)
python=$(command -v "python$want" || command -v python3)
exec "$python" scripts/gpu_check.py "$@"
