"""The one confinement rule for paths built from data (records, manifests, asset names, archive members)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import PipelineError, PublishError
from pipeline.util.fsutil import confined


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("/etc/hostname", "an absolute path"),
        ("\\\\server\\share", "an absolute path"),
        ("C:/Windows/x", "an absolute path"),
        ("../../../../../etc/hostname", "'..' leads out"),
        ("a/../../b", "'..' leads out"),
        ("a\\..\\..\\b", "'..' leads out"),
        ("", "not a file name"),
        ("a\x00b", "not a file name"),
    ],
)
def test_names_that_leave_the_folder_are_refused(tmp_path: Path, name: str, why: str) -> None:
    with pytest.raises(PublishError) as err:
        confined(tmp_path, name, "bundle", PublishError)
    assert err.value.message.startswith(f"bundle {name!r}: {why}") and "\n" not in err.value.message


def test_a_link_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "up").symlink_to(tmp_path)
    with pytest.raises(PipelineError, match="through a link"):
        confined(tmp_path / "base", "up/secret", "asset")


def test_names_inside_are_joined(tmp_path: Path) -> None:
    assert (
        confined(tmp_path, "dist/llama-b1-bin-ubuntu-x64.tar.gz", "bundle")
        == tmp_path / "dist/llama-b1-bin-ubuntu-x64.tar.gz"
    )
    assert confined(tmp_path, "a/./b..c", "member") == tmp_path / "a/b..c"
