"""Every reader of a file someone else wrote, fed malformed variants of a valid one.

Property-based (hypothesis): from a valid document, each example takes one
or more mutations (a value of the wrong type, a missing key, a huge,
negative or nan number, a bad URL or date, nested junk, a truncated text, a
byte-order mark) and hands the result to the real reader. The reader either
accepts it (the variant may still be valid) or raises the PipelineError
subclass whose exit code docs/settings.md's table documents for that kind of file;
anything else (a KeyError, a ValueError, an OverflowError...) is a traceback
a user would see, and fails the test.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.errors import PipelineError
from tests.support.therock_index import html_page, s3_page

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# Values a hostile or broken writer puts where a valid one stood.
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([float("nan"), float("inf"), -1.0, 1e308, -0.0]),
    st.sampled_from(
        [
            "",
            " ",
            "../../etc/passwd",
            "/etc/hostname",
            "http://[::1",
            "http://h:99999/x",
            "ftp://x/y",
            "0001-01-01",
            "9999-99-99T99:99:99Z",
            "2026-13-40",
            "\x00",
            "\ufeff",
            "a" * 5000,
            "x y",
            "file://",
            "http://",
            "b-1",
            "gfx",
            "10.1.0a0001010",
        ]
    ),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path of a JSON document (the root included)."""
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += _paths(value, (*prefix, i))
    return found


def _replace(doc: Any, path: tuple[Any, ...], value: Any, *, delete: bool = False) -> Any:
    if not path:
        return value
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    head, rest = path[0], path[1:]
    if delete and not rest:
        del copy[head]
        return copy
    copy[head] = _replace(copy[head], rest, value, delete=delete)
    return copy


@st.composite
def mutated_json(draw: st.DrawFn, valid: Any) -> str:
    """A JSON text: ``valid`` with one to three values replaced or deleted, or its text cut or prefixed."""
    doc = valid
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        if path and draw(st.booleans()):
            try:
                doc = _replace(doc, path, None, delete=True)
                continue
            except (KeyError, IndexError, TypeError):
                pass
        doc = _replace(doc, path, draw(JUNK))
    text = json.dumps(doc)
    how = draw(st.sampled_from(["as is", "truncate", "bom", "garbage"]))
    if how == "truncate":
        text = text[: draw(st.integers(0, max(0, len(text) - 1)))]
    elif how == "bom":
        text = "\ufeff" + text
    elif how == "garbage":
        text = text + draw(st.text(min_size=1, max_size=5))
    return text


TOML_JUNK = [
    "-1",
    "nan",
    "1e999",
    "[[1]]",
    "{a=1}",
    "true",
    '""',
    '"http://[::1"',
    "99999999999999999999999",
    '"../../x"',
    "1979-05-27T07:32:00Z",
]


@st.composite
def mutated_text(draw: st.DrawFn, valid: str) -> str:
    """A text file: lines deleted, duplicated or replaced with junk, cut short, or a BOM in front."""
    lines = valid.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["delete", "duplicate", "junk value", "junk line"]))
        if how == "delete":
            lines.pop(i)
        elif how == "duplicate":
            lines.insert(i, lines[i])
        elif how == "junk value" and "=" in lines[i]:
            key = lines[i].split("=", 1)[0]
            lines[i] = f"{key}= {draw(st.sampled_from(TOML_JUNK))}"
        else:
            lines[i] = draw(st.text(max_size=30).filter(lambda s: "\n" not in s and "\r" not in s))
        if not lines:
            lines = [""]
    text = "\n".join(lines) + "\n"
    how = draw(st.sampled_from(["as is", "truncate", "bom"]))
    if how == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif how == "bom":
        text = "\ufeff" + text
    return text


def _accepts_or_refuses(read: Callable[[], object], *codes: int) -> None:
    """The reader succeeds or raises a PipelineError with one of ``codes``; its message is one line."""
    try:
        read()
    except PipelineError as err:
        assert err.exit_code in codes, f"exit code {err.exit_code} for {type(err).__name__}: {err}"
        assert str(err).strip() and "\n" not in str(err).strip(), repr(str(err))


