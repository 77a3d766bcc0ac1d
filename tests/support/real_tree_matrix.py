"""The real-tree tests' matrix: the shipped cpu leg plus the one CI reduction, on a local forge.

The shipped flags come from matrix.toml and the reduction from
tests/support/reduction.py (tests/unit/test_tested_flags.py checks both);
the source is the forge's llama.cpp with one pinned pull request mixed in.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.llama_tree import PR_NUMBER, PR_REPO
from tests.support.reduction import reduce_leg_flags, shipped_flags, toml_list

MIN_AGE_HOURS = 6

# The legs this module builds, as configured: the shipped leg's flags plus the reduction (test_tested_flags.py).
TESTED_SHARED, _SHIPPED_CPU = shipped_flags("cpu")
TESTED_LEGS: dict[str, list[str]] = {"cpu": reduce_leg_flags(_SHIPPED_CPU)}
MATRIX = """\
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
args = """ + toml_list(TESTED_SHARED).replace("{", "{{").replace("}", "}}") + """

[legs.cpu]
backend = "cpu"
os = "linux"
cmake_args = """ + toml_list(TESTED_LEGS["cpu"]).replace("{", "{{").replace("}", "}}") + "\n"


def matrix_text(*, upstream: Path | str, pr_sha: str, min_age: int = MIN_AGE_HOURS, pr_repo: str = PR_REPO,
                pr_number: int = PR_NUMBER) -> str:
    """The reduced matrix (see the module docstring) for this forge."""
    return MATRIX.format(upstream=upstream, min_age=min_age, pr_repo=pr_repo, pr_number=pr_number, pr_sha=pr_sha)
