"""Where the act tests find the actions nightly.yml pins, on a clone that has none beside it.

The fetch runs real git against real repositories made here (``file://``, as
the public repositories would answer over https), and, where this machine
has no network, against the public host itself: that is the skip a user
offline sees, with its reason.
"""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support import act
from tests.support.gitrepos import commit_files, init_repo

pytestmark = pytest.mark.integration

WHEN = datetime(2026, 3, 1, tzinfo=UTC)
ACTION = "name: demo\nruns:\n  using: node20\n  main: dist/index.js\n"


def _forge(root: Path) -> tuple[Path, str]:
    """A repository acme-setup-demo with two commits; a workflow pinning the first. Its file and the SHA."""
    repo = init_repo(root / "forge" / "acme-setup-demo")
    pinned = commit_files(repo, {"action.yml": ACTION, "dist/index.js": "// v1\n"}, "v1", when=WHEN)
    commit_files(repo, {"dist/index.js": "// v2\n"}, "v2", when=WHEN)
    workflow = root / "nightly.yml"
    workflow.write_text(f"jobs:\n  a:\n    steps:\n      - uses: acme/setup-demo@{pinned} # v1\n")
    return workflow, pinned


def test_pinned_actions_are_fetched_at_their_sha_into_the_cache_once(tmp_path: Path) -> None:
    workflow, sha = _forge(tmp_path)
    cache = tmp_path / "cache"
    template = f"file://{tmp_path}/forge/{{owner}}-{{repo}}"
    folder = act.fetch_pinned_actions([workflow], cache, template)
    action = folder / f"acme-setup-demo@{sha}"
    # The pinned commit's files, not the branch's newer ones; no git metadata, as the shared folder has none.
    assert (action / "dist" / "index.js").read_text() == "// v1\n"
    assert not (action / ".git").exists()
    assert act.pinned_actions([workflow], folder) == {f"acme/setup-demo@{sha}": action}
    # Re-used afterwards: the forge may be gone.
    (tmp_path / "forge").rename(tmp_path / "gone")
    assert act.fetch_pinned_actions([workflow], cache, template) == folder


def test_an_unreachable_repository_skips_saying_why(tmp_path: Path) -> None:
    workflow, sha = _forge(tmp_path)
    with pytest.raises(pytest.skip.Exception) as skipped:
        act.fetch_pinned_actions(
            [workflow], tmp_path / "cache", f"file://{tmp_path}/nowhere/{{owner}}-{{repo}}"
        )
    reason = str(skipped.value)
    assert f"the pinned action acme/setup-demo@{sha} is not beside the checkout" in reason
    assert f"{act.ACTIONS_ENV} is unset" in reason and "failed (offline?)" in reason
    assert not any((tmp_path / "cache").glob("acme-*")), "no half-fetched folder is left"


def test_without_a_folder_beside_the_checkout_the_public_repositories_are_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh clone's setup: no shared folder, no variable. Online the actions land in the test cache;
    offline (this machine, usually) the act tests skip with the reason."""
    monkeypatch.setattr(act, "DEFAULT_ACTIONS", tmp_path / "no-shared" / "actions")
    monkeypatch.delenv(act.ACTIONS_ENV, raising=False)
    monkeypatch.setenv("PIPELINE_TEST_CACHE", str(tmp_path / "test-cache"))
    try:
        folder = act.actions_folder()
    except pytest.skip.Exception as skipped:
        assert "failed (offline?)" in str(skipped) and "github.com/actions/" in str(skipped)
        return
    assert folder == tmp_path / "test-cache" / "actions"
    assert act.pinned_actions(act.workflow_files(), folder)


def test_an_explicit_folder_that_does_not_exist_is_an_error_not_a_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(act.ACTIONS_ENV, str(tmp_path / "missing"))
    with pytest.raises(AssertionError, match="no folder of pinned actions"):
        act.actions_folder()


def test_a_tool_cache_moved_from_another_home_is_made_again_so_its_scripts_run(tmp_path: Path) -> None:
    minor = act.setup_python_version(act.workflow_files())
    first = act.lay_out_tool_cache(tmp_path / "old-home" / "tool_cache", minor)
    # A cache copied to a new HOME (links kept, as cp -a does) and the old one gone: pip wrote the old
    # path into the scripts it installed, so they name an interpreter that is no longer there.
    shutil.copytree(tmp_path / "old-home", tmp_path / "new-home", symlinks=True)
    shutil.rmtree(tmp_path / "old-home")
    moved = tmp_path / "new-home" / "tool_cache" / first.relative_to(tmp_path / "old-home" / "tool_cache")
    assert act.broken_scripts(moved), "the copied venv's pip should name the removed interpreter"
    with pytest.raises(OSError):
        subprocess.run([str(moved / "bin" / "pip"), "--version"], capture_output=True, check=False)

    again = act.lay_out_tool_cache(tmp_path / "new-home" / "tool_cache", minor)
    assert again == moved
    assert act.broken_scripts(again) == []
    pip = subprocess.run(
        [str(again / "bin" / "pip"), "--version"], capture_output=True, text=True, check=False
    )
    assert pip.returncode == 0 and str(again) in pip.stdout, pip.stdout + pip.stderr
    assert (again.parent / "x64.complete").is_file()
