"""The real-tree tests' matrices: a shipped leg plus the one CI reduction, on a local forge.

The shipped flags come from matrix.toml and the reduction from
scripts/workload/reduction.py (tests/unit/test_tested_flags.py checks both);
the source is the forge's llama.cpp with one pinned pull request mixed in. A
build with ``--source`` (no forge) takes its run and leg tables from
scripts/workload/leg_matrix.py, which these templates share.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from scripts.workload.leg_matrix import leg_table, template_list
from scripts.workload.reduction import (
    CUDA_ARCHITECTURE,
    SHIPPED_MATRIX,
    reduce_leg_flags,
    shipped_flags,
)
from tests.support.llama_tree import PR_NUMBER, PR_REPO

MIN_AGE_HOURS = 6


# The run every real-tree leg builds in: the forge's source with its pull request mixed in, content
# compiler checks and the shipped [cmake] args. A template: the forge fills in its fields.
TESTED_SHARED, _SHIPPED_CPU = shipped_flags("cpu")
RUN_TEMPLATE = (
    """\
[source]
repo = "{upstream}"
tag = "latest"
min_age_hours = {min_age}

[[source.mix]]
repo = "{pr_repo}"
number = {pr_number}
sha = "{pr_sha}"

[ccache]
compiler_check = "content"

[cmake]
args = """
    + template_list(TESTED_SHARED)
    + "\n"
)


# The legs this module builds, as configured: the shipped leg's flags plus the reduction (test_tested_flags.py).
TESTED_LEGS: dict[str, list[str]] = {"cpu": reduce_leg_flags(_SHIPPED_CPU)}
MATRIX = RUN_TEMPLATE + leg_table("cpu", TESTED_LEGS["cpu"], backend="cpu", os="linux")


def matrix_text(
    *,
    upstream: Path | str,
    pr_sha: str,
    min_age: int = MIN_AGE_HOURS,
    pr_repo: str = PR_REPO,
    pr_number: int = PR_NUMBER,
) -> str:
    """The reduced matrix (see the module docstring) for this forge."""
    return MATRIX.format(
        upstream=upstream, min_age=min_age, pr_repo=pr_repo, pr_number=pr_number, pr_sha=pr_sha
    )


def shipped_cuda_pins() -> str:
    """The shipped matrix.toml's ``[toolchains.cuda]`` tables, as text: the test installs the pinned wheels."""
    text = SHIPPED_MATRIX.read_text(encoding="utf-8")
    start = text.index("[toolchains.cuda]")
    # Up to the next table that is not one of the pinned wheels.
    end = re.search(r"(?m)^\[(?!\[?toolchains\.cuda\b)", text[start + 1 :])
    return text[start : start + 1 + end.start() if end else len(text)].strip() + "\n"


# The cuda leg: the same run (source, mix, shared flags), its pinned wheels, one architecture.
_, _SHIPPED_CUDA = shipped_flags("cuda")
CUDA_LEGS: dict[str, list[str]] = {"cuda": reduce_leg_flags(_SHIPPED_CUDA)}
# Compile steps of the reduced cuda leg: `ninja -t commands | grep -c ' -c '` on the configured tree (the
# suite configures it, tests/integration/test_real_tree_configure.py; `nox -s e2e` builds it).
REDUCED_CUDA_COMPILATIONS = 277
CUDA_MATRIX = (
    RUN_TEMPLATE
    + shipped_cuda_pins().replace("{", "{{").replace("}", "}}")
    + """
[legs.cuda]
backend = "cuda"
os = "linux"
cuda_architectures = ["""
    + json.dumps([CUDA_ARCHITECTURE])[1:-1]
    + """]
cmake_args = """
    + template_list(CUDA_LEGS["cuda"])
    + "\n"
)


def cuda_matrix_text(
    *,
    upstream: Path | str,
    pr_sha: str,
    min_age: int = MIN_AGE_HOURS,
    pr_repo: str = PR_REPO,
    pr_number: int = PR_NUMBER,
) -> str:
    """The reduced cuda matrix (see the module docstring) for this forge."""
    return CUDA_MATRIX.format(
        upstream=upstream, min_age=min_age, pr_repo=pr_repo, pr_number=pr_number, pr_sha=pr_sha
    )
