"""``python -m scripts.gpu_check``: the GPU check of scripts/gpu_check/check.py, as gpu_check.sh runs it."""

import sys

from scripts.gpu_check.check import main

if __name__ == "__main__":
    sys.exit(main())
