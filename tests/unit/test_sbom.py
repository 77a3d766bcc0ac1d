"""A bundle's CycloneDX SBOM: valid by the library's own validator, every file listed with its true hash."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from pipeline.bundle.sbom import SBOM_NAME, sbom_files, validation_error
from pipeline.names import SBOM_SUFFIX
from tests.support.small_bundle import COMMIT, small_bundle

build = small_bundle


def members(bundle: Path) -> dict[str, bytes]:
    """Every file of the tar.gz by its path below the top folder, read with tarfile (not the pipeline)."""
    with tarfile.open(bundle) as tar:
        found = {}
        for m in tar.getmembers():
            if m.isfile():
                fh = tar.extractfile(m)
                assert fh is not None
                found[m.name.split("/", 1)[1]] = fh.read()
    return found


def sbom_of(bundle: Path) -> tuple[bytes, dict[str, Any]]:
    raw = members(bundle)[SBOM_NAME]
    return raw, json.loads(raw)


def test_the_sbom_validates_lists_every_file_and_its_hashes_match(tmp_path: Path) -> None:
    bundle = build(tmp_path)
    raw, data = sbom_of(bundle)
    assert validation_error(raw) is None
    assert (data["bomFormat"], data["specVersion"]) == ("CycloneDX", "1.6")
    files = members(bundle)
    listed = sbom_files(raw, "test")
    # Everything the archive holds but the SBOM itself, manifest.json included.
    assert set(listed) == set(files) - {SBOM_NAME}
    assert "manifest.json" in listed and "llama-cli" in listed
    for path, entry in listed.items():
        assert entry.sha256 == hashlib.sha256(files[path]).hexdigest(), path
    # The release asset beside the bundle is the same SBOM.
    assert bundle.with_name(bundle.name + SBOM_SUFFIX).read_bytes() == raw


def test_the_sbom_names_llama_cpp_with_its_tag_commit_and_license(tmp_path: Path) -> None:
    _, data = sbom_of(build(tmp_path))
    llama = next(c for c in data["components"] if c["name"] == "llama.cpp")
    assert llama["version"] == "b100"
    assert {"name": "llama-pipeline:commit", "value": COMMIT} in llama["properties"]
    assert llama["licenses"] == [{"expression": "MIT"}]
    assert data["metadata"]["component"]["name"] == "llama-b100-bin-ubuntu-x64.tar.gz"
    assert "timestamp" not in data["metadata"]


def test_the_same_inputs_give_the_same_sbom(tmp_path: Path) -> None:
    assert sbom_of(build(tmp_path / "a"))[0] == sbom_of(build(tmp_path / "b"))[0]


def test_the_validator_refuses_a_broken_sbom(tmp_path: Path) -> None:
    # The validation above means something only if it can fail.
    _, data = sbom_of(build(tmp_path))
    data["components"][0]["hashes"] = [{"alg": "SHA-999", "content": "00"}]
    assert validation_error(json.dumps(data).encode()) is not None
    data["specVersion"] = "9.9"
    assert validation_error(json.dumps(data).encode()) is not None


def test_a_mixed_pull_request_reads_the_same_whatever_its_key_order() -> None:
    # A build's record keeps a mix pin's keys in matrix.toml's order, a manifest read back (reproduce)
    # in sorted order: the SBOM inside the bundle must be the same bytes for both.
    from pipeline.bundle.sbom import sbom_json

    sha = "487dfed1e9825dc8bf2829d4cf10409e98b6d39d"

    def manifest(pin: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": "llama-b1-bin-ubuntu-x64.tar.gz",
            "tag": "b1",
            "files": [],
            "source": {"tag": "b1", "commit": COMMIT, "mix": [pin]},
        }

    built = sbom_json(
        manifest({"repo": "ggml-org/llama.cpp", "number": 4242, "sha": sha}), manifest_sha256="0" * 64
    )
    again = sbom_json(
        manifest({"number": 4242, "repo": "ggml-org/llama.cpp", "sha": sha}), manifest_sha256="0" * 64
    )
    assert built == again
    props = [p for c in json.loads(built)["components"] for p in c.get("properties", [])]
    assert {"name": "llama-pipeline:mix", "value": f"ggml-org/llama.cpp#4242@{sha}"} in props


def _counting_sboms(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The manifests' sha256 each SBOM is made for from now on (made, not read back from a cache)."""
    from pipeline.bundle import sbom

    made: list[str] = []
    real = sbom.sbom_json

    def counting(manifest: Any, *, manifest_sha256: str, manifest_name: str) -> bytes:
        made.append(manifest_sha256)
        return real(manifest, manifest_sha256=manifest_sha256, manifest_name=manifest_name)

    monkeypatch.setattr(sbom, "sbom_json", counting)
    return made