# --------------------------------------------------------------------------
# matrix.toml (ConfigError: 2)


@EXAMPLES
@given(data=st.data())
def test_matrix_toml(tmp_path_factory: Any, data: st.DataObject) -> None:
    from pipeline.inputs.matrix import load_matrix

    text = data.draw(mutated_text((ROOT / "matrix.toml").read_text(encoding="utf-8")))
    path = tmp_path_factory.mktemp("m") / "matrix.toml"
    path.write_text(text, encoding="utf-8")
    _accepts_or_refuses(lambda: load_matrix(path), 2)


# --------------------------------------------------------------------------
# A resolution (UsageError: 2)


def _valid_resolution() -> dict[str, Any]:
    from pipeline.inputs.resolution_file import Resolution, ResolvedRocm

    leg = ResolvedRocm(
        policy="weekly",
        cutoff=date(2026, 8, 8),
        version="10.1.0a20260807",
        file="therock-dist-linux-gfx110X-all-10.1.0a20260807.tar.gz",
        url="https://h.example/therock-dist-linux-gfx110X-all-10.1.0a20260807.tar.gz",
        published=datetime(2026, 8, 7, 9, tzinfo=UTC),
        os="linux",
        family="gfx110X-all",
        sha256_url="https://h.example/therock-dist-linux-gfx110X-all-10.1.0a20260807.tar.gz.sha256sum",
    )
    res = Resolution(
        now=datetime(2026, 8, 12, 18, tzinfo=UTC),
        rocm_policy="weekly",
        cutoff=date(2026, 8, 8),
        legs={"rocm-linux-gfx110X": leg},
        index_url="https://h.example/",
    )
    return res.to_json()


@EXAMPLES
@given(data=st.data())
def test_resolution(tmp_path_factory: Any, data: st.DataObject) -> None:
    from pipeline.inputs.resolution_file import load_resolution

    path = tmp_path_factory.mktemp("r") / "resolved.json"
    path.write_text(data.draw(mutated_json(_valid_resolution())), encoding="utf-8")
    try:
        resolution = load_resolution(str(path))
    except PipelineError as err:
        assert err.exit_code == 2 and "\n" not in str(err).strip()
        return
    # What the reader accepts, the legs download from: a URL urlsplit can take apart (port included).
    from urllib.parse import urlsplit

    for leg in resolution.legs.values():
        for url in (leg.url, leg.sha256_url, resolution.index_url):
            if url is not None:
                assert urlsplit(url).port is None or urlsplit(url).port is not None


# --------------------------------------------------------------------------
# A source manifest (SourceError: 3)


@EXAMPLES
@given(data=st.data())
def test_source_manifest(tmp_path_factory: Any, data: st.DataObject) -> None:
    from pipeline.source.archive import SourceManifest, manifest_path, read_manifest

    valid = SourceManifest(
        archive="llama.cpp-b1.tar.gz",
        tag="b1",
        commit="0" * 40,
        sha256="a" * 64,
        size=10,
        source={"tag": "b1", "mix": []},
    ).to_json()
    folder = tmp_path_factory.mktemp("s")
    archive = folder / "llama.cpp-b1.tar.gz"
    archive.write_bytes(b"0123456789")
    manifest_path(archive).write_text(data.draw(mutated_json(valid)), encoding="utf-8")
    _accepts_or_refuses(lambda: read_manifest(archive), 3)


# --------------------------------------------------------------------------
# TheRock's index, HTML and S3 XML (IndexFormatError: 5)

_FILES = [
    ("therock-dist-linux-gfx110X-all-10.1.0a20260807.tar.gz", "2026-08-07T09:30:00Z"),
    ("therock-dist-linux-gfx1151-10.1.0a20260806.tar.gz", 1786000000),
]


@EXAMPLES
@given(data=st.data())
def test_html_index(data: st.DataObject) -> None:
    from pipeline.rocm.index import parse_html_index

    page = html_page(_FILES)
    start = page.index("[")
    end = page.rindex("]") + 1
    files = json.loads(page[start:end])
    mutated = page[:start] + data.draw(mutated_json(files)) + page[end:]
    _accepts_or_refuses(lambda: parse_html_index(mutated, where="index"), 5)


