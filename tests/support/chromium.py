"""Debian's Chromium, headless and offline, for the tests that render the pipeline's HTML pages."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    pytest.fail(
        "chromium is not installed: the HTML report test needs it (apt-get install chromium; .ci/run does)"
    )


def run_chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, f"chromium failed ({result.returncode}): {result.stderr[-2000:]}"
    return result
