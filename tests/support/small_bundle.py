"""A small cpu bundle made by the pipeline's own packaging, for the SBOM and ``verify`` tests."""

from __future__ import annotations

from pathlib import Path

from pipeline.inputs.leg import Leg
from pipeline.results.record import LegRecord
from pipeline.toolchain.toolchain import Toolchain
from tests.support.bundles import make_bundle

CPU = Leg(name="cpu", backend="cpu", os="linux", runner="ubuntu-24.04")
TAG = "b100"
COMMIT = "c" * 40
TOOLCHAIN = Toolchain(
    kind="gcc",
    identity="gcc-12.2.0",
    compilers={"C": "gcc 12.2.0 (/usr/bin/cc)"},
    details={"version": "12.2.0"},
)
# What the build leaves in bin/ and lib/: programs and libraries (not real ELF files: nothing to link).
PAYLOAD = {
    "bin/llama-cli": b"ELF cli",
    "bin/llama-server": b"ELF server",
    "bin/libllama.so": b"ELF libllama",
    "bin/libggml-base.so": b"ELF ggml",
    "lib/libextra.so.1.2": b"ELF extra",
}


def small_bundle(root: Path, *, pack_cache: Path | None = None) -> Path:
    """Build folder, record and bundle under ``root``; the bundle (``root/dist/llama-b100-bin-ubuntu-x64.tar.gz``).
    ``pack_cache``: the packaging cache, as a leg's build passes it."""
    build = root / "build"
    for rel, data in PAYLOAD.items():
        (build / rel).parent.mkdir(parents=True, exist_ok=True)
        (build / rel).write_bytes(data)
        (build / rel).chmod(0o755)
    record = LegRecord(
        leg="cpu", backend="cpu", os="linux", started="2026-03-14T12:00:00+00:00", wall_seconds=1.0,
        source={"repo": "https://example.invalid/llama.cpp", "base_tag": TAG, "base_commit": "b" * 40, "tag": TAG,
                "mix": [], "commit": COMMIT},
        cmake_args=["-DCMAKE_BUILD_TYPE=Release"], ccache={}, toolchain=TOOLCHAIN.to_record(),
    )  # fmt: skip
    return make_bundle(
        leg=CPU,
        record=record,
        build_dir=build,
        out_dir=root,
        toolchain=TOOLCHAIN,
        tag=TAG,
        commit=COMMIT,
        pack_cache=pack_cache,
    )