@EXAMPLES
@given(data=st.data())
def test_s3_index(data: st.DataObject) -> None:
    from pipeline.rocm.index import parse_s3_page

    page = s3_page(
        [(name, datetime(2026, 8, 7, 9, tzinfo=UTC)) for name, _ in _FILES], truncated=True, token="t"
    )
    _accepts_or_refuses(lambda: parse_s3_page(data.draw(mutated_text(page)), where="index"), 5)


# --------------------------------------------------------------------------
# A ccache stats log (the vendored parser's CcacheStatsError, a ValueError its callers turn into a line)


@EXAMPLES
@given(data=st.data())
def test_ccache_stats_log(data: st.DataObject) -> None:
    from pipeline.ccache.stats_parser import CcacheStatsError, parse_stats_log, summarize

    valid = (ROOT / "tests" / "unit" / "data" / "ccache" / "stats-log-4.14.log").read_text(encoding="utf-8")
    try:
        summarize(parse_stats_log(data.draw(mutated_text(valid))))
    except CcacheStatsError as exc:
        assert "\n" not in str(exc).strip()


@EXAMPLES
@given(data=st.data())
def test_ccache_print_stats_json(data: st.DataObject) -> None:
    from pipeline.ccache.stats_parser import CcacheStatsError, parse_print_stats, summarize

    valid = json.loads((ROOT / "tests" / "unit" / "data" / "ccache" / "print-stats-4.14.json").read_text())
    try:
        summarize(parse_print_stats(data.draw(mutated_json(valid))))
    except CcacheStatsError as exc:
        assert "\n" not in str(exc).strip()


# --------------------------------------------------------------------------
# A tarball (ToolchainError: 7)


