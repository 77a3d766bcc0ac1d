"""Inputs that used to end in a traceback: JSON nested thousands deep, a manifest of gigabytes, a build
file named like the bundle's own manifest, a warn fraction of 0, a size past a float's range.

Each must be the reader's own PipelineError (one ``error:`` line and its exit code at the CLI).
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from pipeline.archives.deterministic import read_members
from pipeline.bundle.make import collect_payload, parse_manifest, read_manifest_file
from pipeline.bundle.sbom import sbom_files
from pipeline.errors import BundleError, ConfigError, IndexFormatError
from pipeline.inputs.matrix import parse_matrix
from pipeline.rocm.wheel_index import parse_json_page
from pipeline.util.json_text import MAX_DOCUMENT_BYTES

LEG = {"legs": {"cpu": {"backend": "cpu", "os": "linux"}}}
# Far deeper than CPython's recursion limit (1000): json.loads raised RecursionError.
DEEP = "[" * 100_000 + "]" * 100_000


def test_an_sbom_nested_thousands_deep_is_a_bundle_error() -> None:
    with pytest.raises(BundleError, match=r"^x\.cdx\.json: the SBOM is nested too deep to read$"):
        sbom_files(DEEP.encode(), "x.cdx.json")
    # Deep inside an object that is otherwise an SBOM.
    raw = ('{"bomFormat": "CycloneDX", "specVersion": "1.6", "components": ' + DEEP + "}").encode()
    with pytest.raises(BundleError, match="nested too deep"):
        sbom_files(raw, "x.cdx.json")


def test_a_wheel_index_page_nested_thousands_deep_is_an_index_error() -> None:
    with pytest.raises(
        IndexFormatError, match=r"^https://i\.invalid/p/: the index page is nested too deep to read$"
    ):
        parse_json_page('{"files": ' + DEEP + "}", where="https://i.invalid/p/")


def test_a_manifest_nested_thousands_deep_is_a_bundle_error() -> None:
    with pytest.raises(
        BundleError, match=r"^b\.tar\.gz:manifest\.json: the manifest is nested too deep to read$"
    ):
        parse_manifest(DEEP.encode(), "b.tar.gz:manifest.json")


def test_a_manifest_file_over_the_bound_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "manifest.json"
    with big.open("wb") as fh:
        fh.truncate(MAX_DOCUMENT_BYTES + 1)  # sparse: nothing to write, but its size is what counts
    with pytest.raises(
        BundleError, match=r"manifest\.json: the manifest is 32\.0 MiB, over the 32\.0 MiB it may be"
    ):
        read_manifest_file(big)


def test_a_manifest_member_that_inflates_past_the_bound_is_refused(tmp_path: Path) -> None:
    # Zeros compress about a thousandfold: a small archive whose manifest would fill memory.
    bundle = tmp_path / "llama-b1-bin-ubuntu-x64.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("llama-b1/manifest.json")
        info.size = MAX_DOCUMENT_BYTES + 10
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    bundle.write_bytes(gzip.compress(buffer.getvalue()))
    assert bundle.stat().st_size < MAX_DOCUMENT_BYTES // 100
    with pytest.raises(
        BundleError, match=r"llama-b1/manifest\.json: a manifest or SBOM is 32\.0 MiB, over the 32\.0 MiB"
    ):
        list(read_members(bundle))


@pytest.mark.parametrize("name", ["manifest.json", "sbom.cdx.json"])
def test_a_build_file_named_like_the_bundles_own_is_refused_naming_it(tmp_path: Path, name: str) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "llama-cli").write_bytes(b"ELF")
    (tmp_path / "bin" / name).write_text("{}")
    for path in (tmp_path / "bin").iterdir():
        path.chmod(0o755)
    with pytest.raises(
        BundleError,
        match=rf"bin/{name}: a build file named {name} would take the place of the "
        rf"bundle's own {name}; rename or remove it from bin/",
    ):
        collect_payload(tmp_path, symlinks=True)


def test_a_warn_fraction_of_0_is_refused_naming_the_key() -> None:
    with pytest.raises(
        ConfigError, match=r"github\.cache_warn_fraction: expected a number above 0 and up to 1, got 0"
    ):
        parse_matrix({**LEG, "github": {"cache_warn_fraction": 0}}, Path("m.toml"))
    assert (
        parse_matrix(
            {**LEG, "github": {"cache_warn_fraction": 0.5}}, Path("m.toml")
        ).github.cache_warn_fraction
        == 0.5
    )


@pytest.mark.parametrize("size", ["1" + "0" * 400 + "G", "2000T", "1e400"])
def test_a_size_past_what_a_budget_holds_is_refused_naming_the_key(size: str) -> None:
    with pytest.raises(
        ConfigError, match=r"ccache\.max_size: expected a size like '5G' or '500M', at most 1 PiB"
    ):
        parse_matrix({**LEG, "ccache": {"max_size": size}}, Path("m.toml"))


def test_a_size_within_the_bound_is_kept() -> None:
    assert parse_matrix({**LEG, "ccache": {"max_size": "1000T"}}, Path("m.toml")).ccache.max_size == "1000T"


@pytest.mark.parametrize("given", ["--sums", "--sbom"])
def test_verify_refuses_a_sums_file_or_an_sbom_over_the_bound_unread(tmp_path: Path, given: str) -> None:
    from pipeline.bundle.verify import verify_bundle
    from pipeline.errors import PipelineError

    bundle = tmp_path / "llama-b1-bin-ubuntu-x64.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("llama-b1/LICENSE")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"MIT\n"))
    bundle.write_bytes(gzip.compress(buffer.getvalue()))
    big = tmp_path / "big"
    with big.open("wb") as fh:
        fh.truncate(MAX_DOCUMENT_BYTES + 1)
    with pytest.raises(PipelineError, match=r"is 32\.0 MiB, over the 32\.0 MiB it may be; refused unread"):
        if given == "--sums":
            verify_bundle(bundle, sums=big)
        else:
            verify_bundle(bundle, sbom=big)
