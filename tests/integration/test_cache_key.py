"""`python -m pipeline cache-key`: keys from the real toolchain and from the run's resolution."""

from __future__ import annotations

import json
import os
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from pipeline.actions_cache.cache_keys import parse_key
from pipeline.inputs.resolution_file import Resolution, ResolvedRocm
from pipeline.toolchain.host_compiler import host_toolchain
from tests.support.actions_files import read_file_commands
from tests.support.httpserver import LocalServer, Response
from tests.support.pipeline_cli import ROOT, run_pipeline

pytestmark = pytest.mark.integration

MATRIX = str(ROOT / "matrix.toml")
ROCM = "rocm-linux-gfx110X"
VERSION = "10.1.0a20260801"


def resolution(
    source: dict[str, object] | None,
    url: str = f"http://127.0.0.1:9/therock-dist-linux-gfx110X-all-{VERSION}.tar.gz",
) -> str:
    build = ResolvedRocm(
        policy="weekly",
        cutoff=date(2026, 8, 1),
        version=VERSION,
        file=f"therock-dist-linux-gfx110X-all-{VERSION}.tar.gz",
        url=url,
        published=datetime(2026, 8, 1, 9, 0, tzinfo=UTC),
        os="linux",
        family="gfx110X-all",
    )
    res = Resolution(
        now=datetime(2026, 8, 4, 9, 17, tzinfo=UTC),
        rocm_policy="weekly",
        cutoff=date(2026, 8, 1),
        legs={ROCM: build},
    )
    # The source as a resolution file carries it (JSON), checked by whoever reads the file.
    return json.dumps({**res.to_json(), "source": source})


def actions_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(tmp_path / "output"), **extra}


def test_cpu_key_carries_the_real_compiler(tmp_path: Path) -> None:
    proc = run_pipeline(
        ["--matrix", MATRIX, "cache-key", "cpu", "--tag", "b10327"], env=actions_env(tmp_path)
    )
    assert proc.returncode == 0, proc.stderr
    identity = host_toolchain(os.environ).identity
    outputs = read_file_commands(tmp_path / "output")
    assert outputs["key"] == f"llama-ccache--cpu--{identity}--b10327"
    assert outputs["restore-keys"] == f"llama-ccache--cpu--{identity}--"
    assert outputs["toolchain"] == identity
    assert Path(outputs["ccache-dir"]).is_absolute() and outputs["ccache-dir"].endswith("cpu")
    assert "toolchain-key" not in outputs  # nothing downloaded, nothing to cache


# The resolution's source is typed: its tag must be the one its base tag and mix set give
# (b10327 + this pin -> b10327-mix-cec6aa7, computed once and pinned here).
MIX_SOURCE = {
    "repo": "https://github.com/ggml-org/llama.cpp",
    "base_tag": "b10327",
    "tag": "b10327-mix-cec6aa7",
    "mix": [
        {"repo": "ggml-org/llama.cpp", "number": 12345, "sha": "0123456789abcdef0123456789abcdef01234567"}
    ],
}


def test_a_resolution_whose_source_tag_does_not_match_its_mix_is_refused(tmp_path: Path) -> None:
    env = {"PIPELINE_RESOLVED": resolution({**MIX_SOURCE, "tag": "b10327-mix-1a2b3c4"})}
    proc = run_pipeline(["--matrix", MATRIX, "cache-key", ROCM, "--json"], env=env)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "does not match its base tag and mix set" in proc.stderr


def test_rocm_key_from_the_resolution_with_a_mix_tag(tmp_path: Path) -> None:
    env = actions_env(tmp_path, PIPELINE_RESOLVED=resolution(MIX_SOURCE))
    proc = run_pipeline(["--matrix", MATRIX, "cache-key", ROCM, "--json"], env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["key"] == f"llama-ccache--{ROCM}--rocm-{VERSION}--b10327-mix-cec6aa7"
    assert data["restore_keys"] == [f"llama-ccache--{ROCM}--rocm-{VERSION}--"]
    parts = parse_key(data["key"])
    assert parts is not None and (parts.leg, parts.toolchain, parts.tag) == (
        ROCM,
        f"rocm-{VERSION}",
        "b10327-mix-cec6aa7",
    )
    outputs = read_file_commands(tmp_path / "output")
    # matrix.toml's five legs at [ccache] max_size alone fill the 10 GiB: the archive stays out.
    assert "toolchain-key" not in outputs
    assert "of ccache ([ccache] max_size for every leg) alone exceed the 10.0 GiB limit" in proc.stderr


@pytest.mark.parametrize(("limit", "cached"), [(10_000_000, True), (3_500, False)])
def test_the_archive_is_cached_only_when_every_ccache_and_archive_fit(
    tmp_path: Path, limit: int, cached: bool
) -> None:
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(
        f'[ccache]\nmax_size = "1k"\n[github]\ncache_limit_bytes = {limit}\n'
        f'[legs.{ROCM}]\nbackend = "rocm"\nfamily = "gfx110X-all"\ntargets = ["gfx1100"]\n'
    )
    with LocalServer() as srv:
        path = f"/therock-dist-linux-gfx110X-all-{VERSION}.tar.gz"
        # The HEAD answer's Content-Length is the archive's size: 3000 bytes.
        srv.route(path, Response(body=b"x" * 3000), method="HEAD")
        env = actions_env(
            tmp_path,
            PIPELINE_RESOLVED=resolution(
                {"repo": "https://github.com/ggml-org/llama.cpp", "base_tag": "b1", "tag": "b1"},
                url=srv.url(path),
            ),
        )
        proc = run_pipeline(["--matrix", str(matrix), "cache-key", ROCM], env=env, check=True)
        assert srv.hits(path, method="HEAD") == 1
        assert srv.hits(path) == 0  # sized, never downloaded
    outputs = read_file_commands(tmp_path / "output")
    # 1000 B of ccache + 3000 B of archive against the limit.
    assert ("toolchain-key" in outputs) is cached
    verdict = "fit in" if cached else "exceed"
    assert f"1000 B of ccache + 2.9 KiB of toolchain archives {verdict} the" in proc.stderr


def test_explicit_version_and_resolution_agree(tmp_path: Path) -> None:
    explicit = run_pipeline(
        ["--matrix", MATRIX, "cache-key", ROCM, "--tag", "b1", "--toolchain", VERSION, "--json"]
    )
    resolved = run_pipeline(
        ["--matrix", MATRIX, "cache-key", ROCM, "--tag", "b1", "--json"],
        env={"PIPELINE_RESOLVED": resolution(None)},
    )
    assert explicit.returncode == 0 and resolved.returncode == 0, explicit.stderr + resolved.stderr
    assert json.loads(explicit.stdout) == json.loads(resolved.stdout)


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["cache-key", "cpu"], {}, "no source tag for the cache key"),
        (["cache-key", "cpu", "--tag", "latest"], {}, "bad cache-key tag 'latest'"),
        (["cache-key", "cpux", "--tag", "b1"], {}, "did you mean 'cpu'"),
        (["cache-key", "cuda-x", "--tag", "b1", "--toolchain", "x"], {}, "unknown leg 'cuda-x'"),
        (["cache-key", ROCM, "--tag", "b1"], {"PIPELINE_RESOLVED": "{not json"}, "malformed JSON"),
    ],
)
def test_bad_input_is_one_line(args: list[str], env: dict[str, str], message: str) -> None:
    proc = run_pipeline(["--matrix", MATRIX, *args], env=env)
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
