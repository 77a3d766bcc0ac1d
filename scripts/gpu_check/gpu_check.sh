#!/usr/bin/env bash
# A GPU bundle on a real GPU, in one call on a lent machine: check-bundle against the real driver, and
# the forward pass offloaded to the GPU (-ngl 99). One backend per call, each under 10 minutes:
# - cuda (an NVIDIA machine): the cuda leg for sm_90 (the H200's) with the machine's CUDA (--cuda-path);
# - vulkan (an NVIDIA machine): the vulkan leg with .gpu-check/vulkan-sdk;
# - rocm (an AMD machine with ROCm: --rocm-path DIR, default $ROCM_PATH or /opt/rocm): the shipped Linux
#   rocm leg whose targets hold the machine's GPU target (amdgpu-arch / rocminfo), built for that one
#   target; no AMD GPU: one error line, exit 3 (a --dry-run takes --target gfxNNNN instead). Never run
#   on an AMD GPU yet: none has been lent to this project.
# Prepare .gpu-check/ first, here, from the repository root: python3 -m scripts.gpu_check.prepare (docs/cuda.md,
# docs/gpu-checks.md).
# Usage: scripts/gpu_check/gpu_check.sh [--backend cuda|vulkan|rocm] [--cuda-path DIR] [--rocm-path DIR]
#                                       [--dry-run [--target gfxNNNN]]
set -euo pipefail
# From the repository root: the check is the module scripts.gpu_check.
cd "$(dirname "$0")/../.."
# The wheels in .gpu-check/ are for one Python (scripts.gpu_check.prepare --python-version, 3.12 by default).
want=$(cat .gpu-check/python-version 2>/dev/null || echo 3.12)
python=$(command -v "python$want" || command -v python3)
exec "$python" -m scripts.gpu_check "$@"
