"""check-bundle fails a bundle in which it found nothing to examine, for every OS.

"0 binaries" checked used to pass: a bundle whose programs sit where the
check does not look (or that holds none) says nothing about whether it runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pipeline.bundle.check import check_tree


@pytest.mark.parametrize(("os_name", "line"), [
    ("linux", ".: no ELF program or library at the bundle's root: nothing was checked"),
    ("windows", ".: no .exe/.dll program or library at the bundle's root: nothing was checked"),
    ("macos", ".: no Mach-O program or library anywhere in the bundle: nothing was checked"),
])  # fmt: skip
def test_a_bundle_with_nothing_to_examine_fails(tmp_path: Path, os_name: str, line: str) -> None:
    (tmp_path / "LICENSE").write_text("MIT\n")
    (tmp_path / "llama-cli.exe").write_bytes(b"not a program")
    (tmp_path / "README.md").write_text("no program here\n")
    result = check_tree(tmp_path, os_name=os_name, glibc_max=None)
    assert result.files_checked == 0
    assert [p.line for p in result.problems] == [line]
    assert not result.ok


def test_an_elf_in_a_subfolder_only_is_not_at_the_root_and_the_check_fails(tmp_path: Path) -> None:
    (tmp_path / "LICENSE").write_text("MIT\n")
    (tmp_path / "bin").mkdir()
    # A real ELF program (this interpreter), where the loader would not look for the bundle's programs.
    (tmp_path / "bin" / "python").write_bytes(Path(sys.executable).resolve().read_bytes())
    result = check_tree(tmp_path, os_name="linux", glibc_max=None)
    assert result.files_checked == 0 and [p.kind for p in result.problems] == ["empty"]
