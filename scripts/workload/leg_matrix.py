"""A matrix.toml for one reduced leg of the real tree, as text: what a real-tree test or a benchmark writes.

``SOURCE_TEMPLATE`` is the run around the leg for a build with ``--source`` (a tree of its own, no resolve):
the shipped ``[cmake] args`` and content compiler checks; ``leg_table`` is the leg's table. Both are
``str.format`` templates (the one field is ``upstream``), so braces in their values are escaped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from scripts.workload.reduction import shipped_flags, toml_list


def template_list(flags: Sequence[str]) -> str:
    """A TOML list of ``flags`` inside a ``str.format`` template."""
    return toml_list(flags).replace("{", "{{").replace("}", "}}")


# The shipped [cmake] args, shared by every leg.
SHIPPED_SHARED, _ = shipped_flags("cpu")

SOURCE_TEMPLATE = (
    """\
[source]
repo = "{upstream}"
tag = "latest"

[ccache]
compiler_check = "content"

[cmake]
args = """
    + template_list(SHIPPED_SHARED)
    + "\n"
)


def leg_table(name: str, flags: Sequence[str], **keys: str | list[str]) -> str:
    """``[legs.<name>]`` with ``keys`` (TOML strings or string arrays) and ``flags`` as its cmake_args, for a
    template (braces in values are escaped: ``bundle_name``'s ``{tag}`` stays literal)."""
    header = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)
    lines = [f"[legs.{header}]", *(f"{key} = {json.dumps(value)}" for key, value in keys.items())]
    return (
        "\n"
        + "\n".join(lines).replace("{", "{{").replace("}", "}}")
        + "\ncmake_args = "
        + template_list(flags)
        + "\n"
    )
