"""The CLI imports only the command it runs; every command registers and has help."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli import COMMANDS, absolute_paths, build_parser, chosen_command


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


@pytest.mark.parametrize(
    "argv",
    [
        ["--matrix", "m.toml", "--debug", "build", "cpu"],
        ["build", "cpu", "--matrix", "m.toml", "--debug"],
        ["--debug", "build", "cpu", "--matrix=m.toml"],
    ],
)
def test_global_flags_before_or_after_the_command(argv: list[str]) -> None:
    args = build_parser(chosen_command(argv)).parse_args(argv)
    assert (args.command, args.leg, args.matrix, args.debug) == ("build", "cpu", "m.toml", True)


def test_a_global_flag_after_the_command_wins_over_one_before_it() -> None:
    argv = ["--matrix", "a.toml", "build", "cpu", "--matrix", "b.toml"]
    assert build_parser("build").parse_args(argv).matrix == "b.toml"


def test_without_global_flags_their_defaults_hold() -> None:
    args = build_parser("legs").parse_args(["legs"])
    assert (args.matrix, args.debug) == (None, False)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_takes_the_global_flags_after_its_name(name: str) -> None:
    parser = build_parser(name)
    sub = next(a for a in parser._actions if a.dest == "command")
    flags = {flag for action in sub.choices[name]._actions for flag in action.option_strings}  # type: ignore[union-attr]
    assert {"--matrix", "--debug"} <= flags, name


def test_relative_path_arguments_are_taken_from_the_callers_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["check-bundle", "b.tar.gz", "--source-tree", "../llama.cpp"]
    args = absolute_paths(build_parser("check-bundle").parse_args(argv))
    # The caller's folder, not resolved: a smoke run in a scratch home finds the same files.
    assert (args.bundle, args.source_tree) == (tmp_path / "b.tar.gz", tmp_path / ".." / "llama.cpp")
    assert absolute_paths(
        build_parser("check-bundle").parse_args(["check-bundle", "/x/b.tar.gz"])
    ).bundle == Path("/x/b.tar.gz")
