"""``python -m pipeline settings``: every run setting, its flag, variable, matrix.toml key and default."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pipeline import errors
from pipeline.inputs import settings as S

if TYPE_CHECKING:
    from pipeline.inputs.run_inputs import RunInputs


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "settings",
        help="list the run settings: flag, environment variable, matrix.toml key, default",
        description="Every input that more than one command uses, declared once. Precedence: the flag, "
        "then the environment, then matrix.toml, then the default.",
    )
    p.add_argument(
        "--markdown", action="store_true", help="print the settings table of docs/settings.md (Markdown)"
    )
    p.add_argument(
        "--exit-codes", action="store_true", help="print the exit-code table of docs/settings.md (Markdown)"
    )
    p.set_defaults(func=run, needs_matrix=False)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    if args.exit_codes:
        print(errors.exit_codes_markdown(), end="")
        return 0
    if args.markdown:
        print(S.markdown_table(), end="")
        return 0
    for s in S.SETTINGS:
        print(
            f"{s.name:18} {s.flag or '-':16} {', '.join(s.env) or '-':28} {s.matrix_key or '-':16} {s.default_display}"
        )
    return 0
