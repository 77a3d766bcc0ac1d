"""A build never replaces another leg's bundle in ``out/dist`` (pipeline/bundle/dist_owner.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pipeline.bundle.dist_owner import bundle_owner
from pipeline.errors import BundleError
from pipeline.results.record import LegRecord
from tests.support.bundles import make_bundle
from tests.support.small_bundle import COMMIT, CPU, TAG, TOOLCHAIN, small_bundle

NAME = "llama-b100-bin-ubuntu-x64.tar.gz"


def test_the_sbom_beside_the_bundle_names_its_leg(tmp_path: Path) -> None:
    bundle = small_bundle(tmp_path)
    assert bundle.name == NAME
    assert bundle_owner(tmp_path, NAME, leg="cpu-o3") == "cpu"
    assert bundle_owner(tmp_path, NAME, leg="cpu") is None  # its own: rebuilt in place
    assert bundle_owner(tmp_path, "llama-b101-bin-ubuntu-x64.tar.gz", leg="cpu-o3") is None  # nothing there


def test_without_its_sbom_a_record_naming_the_bundle_says_whose_it_is(tmp_path: Path) -> None:
    bundle = small_bundle(tmp_path)
    bundle.with_name(bundle.name + ".cdx.json").unlink()
    assert bundle_owner(tmp_path, NAME, leg="cpu-o3") is None  # no SBOM, no record: nobody's
    record = tmp_path / "cpu" / "record.json"  # the folder the packaging staged in
    record.write_text(json.dumps({"leg": "cpu", "bundle": f"dist/{NAME}"}))
    assert bundle_owner(tmp_path, NAME, leg="cpu-o3") == "cpu"


def test_a_second_leg_with_the_first_legs_name_is_refused_and_the_bundle_kept(tmp_path: Path) -> None:
    bundle = small_bundle(tmp_path)
    before = bundle.read_bytes()
    other = replace(CPU, name="cpu-o3")
    record = LegRecord(
        leg="cpu-o3",
        backend="cpu",
        os="linux",
        started="2026-03-14T12:00:00+00:00",
        source={"tag": TAG, "commit": COMMIT},
        toolchain=TOOLCHAIN.to_record(),
    )
    with pytest.raises(BundleError, match=r"is leg 'cpu''s bundle; refusing to replace it"):
        make_bundle(
            leg=other,
            record=record,
            build_dir=tmp_path / "build",
            out_dir=tmp_path,
            toolchain=TOOLCHAIN,
            tag=TAG,
            commit=COMMIT,
        )
    assert bundle.read_bytes() == before
