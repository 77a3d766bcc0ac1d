"""The CUDA 12.8 line from NVIDIA's redistributable archives, served by a local server in NVIDIA's layout;
and CUDA 13.4.1 for the Windows arm64 leg, its compiler for x64 and its libraries for arm64.

The manifest and four component archives (tests/support/cuda_redist.py) are
made here; the leg's toolkit is installed through the one archive installer
and, for the cache test, really compiles: the archive's ``bin/nvcc`` runs this
machine's nvcc. The 13.4 archives are zips in NVIDIA's Windows layout, every
component published for both Windows platforms, so taking the wrong one shows.
No request leaves 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from pipeline.archives.extract import MARKER, remove_install
from pipeline.backends import prepare_toolchain, toolchain_request
from pipeline.errors import ToolchainError
from pipeline.inputs.matrix import load_matrix
from pipeline.toolchain.cuda_redist import install_cuda_redist
from pipeline.toolchain.cuda_redist_identity import redist_cuda_identity
from pipeline.toolchain.toolchain import Toolchain
from tests.support.cuda_project import COMPILATIONS, write_cuda_project
from tests.support.cuda_redist import (
    CCCL_LICENSE_TEXT,
    CROSS_MANIFEST,
    CROSS_VERSIONS,
    HOST_COMPONENTS,
    HOST_PLATFORM,
    LICENSE_TEXT,
    MANIFEST,
    REAL_CROSS_MANIFEST,
    REAL_MANIFEST,
    REAL_NVCC,
    TARGET_PLATFORM,
    VERSIONS,
    CrossRedist,
    Redist,
    component_files,
    windows_component_files,
)
from tests.support.httpserver import LocalServer, Response
from tests.support.inputs import make_inputs
from tests.support.pipeline_cli import ROOT, build_leg, run_pipeline

pytestmark = pytest.mark.integration

LEG = '[legs.cuda-12]\nbackend = "cuda"\nos = "linux"\ncuda_line = "12"\ncuda_architectures = ["75"]\n'
FOLDER = f"cuda-{VERSIONS['cuda_nvcc']}-linux"


def write_matrix(ws: Path, redist: Redist, **toml: object) -> Path:
    ws.mkdir(parents=True, exist_ok=True)
    path = ws / "matrix.toml"
    path.write_text('[cmake]\nargs = ["-DCMAKE_BUILD_TYPE=Release"]\n\n' + redist.toml(**toml) + "\n" + LEG)  # type: ignore[arg-type]
    return path


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    found = {"downloads": tmp_path / "downloads", "toolchains": tmp_path / "toolchains"}
    monkeypatch.setenv("PIPELINE_DOWNLOAD_CACHE", str(found["downloads"]))
    monkeypatch.setenv("PIPELINE_TOOLCHAIN_DIR", str(found["toolchains"]))
    monkeypatch.setenv("PIPELINE_HTTP_BACKOFF", "0")
    return found


def install(matrix_toml: Path) -> Toolchain:
    """The toolchain a `build cuda-12` run prepares, in this process (this environment's folders)."""
    matrix = load_matrix(matrix_toml)
    inputs = make_inputs(matrix, environ=dict(os.environ))
    return prepare_toolchain(toolchain_request(inputs, matrix.leg("cuda-12")), Console(quiet=True))


def build(ws: Path, cache: Path) -> tuple[int, str, str]:
    proc = run_pipeline(["--matrix", str(ws / "matrix.toml"), "build", "cuda-12", "--source", str(ws / "project"),
                         "--out", str(ws / "out"), "--ccache-dir", str(cache), "--no-bundle"])  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


def test_a_leg_installs_exactly_its_components_as_one_toolkit_with_their_licenses(
    http_server: LocalServer, tmp_path: Path, dirs: dict[str, Path]
) -> None:

    redist = Redist(http_server)
    # cuda_nvrtc is in the manifest too: a leg that does not name it must not download it.
    nvrtc = b"not wanted"
    http_server.route(
        "/redist/cuda_nvrtc/linux-x86_64/cuda_nvrtc-linux-x86_64-12.8.93-archive.tar.xz", Response(body=nvrtc)
    )
    toolchain = install(write_matrix(tmp_path / "ws", redist))
    root = dirs["toolchains"] / FOLDER
    assert Path(toolchain.details["cuda_root"]) == root
    assert toolchain.details["origin"] == f"redist {MANIFEST}"
    # The manifest once, each named archive once, nothing else.
    assert http_server.hits(f"/redist/{MANIFEST}") == 1
    assert {c: http_server.hits(redist.path_of(c)) for c in VERSIONS} == dict.fromkeys(VERSIONS, 1)
    assert [r.path for r in http_server.requests] == [
        f"/redist/{MANIFEST}",
        *(redist.path_of(c) for c in VERSIONS),
    ]
    # One root CMake's FindCUDAToolkit accepts: the archives' bin/, include/, lib/ merged, lib64 beside lib.
    assert (root / "bin" / "nvcc").read_bytes() == component_files("cuda_nvcc")["bin/nvcc"]
    assert (root / "include" / "cub" / "cub.cuh").is_file() and (root / "include" / "cublas_v2.h").is_file()
    assert os.readlink(root / "lib64") == "lib"
    assert os.readlink(root / "lib" / "libcudart.so") == "libcudart.so.12"  # made: cudart's archive has none
    assert os.readlink(root / "lib" / "libcublas.so") == "libcublas.so.12"  # the archive's own
    # The driver's link stub is cuda_cudart's, not one made here.
    assert (root / "lib" / "stubs" / "libcuda.so").read_bytes() == component_files("cuda_cudart")[
        "lib/stubs/libcuda.so"
    ]
    # Each archive's LICENSE, per component, where the bundle's third-party list looks (licenses/<name>/).
    assert sorted(p.relative_to(root).as_posix() for p in (root / "licenses").rglob("LICENSE")) == sorted(
        f"licenses/{c}/LICENSE" for c in VERSIONS
    )
    assert all((root / "licenses" / c / "LICENSE").read_bytes() == LICENSE_TEXT for c in VERSIONS)
    assert not (root / "LICENSE").exists()
    marker = json.loads((root / MARKER).read_text())
    assert [(a["label"], a["sha256"]) for a in marker["archives"]] == [
        (f"{c}-linux-x86_64-{v}-archive.tar.xz", hashlib.sha256(redist.archives[c]).hexdigest())
        for c, v in VERSIONS.items()
    ]
    # The 12.x line's driver floor (its nvcc here is this machine's, which says 13.x: the floor is the line's).
    assert toolchain.details["driver_min"] == "R525 (525.60.13 or newer)"

    # The identity is the one cache-key computes offline, before any install.
    proc = run_pipeline(
        ["--matrix", str(tmp_path / "ws" / "matrix.toml"), "cache-key", "cuda-12", "--tag", "b7000", "--json"]
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["key"].split("--")[2] == toolchain.identity
    assert toolchain.identity.startswith(f"cuda-{VERSIONS['cuda_nvcc']}-")

    # Reused as it is: nothing fetched again.
    before = len(http_server.requests)
    again = install(tmp_path / "ws" / "matrix.toml")
    assert again.identity == toolchain.identity and len(http_server.requests) == before


def _one_error(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


def test_an_archive_that_is_not_the_one_the_manifest_lists_fails_closed_naming_the_component(
    http_server: LocalServer, tmp_path: Path, dirs: dict[str, Path]
) -> None:
    redist = Redist(http_server)
    tampered = redist.archives["libcublas"][:-1] + bytes([redist.archives["libcublas"][-1] ^ 1])
    http_server.route(redist.path_of("libcublas"), Response(body=tampered))
    ws = tmp_path / "ws"
    write_matrix(ws, redist)
    write_cuda_project(ws / "project")
    code, _, stderr = build(ws, tmp_path / "ccache")
    line = _one_error(stderr)
    assert code == 7, stderr
    assert line.startswith("error: toolchains.cuda-12.redist: libcublas 12.8.4.1: sha256 mismatch for ")
    assert f"expected {hashlib.sha256(redist.archives['libcublas']).hexdigest()}" in line
    assert not (dirs["toolchains"] / FOLDER).exists()


def test_a_wrong_manifest_pin_fails_closed_before_any_archive(
    http_server: LocalServer, tmp_path: Path, dirs: dict[str, Path]
) -> None:
    redist = Redist(http_server)
    ws = tmp_path / "ws"
    write_matrix(ws, redist, sha256="f" * 64)
    write_cuda_project(ws / "project")
    code, _, stderr = build(ws, tmp_path / "ccache")
    line = _one_error(stderr)
    assert code == 7
    assert line.startswith(f"error: toolchains.cuda-12.redist manifest {MANIFEST}: sha256 mismatch for ")
    assert f"expected {'f' * 64}, got {redist.sha256}" in line
    assert [r.path for r in http_server.requests] == [f"/redist/{MANIFEST}"]
    assert not (dirs["toolchains"] / FOLDER).exists()


def test_a_component_the_manifest_lacks_is_one_line_naming_it(
    http_server: LocalServer, tmp_path: Path, dirs: dict[str, Path]
) -> None:
    redist = Redist(http_server)
    ws = tmp_path / "ws"
    # cuda_crt is a component of the 13.x releases; in 12.x the crt headers are inside cuda_nvcc.
    write_matrix(ws, redist, components=("cuda_nvcc", "cuda_crt"))
    write_cuda_project(ws / "project")
    code, _, stderr = build(ws, tmp_path / "ccache")
    assert _one_error(stderr) == (
        f"error: toolchains.cuda-12.redist ({MANIFEST}): cuda_crt: no such component "
        "in the manifest (release 12.8.1)"
    )
    assert code == 7
    assert [r.path for r in http_server.requests] == [f"/redist/{MANIFEST}"]


def test_a_truncated_archive_is_fetched_again_and_installs(
    http_server: LocalServer, tmp_path: Path, dirs: dict[str, Path]
) -> None:

    redist = Redist(http_server)
    blob = redist.archives["libcublas"]
    # The connection drops after half the bytes; the retry gets the whole file.
    http_server.route(
        redist.path_of("libcublas"),
        Response(body=blob[: len(blob) // 2], declared_length=len(blob)),
        Response(body=blob),
    )
    install(write_matrix(tmp_path / "ws", redist))
    assert http_server.hits(redist.path_of("libcublas")) == 2
    assert (dirs["toolchains"] / FOLDER / "lib" / "libcublas.so.12").read_bytes() == b"\x7fELF cublas 12"
    cached = dirs["downloads"] / "cuda-redist" / "libcublas-linux-x86_64-12.8.4.1-archive.tar.xz"
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == hashlib.sha256(blob).hexdigest()
    # No partial file is left in the download cache.
    assert not [p.name for p in cached.parent.iterdir() if p.name.endswith(".part")]


@pytest.mark.skipif(not REAL_NVCC.is_file(), reason="needs this machine's nvcc at /usr/local/cuda/bin/nvcc")
def test_a_reinstalled_toolkit_keeps_every_ccache_hit(
    http_server: LocalServer, tmp_path: Path, dirs: dict[str, Path]
) -> None:
    redist = Redist(http_server)
    ws = tmp_path / "ws"
    write_matrix(ws, redist)
    write_cuda_project(ws / "project")
    cache = tmp_path / "ccache"
    first = build_leg(ws, "cuda-12", cache)
    assert first["ccache"]["compiler_check"] == "content"
    assert (first["ccache"]["hits"], first["ccache"]["misses"]) == (0, COMPILATIONS)
    # Installed again from the download cache: every file is new (new mtimes), its bytes the same.
    remove_install(dirs["toolchains"] / FOLDER)
    requests = len(http_server.requests)
    second = build_leg(ws, "cuda-12", cache)
    # Nothing fetched: the manifest and the archives come from the download cache, checked against their pins.
    assert len(http_server.requests) == requests
    assert second["toolchain"]["identity"] == first["toolchain"]["identity"]
    assert (second["ccache"]["hits"], second["ccache"]["misses"]) == (COMPILATIONS, 0)


def test_the_shipped_matrix_pins_the_real_manifest() -> None:

    pins = load_matrix(ROOT / "matrix.toml").toolchains.cuda_for("12")
    assert pins is not None and pins.redist is not None
    assert pins.redist.manifest == REAL_MANIFEST.name
    assert hashlib.sha256(REAL_MANIFEST.read_bytes()).hexdigest() == pins.redist.sha256


def test_an_archive_that_always_arrives_cut_short_fails_naming_the_component_and_keeps_nothing(
    http_server: LocalServer, tmp_path: Path, dirs: dict[str, Path]
) -> None:
    redist = Redist(http_server)
    blob = redist.archives["cuda_cccl"]
    http_server.route(redist.path_of("cuda_cccl"), Response(body=blob[:100], declared_length=len(blob)))
    ws = tmp_path / "ws"
    write_matrix(ws, redist)
    write_cuda_project(ws / "project")
    code, _, stderr = build(ws, tmp_path / "ccache")
    line = _one_error(stderr)
    assert code == 4, stderr  # a network failure, after the retries
    assert line.startswith("error: toolchains.cuda-12.redist: cuda_cccl 12.8.90: download of ")
    assert "failed after 5 attempts: transfer truncated (got " in line and f" of {len(blob)} bytes)" in line
    assert http_server.hits(redist.path_of("cuda_cccl")) == 5  # the download's attempts
    assert not (dirs["toolchains"] / FOLDER).exists()
    cache = dirs["downloads"] / "cuda-redist"
    # No partial file and no archive: only the download's lock file is left.
    assert [p.name for p in cache.iterdir() if "cuda_cccl" in p.name] == [
        ".cuda_cccl-linux-x86_64-12.8.90-archive.tar.xz.lock"
    ]


# The Windows arm64 CUDA leg's toolkit: the shipped leg's line, os, arch and architectures.
CROSS_LEG = (
    '[legs.cuda-arm64]\nbackend = "cuda"\nos = "windows"\narch = "arm64"\ncuda_line = "13.4"\n'
    'cuda_architectures = ["120", "121"]\n'
)
CROSS_FOLDER = "cuda-13.4.59-windows-arm64"
# Where llama.cpp's cmake/arm64-windows-msvc-cuda.cmake looks (and the DLLs upstream's release copies).
CROSS_FILES = (
    "bin/nvcc.exe",
    "lib/arm64/cudart.lib",
    "lib/arm64/cuda.lib",
    "lib/arm64/cublas.lib",
    "lib/arm64/cublasLt.lib",
    "bin/arm64/cudart64_13.dll",
    "bin/arm64/cublas64_13.dll",
    "bin/arm64/cublasLt64_13.dll",
)


def platform_of_component(component: str) -> str:
    return HOST_PLATFORM if component in HOST_COMPONENTS else TARGET_PLATFORM


def write_cross_matrix(ws: Path, redist: CrossRedist, **toml: object) -> Path:
    ws.mkdir(parents=True, exist_ok=True)
    path = ws / "matrix.toml"
    path.write_text(
        '[cmake]\nargs = ["-DCMAKE_BUILD_TYPE=Release"]\n\n' + redist.toml(**toml) + "\n" + CROSS_LEG
    )  # type: ignore[arg-type]
    return path


def cross_install(matrix_toml: Path) -> tuple[Path, str]:
    """The toolkit root the Windows arm64 leg installs (in this process), and the identity cache-key computes."""
    matrix = load_matrix(matrix_toml)
    request = toolchain_request(make_inputs(matrix, environ=dict(os.environ)), matrix.leg("cuda-arm64"))
    assert request.pins is not None and request.pins.cuda is not None and request.pins.cuda.redist is not None
    pins = request.pins.cuda
    return install_cuda_redist(pins, request), redist_cuda_identity(pins, pins.redist, request)  # type: ignore[arg-type]


def test_the_windows_arm64_toolkit_takes_its_compiler_for_x64_and_its_libraries_for_arm64(
    http_server: LocalServer, tmp_path: Path, dirs: dict[str, Path]
) -> None:
    redist = CrossRedist(http_server)
    root, identity = cross_install(write_cross_matrix(tmp_path / "ws", redist))
    assert root == dirs["toolchains"] / CROSS_FOLDER
    # The manifest, then each component once, from its own platform; not one archive of the other.
    assert [r.path for r in http_server.requests] == [
        f"/redist/{CROSS_MANIFEST}",
        *(redist.path_of(c, platform_of_component(c)) for c in CROSS_VERSIONS),
    ]
    # One root laid out as the tree's toolchain file reads it: the x64 compiler, the arm64 libraries and DLLs.
    assert all((root / rel).is_file() for rel in CROSS_FILES)
    assert (root / "bin" / "nvcc.exe").read_bytes() == b"MZ nvcc windows-x86_64"
    assert (root / "nvvm" / "bin" / "cicc.exe").read_bytes() == b"MZ cicc windows-x86_64"
    assert (root / "bin" / "arm64" / "cublasLt64_13.dll").read_bytes() == b"MZ cublasLt arm64"
    assert (root / "include" / "cccl" / "cub" / "cub.cuh").is_file()
    assert not (root / "lib" / "x64").exists() and not (root / "bin" / "x64").exists()
    # Each component's license beside the others: cccl's is another text, and both travel with the bundle.
    assert (root / "licenses" / "cccl" / "LICENSE").read_bytes() == CCCL_LICENSE_TEXT
    assert all(
        (root / "licenses" / c / "LICENSE").read_bytes() == LICENSE_TEXT
        for c in CROSS_VERSIONS
        if c != "cccl"
    )
    assert not (root / "LICENSE").exists()
    # A Windows toolkit: no lib64 link, no libcuda.so stub.
    assert not (root / "lib64").exists() and not (root / "lib" / "stubs").exists()
    marker = json.loads((root / MARKER).read_text())
    assert [a["label"] for a in marker["archives"]] == [
        f"{c}-{platform_of_component(c)}-{v}-archive.zip" for c, v in CROSS_VERSIONS.items()
    ]
    assert [a["sha256"] for a in marker["archives"]] == [
        hashlib.sha256(redist.archives[(c, platform_of_component(c))]).hexdigest() for c in CROSS_VERSIONS
    ]

    # The identity is the one cache-key computes offline, before any install: the 13.4.59 pins.
    proc = run_pipeline(
        [
            "--matrix",
            str(tmp_path / "ws" / "matrix.toml"),
            "cache-key",
            "cuda-arm64",
            "--tag",
            "b7000",
            "--json",
        ]
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["key"].split("--")[2] == identity
    assert identity.startswith("cuda-13.4.59-")

    # Reused as it is: nothing fetched again.
    before = len(http_server.requests)
    assert cross_install(tmp_path / "ws" / "matrix.toml")[0] == root
    assert len(http_server.requests) == before


def test_a_wrong_arm64_archive_fails_closed_naming_the_component_and_installs_nothing(
    http_server: LocalServer, tmp_path: Path, dirs: dict[str, Path]
) -> None:
    good = CrossRedist(http_server)
    tampered = bytearray(good.archives[("libcublas", TARGET_PLATFORM)])
    tampered[-1] ^= 1
    redist = CrossRedist(http_server, replace={("libcublas", TARGET_PLATFORM): bytes(tampered)})
    ws = tmp_path / "ws"
    write_cross_matrix(ws, redist)
    write_cuda_project(ws / "project")
    proc = run_pipeline(["--matrix", str(ws / "matrix.toml"), "build", "cuda-arm64", "--source", str(ws / "project"),
                         "--out", str(ws / "out"), "--cache-dir", str(tmp_path / "ccache"), "--no-bundle"])  # fmt: skip
    line = _one_error(proc.stderr)
    assert proc.returncode == 7, proc.stderr
    assert line.startswith("error: toolchains.cuda-13.4.redist: libcublas 13.7.0.27: sha256 mismatch for ")
    expected = hashlib.sha256(good.archives[("libcublas", TARGET_PLATFORM)]).hexdigest()
    assert f"expected {expected}" in line
    assert not (dirs["toolchains"] / CROSS_FOLDER).exists()
    # No staging folder left half-filled either (the install's lock file stays, as every install's does).
    assert not [p for p in dirs["toolchains"].iterdir() if p.name.endswith((".partial", ".trash"))]
    # The x64 cuBLAS is never asked for: the leg's platform is arm64's.
    assert http_server.hits(redist.path_of("libcublas", HOST_PLATFORM)) == 0


def test_an_arm64_runtime_that_lacks_what_the_toolchain_file_reads_is_refused_naming_its_component(
    http_server: LocalServer, tmp_path: Path, dirs: dict[str, Path]
) -> None:
    files = windows_component_files("cuda_cudart", TARGET_PLATFORM)
    del files["lib/arm64/cuda.lib"]
    redist = CrossRedist(http_server, files={("cuda_cudart", TARGET_PLATFORM): files})
    with pytest.raises(ToolchainError) as err:
        cross_install(write_cross_matrix(tmp_path / "ws", redist))
    assert err.value.message == (
        "toolchains.cuda-13.4.redist: cuda_cudart 13.4.49 (windows-arm64): the toolkit for windows/arm64 lacks "
        "lib/arm64/cuda.lib, which llama.cpp's cross build reads"
    )
    # Refused before it was sealed: no install, and its staging folder is gone.
    assert not (dirs["toolchains"] / CROSS_FOLDER).exists()
    assert not [p for p in dirs["toolchains"].iterdir() if p.name.endswith((".partial", ".trash"))]


def test_the_shipped_matrix_pins_the_real_13_4_1_manifest() -> None:
    pins = load_matrix(ROOT / "matrix.toml").toolchains.cuda_for("13.4")
    assert pins is not None and pins.redist is not None
    assert pins.redist.manifest == REAL_CROSS_MANIFEST.name
    assert hashlib.sha256(REAL_CROSS_MANIFEST.read_bytes()).hexdigest() == pins.redist.sha256
