"""The CLI imports only the command it runs; every command registers and has help."""

from __future__ import annotations

import pytest

from pipeline.cli import COMMANDS, build_parser, chosen_command


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["build", "cpu"], "build"),
        (["--matrix", "build", "legs"], "legs"),  # 'build' is the matrix path here
        (["--matrix=m.toml", "cache-key", "cpu"], "cache-key"),
        (["--help"], None),
        (["unknown"], None),
        ([], None),
    ],
)
def test_chosen_command(argv: list[str], expected: str | None) -> None:
    assert chosen_command(argv) == expected


def test_every_command_registers_with_help() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert list(sub.choices) == list(COMMANDS)  # type: ignore[union-attr]
    for name, p in sub.choices.items():  # type: ignore[union-attr]
        assert p.format_help().strip(), name
