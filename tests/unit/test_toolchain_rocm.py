"""The pure parts of the ROCm toolchain's download path: reading a published checksum."""

from __future__ import annotations

import pytest

from pipeline.errors import ToolchainError
from pipeline.toolchain.therock_tarball import parse_sha256sum

NAME = "therock-dist-linux-gfx110X-all-7.0.0a20250104.tar.gz"
DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
WHERE = "http://127.0.0.1:9/idx/" + NAME + ".sha256sum"


@pytest.mark.parametrize(
    "text",
    [
        f"{DIGEST}  {NAME}\n",  # sha256sum, text mode
        f"{DIGEST} *{NAME}\n",  # sha256sum -b
        f"{DIGEST.upper()}  {NAME}",
        f"{DIGEST}\n",  # a bare digest
        f"\ufeff{DIGEST}  {NAME}\r\n",
        f"{DIGEST}  build/artifacts/{NAME}\n",  # written from another folder
        f"# sha256\n{'0' * 64}  other.tar.gz\n{DIGEST}  {NAME}\n",  # one line per file
    ],
)
def test_accepted_forms(text: str) -> None:
    assert parse_sha256sum(text, file_name=NAME, where=WHERE) == DIGEST


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty checksum file"),
        ("not a checksum", "malformed checksum line 'not a checksum'"),
        (f"{DIGEST[:-1]}  {NAME}", "malformed checksum line"),
        (f"{DIGEST}0  {NAME}", "malformed checksum line"),
        (f"sha256:{DIGEST}", "malformed checksum line"),
        (f"{DIGEST}  other.tar.gz\n", f"the checksum is for other.tar.gz, not {NAME}"),
        (f"{DIGEST}  {NAME}.part\n", f"the checksum is for {NAME}.part, not {NAME}"),
        (f"{DIGEST}\n{'0' * 64}  {NAME}\n", "a bare digest among 2 lines names no file"),
        (f"{DIGEST}  {NAME}\n{'0' * 64}  {NAME}\n", f"2 different sha256 digests for {NAME}"),
    ],
)
def test_refused_forms_name_the_url(text: str, message: str) -> None:
    with pytest.raises(ToolchainError) as err:
        parse_sha256sum(text, file_name=NAME, where=WHERE)
    assert str(err.value).startswith(f"{WHERE}: ")
    assert message in str(err.value)
    assert "\n" not in str(err.value)
