"""Pure helpers of the reproduce command: where the source went, which spec rebuilds it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.bundle.compare import Comparison
from pipeline.errors import BundleError
from pipeline.inputs.matrix import parse_matrix
from pipeline.leg.reproduce import material_differences, recorded_source_dir, spec_from_manifest

MATRIX = parse_matrix(
    {"source": {"repo": "https://example.invalid/llama.cpp"}, "legs": {"cpu": {"backend": "cpu"}}},
    Path("m.toml"),
)
PIN = {"repo": "o/r", "number": 3, "sha": "a" * 40}


def manifest(**source: Any) -> dict[str, Any]:
    return {
        "cmake_args": ["-G", "Ninja", "-S", "<out>/src/llama.cpp-b100", "-B", "<build>"],
        "source": source,
    }


def test_recorded_source_dir() -> None:
    assert recorded_source_dir(manifest()) == "src/llama.cpp-b100"
    assert recorded_source_dir({"cmake_args": ["-S", "<source>"]}) is None
    assert recorded_source_dir({"cmake_args": ["-S", "<out>/../escape"]}) is None
    # A manifest is someone else's file: an absolute folder is not "inside the output folder".
    assert recorded_source_dir({"cmake_args": ["-S", "<out>//etc"]}) is None
    assert recorded_source_dir({"cmake_args": ["-S", "<out>/src\\..\\..\\escape"]}) is None


def test_a_bundle_whose_manifest_tag_leaves_the_output_folder_is_refused(tmp_path: Path) -> None:
    import json

    from pipeline.bundle.make import FORMAT, FORMAT_VERSION
    from pipeline.cli import main
    from tests.support.archives import make_tar, tar_file

    matrix = tmp_path / "matrix.toml"
    matrix.write_text('[source]\nrepo = "https://example.invalid/llama.cpp"\n[legs.cpu]\nbackend = "cpu"\n')
    data = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "files": [],
        "tag": "../../probe-evil-tag",
        "leg": {"name": "cpu", "backend": "cpu", "os": "linux", "family": None},
        "source": {"commit": "a" * 40, "base_tag": "b1"},
    }
    bundle = make_tar(tmp_path / "b.tar.gz", [tar_file("manifest.json", json.dumps(data).encode())])
    code = main(["--matrix", str(matrix), "reproduce", str(bundle), "--out", str(tmp_path / "out")])
    assert code == BundleError.exit_code
    assert not (tmp_path / "out").exists() and not list(tmp_path.rglob("probe-evil-tag*"))
    assert recorded_source_dir({}) is None


def test_spec_from_manifest_falls_back_to_the_matrix_repo() -> None:
    spec = spec_from_manifest(
        manifest(repo=None, base_tag="b100", base_commit="b" * 40, commit="c" * 40, mix=[PIN]), MATRIX, "x"
    )
    assert spec.repo == "https://example.invalid/llama.cpp"
    assert spec.tag.startswith("b100-mix-") and spec.commit == "c" * 40 and spec.mix[0].number == 3


@pytest.mark.parametrize(
    ("source", "message"),
    [({"base_tag": "b1"}, "no source commit"), ({"commit": "c" * 40}, "no base tag")],
)
def test_spec_from_manifest_needs_commit_and_base(source: dict[str, Any], message: str) -> None:
    with pytest.raises(BundleError, match=message):
        spec_from_manifest(manifest(**source), MATRIX, "x")


def test_provenance_differences_do_not_count() -> None:
    result = Comparison(
        a="a", b="b", manifest_differences=["source.repo", "source.mix", "source.commit", "tag"]
    )
    assert material_differences(result) == ["source.commit", "tag"]
