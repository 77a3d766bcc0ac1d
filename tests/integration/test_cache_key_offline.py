"""`cache-key` installs nothing: every leg's key from the pins, the resolution and the host compiler, offline.

The workflow computes the keys before it restores the toolchain cache: a
key that installed the toolchain (the CUDA wheels, 539 MB, or the Vulkan
SDK) would download it before the cache could provide it, and the cache
would never hold a download. Here every leg of the shipped matrix.toml gets
its key with an empty cache home, HOME and working folder, pip told to use
no index and every HTTP request sent to a closed port: each key must be
printed, and not one file written.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import yaml

from pipeline.inputs.matrix import load_matrix
from pipeline.inputs.resolution_file import Resolution, ResolvedRocm
from pipeline.toolchain.host_compiler import host_toolchain
from tests.support.pipeline_cli import ROOT, run_pipeline

pytestmark = pytest.mark.integration

SHIPPED = load_matrix(ROOT / "matrix.toml")
VERSION = "10.1.0a20260801"
# Nothing listens on port 9 (discard) of the loopback: a request there fails at once.
CLOSED = "http://127.0.0.1:9"


def resolution() -> str:
    legs = {}
    for name, leg in SHIPPED.legs.items():
        if leg.backend != "rocm":
            continue
        file = f"therock-dist-{leg.os}-{leg.family}-{VERSION}.tar.gz"
        legs[name] = ResolvedRocm(policy="weekly", cutoff=date(2026, 8, 1), version=VERSION, file=file,
                                  url=f"{CLOSED}/{file}", published=datetime(2026, 8, 1, 9, 0, tzinfo=UTC),
                                  os=leg.os, family=leg.family)  # fmt: skip
    res = Resolution(now=datetime(2026, 8, 4, 9, 17, tzinfo=UTC), rocm_policy="weekly", cutoff=date(2026, 8, 1),
                     legs=legs)  # fmt: skip
    return json.dumps(res.to_json())


def offline_env(tmp_path: Path) -> dict[str, str]:
    empty = {name: tmp_path / name for name in ("cache-home", "home", "xdg")}
    for folder in empty.values():
        folder.mkdir()
    (tmp_path / "resolved.json").write_text(resolution())
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIPELINE_", "CUDA", "VULKAN_SDK", "GITHUB_"))
    }
    return {
        **keep,
        "PIPELINE_CACHE_HOME": str(empty["cache-home"]),
        "HOME": str(empty["home"]),
        "XDG_CACHE_HOME": str(empty["xdg"]),
        "PIPELINE_RESOLVED": str(tmp_path / "resolved.json"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": "",
        "http_proxy": CLOSED, "https_proxy": CLOSED, "HTTP_PROXY": CLOSED, "HTTPS_PROXY": CLOSED,
        "no_proxy": "", "NO_PROXY": "",
    }  # fmt: skip


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p != root / "resolved.json")


def test_every_legs_key_is_computed_offline_and_writes_nothing(tmp_path: Path) -> None:
    env = offline_env(tmp_path)
    cwd = tmp_path / "work"
    cwd.mkdir()
    before = files_under(tmp_path)
    keys = {}
    for leg in SHIPPED.legs:
        proc = run_pipeline(["--matrix", str(ROOT / "matrix.toml"), "cache-key", leg, "--tag", "b7000", "--json"],
                            cwd=cwd, env=env)  # fmt: skip
        assert proc.returncode == 0, f"cache-key {leg}: {proc.stdout}{proc.stderr}"
        keys[leg] = json.loads(proc.stdout)["key"]
    # Every declared leg has its key (none is disabled today: the Windows arm64 CUDA leg is built too).
    assert len(keys) == len(SHIPPED.all_legs) == 39
    # A leg the matrix declares but does not build has no key: one line says why, and nothing is written.
    off = tmp_path / "off.toml"
    off.write_text(
        (ROOT / "matrix.toml").read_text() + '\n[legs.cpu-off]\nbackend = "cpu"\ndisabled = "not yet"\n'
    )
    proc = run_pipeline(["--matrix", str(off), "cache-key", "cpu-off", "--json"], cwd=cwd, env=env)
    assert proc.returncode == 2 and proc.stdout == "", proc
    assert proc.stderr.strip().splitlines() == [f"error: leg 'cpu-off' is disabled in {off}: not yet"], (
        proc.stderr
    )
    off.unlink()
    assert len(set(keys.values())) == len(keys)  # one cache per leg
    assert files_under(tmp_path) == before
    host = host_toolchain(os.environ).identity
    cuda = SHIPPED.toolchains.cuda
    assert cuda is not None
    # The pinned toolkit's version and the host compiler, read from the pins and `cc --version` alone.
    assert keys["cuda"].startswith(f"llama-ccache--cuda--cuda-{cuda.version}-") and keys["cuda"].endswith(
        f"-{host}--b7000"
    )
    # The 12.8 line from NVIDIA's redistributable archives: its version, from the manifest's pin, offline.
    line12 = SHIPPED.toolchains.cuda_for("12")
    assert line12 is not None and line12.redist is not None
    assert keys["cuda-12.8-portable"].startswith(f"llama-ccache--cuda-12.8-portable--cuda-{line12.version}-")
    assert keys["cuda-12.8-portable"].endswith(f"-{host}--b7000")
    # The four 12.8 Linux profiles share one toolkit, so one identity (their keys differ by leg name).
    ids = {keys[f"cuda-12.8-{p}"].split("--")[2] for p in ("legacy", "older", "newer", "portable")}
    assert len(ids) == 1 and ids != {keys["cuda"].split("--")[2]}
    # Windows arm64 CUDA: the 13.4.1 pins (each component with its platform) and the host compiler, offline; on
    # its Windows runner the MSVC toolset is added to it.
    line134 = SHIPPED.toolchains.cuda_for("13.4")
    assert line134 is not None and line134.redist is not None and line134.version == "13.4.59"
    arm = keys["cuda-windows-13-portable-arm64"]
    assert arm.startswith("llama-ccache--cuda-windows-13-portable-arm64--cuda-13.4.59-") and arm.endswith(
        f"-{host}--b7000"
    )
    assert arm.split("--")[2] not in {keys["cuda-windows-13-portable"].split("--")[2], *ids}
    vulkan = SHIPPED.toolchains.vulkan["linux"]
    assert (
        keys["vulkan"]
        == f"llama-ccache--vulkan--vulkan-sdk-{vulkan.version}-{vulkan.sha256[:8]}-{host}--b7000"
    )
    assert keys["cpu"] == f"llama-ccache--cpu--{host}--b7000"
    assert keys["rocm-linux-gfx110X"] == f"llama-ccache--rocm-linux-gfx110X--rocm-{VERSION}--b7000"


def test_the_wheels_identity_changes_with_any_pinned_wheel(tmp_path: Path) -> None:
    """A re-pinned wheel (cuBLAS, say) is another toolkit: another key, still offline."""
    env = offline_env(tmp_path)
    shipped = (ROOT / "matrix.toml").read_text()
    cublas = next(w for w in SHIPPED.toolchains.cuda.wheels if w.name == "nvidia-cublas")  # type: ignore[union-attr]
    repinned = tmp_path / "matrix.toml"
    repinned.write_text(shipped.replace(cublas.sha256["linux"], "f" * 64))
    keys = []
    for matrix in (ROOT / "matrix.toml", repinned):
        proc = run_pipeline(
            ["--matrix", str(matrix), "cache-key", "cuda", "--tag", "b7000", "--json"], env=env
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        keys.append(json.loads(proc.stdout)["key"])
    assert keys[0] != keys[1]
    assert (
        keys[0].split("--")[2].split("-")[:2] == keys[1].split("--")[2].split("-")[:2] == ["cuda", "13.2.86"]
    )


def test_the_redist_identity_changes_with_the_manifest_pin_and_the_components(tmp_path: Path) -> None:
    """Another manifest or another component set is another toolkit: another key, still offline."""
    env = offline_env(tmp_path)
    shipped = (ROOT / "matrix.toml").read_text()
    line12 = SHIPPED.toolchains.cuda_for("12")
    assert line12 is not None and line12.redist is not None
    variants = [
        shipped,
        shipped.replace(line12.redist.sha256, "e" * 64),
        shipped.replace(
            'components = ["cuda_nvcc", "cuda_cudart", "cuda_cccl", "libcublas"]',
            'components = ["cuda_nvcc", "cuda_cudart", "cuda_cccl", "libcublas", "cuda_nvrtc"]',
        ),
    ]
    assert len(set(variants)) == 3
    keys = []
    for i, text in enumerate(variants):
        matrix = tmp_path / f"m{i}.toml"
        matrix.write_text(text)
        proc = run_pipeline(["--matrix", str(matrix), "cache-key", "cuda-12.8-older", "--tag", "b7000", "--json"],
                            env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        keys.append(json.loads(proc.stdout)["key"])
    assert len(set(keys)) == 3
    assert {k.split("--")[2].split("-")[1] for k in keys} == {"12.8.93"}


def test_the_workflow_computes_the_keys_then_restores_the_toolchain_then_builds() -> None:
    """The toolchain cache is restored before the build downloads anything, so its post step saves the download."""
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "nightly.yml").read_text())
    steps = [step.get("name", step.get("uses", "")) for step in workflow["jobs"]["build"]["steps"]]
    keys = steps.index("Cache keys")
    toolchain = next(i for i, name in enumerate(steps) if name.startswith("Cache the downloaded toolchain"))
    build = steps.index("Build")
    assert keys < toolchain < build
    # Nothing between the key and the restore runs the pipeline (which could download): only cache actions.
    between = workflow["jobs"]["build"]["steps"][keys + 1 : toolchain]
    assert all("run" not in step for step in between), between
