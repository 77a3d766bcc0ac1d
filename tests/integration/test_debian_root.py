"""tests/support/sid_root.py's DebianRoot: a made root whose package list grew is completed, not made again.

The sid root in a machine's test cache was made before ``libssl-dev`` joined
its list (and had it installed by hand): adding it must not cost a new 5 GB
root. The root's dpkg database is read by this machine's ``dpkg-query``
(``--admindir``), from a status file written here in dpkg's format.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.sid_root import DebianRoot

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="dpkg-query is not installed"),
]


def _root(cache: Path, installed: dict[str, str]) -> DebianRoot:
    root = cache / "demo" / "root"
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/marker").write_text("")
    (root / "var/lib/dpkg").mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text("".join(
        f"Package: {name}\nStatus: install ok {state}\nArchitecture: amd64\nVersion: 1.0\n"
        f"Maintainer: nobody <nobody@example.invalid>\nDescription: {name}\n\n" for name, state in installed.items()
    ))  # fmt: skip
    return DebianRoot(
        suite="demo", packages=("git", "g++", "libssl-dev"), folder="demo", marker="usr/bin/marker"
    )


def test_the_packages_a_made_root_lacks_are_named(tmp_path: Path) -> None:
    made = _root(tmp_path, {"git": "installed", "g++": "installed", "libssl-dev": "unpacked"})
    assert made.missing(tmp_path / "demo" / "root") == ["libssl-dev"]


def test_a_complete_root_is_taken_as_it_is_and_stamped(tmp_path: Path) -> None:
    made = _root(tmp_path, {"git": "installed", "g++": "installed", "libssl-dev": "installed"})
    root = made.made(tmp_path)
    assert root == tmp_path / "demo" / "root" and (root / "usr/bin/marker").is_file()
    # Not made again (no mmdebstrap, nothing mounted), and the list it was checked against recorded.
    assert (tmp_path / "demo" / "packages").read_text() == "git\ng++\nlibssl-dev"
    # Beside the root and its stamp only the makers' lock (one maker at a time): no partial root was made.
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == [".lock", "packages", "root"]