def test_the_sbom_of_an_unchanged_manifest_is_made_once_and_is_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm rebuild's manifest is the last run's: its SBOM comes from the packaging cache, the same bytes
    as one made without a cache, inside the bundle and beside it."""
    made = _counting_sboms(monkeypatch)
    cache = tmp_path / "pack"
    first = small_bundle(tmp_path / "a", pack_cache=cache)
    again = small_bundle(tmp_path / "b", pack_cache=cache)
    uncached = small_bundle(tmp_path / "c")
    assert len(made) == 2 and made[0] == made[1]  # the first run's and the uncached one's
    assert sbom_of(again)[0] == sbom_of(first)[0] == sbom_of(uncached)[0]
    assert again.read_bytes() == uncached.read_bytes()
    beside = again.with_name(again.name + SBOM_SUFFIX)
    assert beside.read_bytes() == sbom_of(uncached)[0]
    # It is kept with the compressed members, where prune --local finds it.
    from pipeline.toolchain.local_caches import scan_pack

    assert [e.name.rsplit(".", 2)[-2:] for e in scan_pack(cache) if e.name.endswith(SBOM_SUFFIX)] == [
        ["cdx", "json"]
    ]


def test_another_manifest_or_a_damaged_cache_entry_makes_the_sbom_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.bundle import sbom_cache

    made = _counting_sboms(monkeypatch)
    cache = tmp_path / "pack"
    manifest = {"name": "x", "files": [{"path": "LICENSE", "sha256": "ab" * 32, "size": 4}]}
    first = sbom_cache.cached_sbom(
        manifest, manifest_sha256="1" * 64, manifest_name="manifest.json", cache=cache
    )
    assert (
        sbom_cache.cached_sbom(manifest, manifest_sha256="1" * 64, manifest_name="manifest.json", cache=cache)
        == first
    )
    assert len(made) == 1
    # The same content under another manifest digest is another SBOM (its serial number and manifest hash).
    other = sbom_cache.cached_sbom(
        manifest, manifest_sha256="2" * 64, manifest_name="manifest.json", cache=cache
    )
    assert other != first and len(made) == 2
    # A kept file that is not this manifest's SBOM is made again, and replaced.
    writer = sbom_cache.writer_identity()
    assert writer is not None
    kept = sbom_cache.cache_path(cache, sbom_cache.sbom_key("1" * 64, "manifest.json", writer))
    kept.write_bytes(b'{"bomFormat": "CycloneDX"}')
    assert (
        sbom_cache.cached_sbom(manifest, manifest_sha256="1" * 64, manifest_name="manifest.json", cache=cache)
        == first
    )
    assert len(made) == 3 and kept.read_bytes() == first


def test_the_sbom_key_names_the_writer_and_its_libraries_versions() -> None:
    from pipeline.bundle import sbom_cache

    writer = sbom_cache.writer_identity()
    assert writer is not None
    module_digest, *libraries = writer.split("\0")
    import pipeline.bundle.sbom as module

    assert module_digest == hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()
    assert [name.split("-")[0] for name in libraries] == ["cyclonedx_python_lib", "py_serializable"]
    assert sbom_cache.sbom_key("1" * 64, "manifest.json", writer) != sbom_cache.sbom_key(
        "1" * 64, "manifest.json", writer + "x"
    )