def _valid_tarball() -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, body in (("./lib/llvm/bin/clang", b"#!/bin/sh\n"), ("./README", b"hello\n" * 50)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(body), 0o755
            tar.addfile(info, io.BytesIO(body))
    return gzip.compress(raw.getvalue(), mtime=0)


@EXAMPLES
@given(data=st.data())
def test_tarball(tmp_path_factory: Any, data: st.DataObject) -> None:
    from pipeline.archives.extract import check_archive, extract_archive

    blob = bytearray(_valid_tarball())
    how = data.draw(st.sampled_from(["flip", "truncate", "garbage"]))
    if how == "flip":
        for _ in range(data.draw(st.integers(1, 8))):
            blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    elif how == "truncate":
        blob = blob[: data.draw(st.integers(0, len(blob) - 1))]
    else:
        blob += data.draw(st.binary(min_size=1, max_size=64))
    folder = tmp_path_factory.mktemp("t")
    archive = folder / "therock.tar.gz"
    archive.write_bytes(bytes(blob))
    _accepts_or_refuses(lambda: (check_archive(archive), extract_archive(archive, folder / "out")), 7)


# --------------------------------------------------------------------------
# An API answer: an Actions cache entry (GitHubError: 8)


@EXAMPLES
@given(data=st.data())
def test_actions_cache_entry(data: st.DataObject) -> None:
    from pipeline.actions_cache.entries import CacheEntry

    valid = {
        "id": 7,
        "ref": "refs/heads/main",
        "key": "ccache-cpu-gcc-12-b1",
        "version": "v",
        "created_at": "2026-08-07T09:30:00Z",
        "last_accessed_at": "2026-08-08T09:30:00Z",
        "size_in_bytes": 1234,
    }
    text = data.draw(mutated_json(valid))
    try:
        item = json.loads(text)
    except ValueError:
        return  # the REST transport refuses a body that is not JSON before any entry is read
    _accepts_or_refuses(lambda: CacheEntry.from_api(item, where="caches page 1"), 8)


# --------------------------------------------------------------------------
# One rule for a URL wherever it is read


BAD_URLS = [
    "http://[::1/x",
    "http://h:99999/x",
    "ftp://h/x",
    "http:///x",
    "http://h/x y",
    "http://h/\x00",
    "h/x",
    "",
]
GOOD_URLS = [
    "https://h.example/x.tar.gz",
    "http://127.0.0.1:8080/x",
    "file:///tmp/x.tar.gz",
    "http://[::1]:80/x",
]


def _resolution_with(url: str) -> Callable[[], object]:
    from pipeline.inputs.resolution_file import load_resolution

    doc = _valid_resolution()
    doc["legs"]["rocm-linux-gfx110X"]["url"] = url
    return lambda: load_resolution(json.dumps(doc))


def _pin_with(url: str) -> Callable[[], object]:
    from pipeline.inputs.pins import parse_sdk_pin

    return lambda: parse_sdk_pin(
        {"url": url, "sha256": "a" * 64, "version": "1.4.328.1"},
        Path("matrix.toml"),
        "toolchains.vulkan.linux",
    )


def _matrix_with(url: str) -> Callable[[], object]:
    from pipeline.inputs.matrix import parse_matrix

    data = {
        "source": {"repo": "https://github.com/ggml-org/llama.cpp", "tag": "b1"},
        "rocm": {"index_url": url},
        "legs": {"cpu": {"backend": "cpu", "os": "linux"}},
    }
    return lambda: parse_matrix(data, Path("matrix.toml"))


def _flag_with(url: str) -> Callable[[], object]:
    from pipeline.inputs.settings import INDEX_URL

    return lambda: INDEX_URL.parse(url, "--index-url")


READERS = {
    "resolution": _resolution_with,
    "toolchain pin": _pin_with,
    "matrix.toml": _matrix_with,
    "flag": _flag_with,
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("url", BAD_URLS)
def test_every_reader_refuses_the_same_bad_urls(reader: str, url: str) -> None:
    with pytest.raises(PipelineError) as caught:
        READERS[reader](url)()
    assert caught.value.exit_code == 2
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("url", GOOD_URLS)
def test_every_reader_accepts_the_same_good_urls(reader: str, url: str) -> None:
    READERS[reader](url)()


# --------------------------------------------------------------------------
# A leg record, another job's artifact: report and cache-save (PipelineError: 1), publish (PublishError: 10)


def _valid_record() -> dict[str, Any]:
    from pipeline.results.record import LegRecord

    return LegRecord(
        leg="cpu",
        backend="cpu",
        os="linux",
        started="2026-08-12T18:00:00Z",
        wall_seconds=321.5,
        status="success",
        source={"tag": "b7000", "commit": "0" * 40, "path": "/w/src"},
        cmake_args=["-DGGML_NATIVE=OFF"],
        ccache={
            "hits": 120,
            "misses": 11,
            "uncacheable": 0,
            "errors": 0,
            "direct_hits": 110,
            "preprocessed_hits": 10,
            "hit_rate": 0.916,
            "ccache_dir": "/w/ccache",
            "previous_toolchain": "gcc-12.2.0",
        },
        toolchain={"kind": "host", "identity": "gcc-12.2.0", "compilers": {"C": "gcc 12.2.0"}},
        phases={"configure": 3.5, "build": 300.0, "package": 2.0},
        timings={"wall_seconds": 300.0, "critical_path_seconds": 120.0, "steps": 140},
        bundle="dist/llama-b7000-bin-ubuntu-x64.tar.gz",
        bundle_check={
            "ok": True,
            "problems": [],
            "checks": [{"name": "versions", "status": "passed", "line": "ok"}],
        },
        warnings=["a warning"],
    ).to_json()


@EXAMPLES
@given(data=st.data())
def test_leg_record(tmp_path_factory: Any, data: st.DataObject) -> None:
    from pipeline.ccache.save_stats import save_inputs
    from pipeline.release.collect import read_results
    from pipeline.report.formats import leg_rows
    from pipeline.results.record import LegRecord

    out = tmp_path_factory.mktemp("o")
    (out / "cpu").mkdir()
    path = out / "cpu" / "record.json"
    path.write_text(data.draw(mutated_json(_valid_record())), encoding="utf-8")

    def report() -> object:
        return leg_rows([LegRecord.read(path)], {}, 0.5)

    _accepts_or_refuses(report, 1)
    _accepts_or_refuses(lambda: save_inputs(out / "cpu"), 1)
    _accepts_or_refuses(lambda: read_results(out), 10)
