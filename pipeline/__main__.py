"""``python -m pipeline``.

Run from a checkout without the project installed (an environment with nox
and uv only), the first third-party import fails: one line that says how to
install it instead of a traceback.
"""

import sys
from pathlib import Path

# The exit code of a usage error (pipeline.errors.UsageError): how the pipeline is run, not what it was asked.
NOT_INSTALLED_EXIT = 2


def not_installed(err: ModuleNotFoundError) -> str:
    """The one line for a missing dependency: which module, and the install command for this checkout."""
    root = Path(__file__).resolve().parents[1]
    where = f'"{root}"' if (root / "pyproject.toml").is_file() else "the pipeline's checkout"
    return (
        f"error: python -m pipeline needs its dependencies installed (no module named {err.name!r}): "
        f"run `pip install -e {where}` (in a uv environment: `uv pip install -e {where}`), or use nox"
    )


try:
    from pipeline.cli import main

    code = main()
except ModuleNotFoundError as err:
    if not err.name or err.name.partition(".")[0] == "pipeline":
        raise  # a module of the pipeline itself: a bug, with its traceback
    print(not_installed(err), file=sys.stderr)
    code = NOT_INSTALLED_EXIT
sys.exit(code)
