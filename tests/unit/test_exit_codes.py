"""The docs' table of exit codes (docs/settings.md) lists every error class with its code, and the codes are distinct."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline import errors

ROOT = Path(__file__).resolve().parents[2]


def _subclasses() -> list[type[errors.PipelineError]]:
    return [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.PipelineError)]


def test_the_docs_table_is_the_generated_one() -> None:
    match = re.search(r"<!-- exit-codes -->\n(.*?)<!-- /exit-codes -->", _page(), re.S)
    assert match, "docs/settings.md has no exit-code table between the markers"
    assert match.group(1) == errors.exit_codes_markdown(), (
        "regenerate it: python -m pipeline settings --exit-codes"
    )


def test_every_code_an_error_exits_with_has_a_meaning() -> None:
    assert errors.error_classes() == _subclasses()
    codes = {c.exit_code for c in _subclasses()} | {errors.OS_ERROR_EXIT, errors.Terminated.exit_code, 130}
    assert codes <= set(errors.EXIT_CODE_MEANINGS)


def _page() -> str:
    return (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")


def _table() -> dict[str, int]:
    match = re.search(r"<!-- exit-codes -->\n(.*?)<!-- /exit-codes -->", _page(), re.S)
    assert match, "docs/settings.md has no exit-code table between the markers"
    named: dict[str, int] = {}
    for row in match.group(1).splitlines()[2:]:
        code, names = row.split("|")[1:3]
        for name in re.findall(r"`(\w+)`", names):
            named[name] = int(code)
    return named


def test_every_error_class_is_in_the_docs_with_its_code() -> None:
    table = _table()
    for cls in _subclasses():
        assert table.get(cls.__name__) == cls.exit_code, cls.__name__


def test_the_os_error_boundary_and_interruptions_are_documented() -> None:
    table = _table()
    assert table["OSError"] == errors.OS_ERROR_EXIT
    page = _page()
    assert "| 130 |" in page and "| 143 |" in page


def test_codes_other_than_the_generic_one_name_one_kind_of_failure() -> None:
    codes = [c.exit_code for c in _subclasses() if c.exit_code not in (1, 2)]
    assert len(codes) == len(set(codes))
    assert errors.OS_ERROR_EXIT not in {c.exit_code for c in _subclasses()}
