#!/usr/bin/env bash
# The CUDA or Vulkan bundle on a real NVIDIA GPU, in one call on a lent machine: the cuda leg for sm_90
# with the machine's CUDA (or the vulkan leg with .gpu-check/vulkan-sdk), check-bundle against the real
# driver, and the forward pass offloaded to the GPU. One backend per call, each under 10 minutes.
# Prepare .gpu-check/ first, here: python3 scripts/gpu_check_prepare.py (docs/cuda.md, docs/gpu-checks.md).
# Usage: scripts/gpu_check.sh [--backend cuda|vulkan] [--cuda-path DIR] [--dry-run]
set -euo pipefail
cd "$(dirname "$0")/.."
# The wheels in .gpu-check/ are for one Python (gpu_check_prepare.py --python-version, 3.12 by default).
want=$(cat .gpu-check/python-version 2>/dev/null || echo 3.12)
python=$(command -v "python$want" || command -v python3)
exec "$python" scripts/gpu_check.py "$@"
