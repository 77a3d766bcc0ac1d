"""A Linux or Windows bundle is packed and checked without loading macOS's Mach-O reader (macholib):
its import was a tenth of a second of every warm build's check (docs/benchmarks.md). Nor does a Linux
bundle load Windows' PE reader (pefile) or the wheel METADATA parser (email): 9 ms of a warm build."""

from __future__ import annotations

import importlib
import importlib.abc
import sys
from pathlib import Path

import pytest


class _Refuse(importlib.abc.MetaPathFinder):
    def __init__(self, *tops: str) -> None:
        self.tops = tops

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] in self.tops:
            raise ImportError(f"{name} refused by the test")


def test_a_linux_bundle_is_checked_without_macholib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [
        m for m in sys.modules if m.partition(".")[0] == "macholib" or m.startswith("pipeline.bundle")
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_Refuse("macholib"), *sys.meta_path])
    importlib.import_module("pipeline.bundle.make")
    check = importlib.import_module("pipeline.bundle.check")
    importlib.import_module("pipeline.bundle.smoke")
    (tmp_path / "LICENSE").write_text("MIT\n")
    result = check.check_tree(tmp_path, os_name="linux", glibc_max=None)
    assert [p.kind for p in result.problems] == ["empty"]
    # A macOS bundle still needs it: the refusal is real.
    with pytest.raises(ImportError, match="macholib"):
        check.check_tree(tmp_path, os_name="macos", glibc_max=None)


def test_a_linux_bundle_is_packed_and_checked_without_pefile_or_email(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = ("pefile", "email")
    for name in [m for m in sys.modules if m.partition(".")[0] in refused or m.startswith("pipeline.bundle")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_Refuse(*refused), *sys.meta_path])
    importlib.import_module("pipeline.bundle.make")
    check = importlib.import_module("pipeline.bundle.check")
    importlib.import_module("pipeline.bundle.smoke")
    (tmp_path / "LICENSE").write_text("MIT\n")
    (tmp_path / "prog.exe").write_bytes(b"MZ not really")
    assert [p.kind for p in check.check_tree(tmp_path, os_name="linux", glibc_max=None).problems] == ["empty"]
    # A Windows bundle still reads its PE files with it.
    with pytest.raises(ImportError, match="pefile"):
        check.check_tree(tmp_path, os_name="windows", glibc_max=None)


def test_a_warm_packing_whose_sbom_is_cached_loads_no_cyclonedx(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SBOM of an unchanged manifest comes from the packaging cache (pipeline.bundle.sbom_cache): the
    CycloneDX library, 0.04 s of a warm build's CPU to load, is not imported at all."""
    from tests.support.small_bundle import small_bundle

    cache = tmp_path / "pack"
    first = small_bundle(tmp_path / "a", pack_cache=cache)
    libraries = ("cyclonedx", "py_serializable")
    for name in [
        m
        for m in sys.modules
        if m.partition(".")[0] in libraries
        or m.startswith("pipeline.bundle")
        or m.startswith("tests.support.")
    ]:
        monkeypatch.delitem(sys.modules, name)
    again = importlib.import_module("tests.support.small_bundle").small_bundle(
        tmp_path / "b", pack_cache=cache
    )
    assert again.read_bytes() == first.read_bytes()
    assert not [m for m in sys.modules if m.partition(".")[0] in libraries]
