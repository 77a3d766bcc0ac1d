"""The seven ROCm families on both OSes: one resolution, one read of TheRock's index, fourteen tarballs.

The shipped matrix.toml is resolved as it is (its [rocm_families] table and
its fourteen ROCm legs), against a local HTML index that lists each family's
nightlies for both OSes, plus families no leg builds; only the source repo
and the index URL are pointed at local stand-ins.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from tests.support.gitrepos import commit_files, init_repo, tag
from tests.support.httpserver import LocalServer, Response
from tests.support.pipeline_cli import ROOT, run_pipeline
from tests.support.therock_index import html_page, nightlies

pytestmark = pytest.mark.integration

NOW = "2026-08-12T18:00:00Z"  # a Wednesday: the weekly cutoff is Saturday 2026-08-08
# TheRock's family names as its index spells them (the fact sheet's families), and one no leg builds.
FAMILIES = ("gfx1151", "gfx1150", "gfx120X-all", "gfx110X-all", "gfx103X-dgpu", "gfx90X-dcgpu")
ENTRIES = [e for os_name in ("linux", "windows") for fam in (*FAMILIES, "gfx94X-dcgpu")
           for e in nightlies(os_name, fam, "10.1.0", date(2026, 7, 28), 18)]


def test_one_resolution_serves_all_fourteen_rocm_legs(http_server: LocalServer, tmp_path: Path) -> None:
    index = "/tarball-multi-arch/"
    http_server.route(index, Response(200, html_page(ENTRIES).encode(), {"Content-Type": "text/html; charset=utf-8"}))
    upstream = tmp_path / "upstream"
    init_repo(upstream)
    when = datetime(2026, 1, 5, tzinfo=UTC)
    commit_files(upstream, {"CMakeLists.txt": "project(x)\n"}, "base", when=when)
    tag(upstream, "b100", when=when)
    text = (ROOT / "matrix.toml").read_text(encoding="utf-8")
    text = text.replace('repo = "https://github.com/ggml-org/llama.cpp"', f'repo = "{upstream}"', 1)
    text = text.replace('index_url = "https://rocm.nightlies.amd.com/tarball-multi-arch/"',
                        f'index_url = "{http_server.url(index)}"', 1)
    (tmp_path / "matrix.toml").write_text(text)
    proc = run_pipeline(["--matrix", str(tmp_path / "matrix.toml"), "resolve", "--now", NOW, "--rocm-version", "weekly"],
                        cwd=tmp_path, env={"PIPELINE_HTTP_BACKOFF": "0"})
    assert proc.returncode == 0, proc.stderr
    legs = json.loads((tmp_path / "out" / "resolved.json").read_text())["legs"]
    assert len(legs) == 14
    assert http_server.hits(index) == 1  # one read of the index for the whole run
    # Each leg takes its family's tarball for its OS, the build dated on the cutoff's eve.
    expected_family = {"gfx1151": "gfx1151", "gfx1150": "gfx1150", "gfx120X": "gfx120X-all", "gfx110X": "gfx110X-all",
                       "gfx103X": "gfx103X-dgpu", "gfx90a": "gfx90X-dcgpu", "gfx908": "gfx90X-dcgpu"}
    for leg, entry in legs.items():
        _, os_name, short = leg.split("-", 2)
        assert entry["version"] == "10.1.0a20260808", leg
        assert entry["url"].endswith(f"/therock-dist-{os_name}-{expected_family[short]}-10.1.0a20260808.tar.gz"), leg
    assert {leg.split("-")[1] for leg in legs} == {"linux", "windows"}
