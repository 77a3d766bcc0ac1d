"""The docs site builds with --strict, includes ARCHITECTURE.md, and strict really fails on what it should."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.inputs import settings as S

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("mkdocs") is None,
        reason="mkdocs is not installed: pip install -e '.[docs]' (the test extra brings it)",
    ),
]


def _copy_site_sources(dest: Path) -> Path:
    for name in ("mkdocs.yml", "ARCHITECTURE.md"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "docs", dest / "docs")
    return dest


def _build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_site_builds_strict_with_the_architecture_and_the_generated_tables(tmp_path: Path) -> None:
    proc = _build(ROOT, tmp_path / "site")
    assert proc.returncode == 0, proc.stderr
    architecture = (tmp_path / "site" / "architecture" / "index.html").read_text(encoding="utf-8")
    # The page is ARCHITECTURE.md itself, rendered: its layer table and its tour.
    assert "A two-minute tour" in architecture and "<table>" in architecture
    settings = (tmp_path / "site" / "settings" / "index.html").read_text(encoding="utf-8")
    # A placeholder of a help text survives as text (escaped once in the table, shown as <digits>).
    assert "b&lt;digits&gt;" in settings and S.TAG.env_var in settings


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(text)


BREAKAGES = {
    "missing page": (
        lambda docs: _append(docs / "index.md", "\n[gone](no-such-page.md)\n"),
        "no-such-page.md",
    ),
    "missing anchor": (
        lambda docs: _append(docs / "index.md", "\n[gone](rocm.md#no-such-heading)\n"),
        "no-such-heading",
    ),
    "page not in the nav": (lambda docs: _append(docs / "orphan.md", "# Orphan\n"), "orphan.md"),
}


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_strict_fails_on_a_broken_link_or_an_orphan(tmp_path: Path, breakage: str) -> None:
    root = _copy_site_sources(tmp_path)
    change, expected = BREAKAGES[breakage]
    change(root / "docs")
    proc = _build(root, tmp_path / "site")
    assert proc.returncode != 0
    assert expected in proc.stderr


def test_a_missing_architecture_file_fails_the_build(tmp_path: Path) -> None:
    root = _copy_site_sources(tmp_path)
    (root / "ARCHITECTURE.md").unlink()
    proc = _build(root, tmp_path / "site")
    assert proc.returncode != 0
    assert "ARCHITECTURE.md" in proc.stderr
