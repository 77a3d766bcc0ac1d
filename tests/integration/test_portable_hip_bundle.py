"""A ROCm bundle proven portable.

A TheRock-shaped toolchain carries real runtime libraries (built here with
gcc, with SONAMEs and symlink chains) that the leg's program links. Built
through ``python -m pipeline build``, the bundle must ship the libraries and
their links, the leg's rocBLAS kernels only, a ``$ORIGIN`` RUNPATH, pass
``check-bundle``, and its program must run from the unpacked bundle in a
scrubbed environment after the toolchain folder is deleted. Then the two
ways a bundle breaks are put back, and ``check-bundle`` names them.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from pipeline.bundle.closure import find_patchelf
from pipeline.bundle.smoke_process import scrubbed_env
from tests.support.httpserver import LocalServer
from tests.support.inputs import toolchains_dir
from tests.support.pipeline_cli import run_pipeline
from tests.support.projects import write_matrix
from tests.support.rocm_leg import (
    FAMILY,
    LEG,
    NOW,
    VERSION,
    make_therock_with_runtime,
    serve_index,
    tarball_name,
)
from tests.support.runtime_libs import EXPECTED_VERSION, LICENSES, write_hip_project

TAG = "b4711"
# The bundle's one top folder, as in upstream's Linux archives.
TOP = f"llama-{TAG}"


def readelf_runpath(path: Path) -> str | None:
    """The RUNPATH as binutils' readelf prints it: the expected value comes from outside the pipeline."""
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    match = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[(.*)\]", out)
    return match.group(1) if match else None


def rocm_leg_matrix(path: Path, index_url: str) -> Path:
    return write_matrix(
        path,
        extra=f"""
[rocm]
policy = "weekly"
index_url = "{index_url}"

[legs.{LEG}]
backend = "rocm"
os = "linux"
family = "{FAMILY}"
targets = ["gfx1100", "gfx1101", "gfx1102", "gfx1103"]
""",
    )


def unpack(bundle: Path, dest: Path) -> Path:
    """Unpack ``bundle`` into ``dest``; the bundle's root: its one folder, upstream's ``llama-<tag>/``."""
    with tarfile.open(bundle) as tar:
        tar.extractall(dest, filter="data")
    return dest / TOP


def repack(root: Path, dest: Path) -> Path:
    """Pack an unpacked bundle's root back under its own folder name."""
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(root, arcname=root.name)
    return dest


def check_bundle(bundle: Path) -> subprocess.CompletedProcess[str]:
    return run_pipeline(["check-bundle", str(bundle)])


@pytest.fixture
def built(http_server: LocalServer, tmp_path: Path) -> tuple[Path, dict]:
    name = tarball_name("linux", FAMILY, VERSION)
    therock = make_therock_with_runtime(tmp_path, tmp_path / "therock.tar.gz")
    index_url = serve_index(http_server, {name: therock.read_bytes()})
    ws = tmp_path / "ws"
    write_hip_project(ws / "project")
    rocm_leg_matrix(ws / "matrix.toml", index_url)
    run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            LEG,
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--ccache-dir",
            str(tmp_path / "ccache"),
            "--tag",
            TAG,
            "--now",
            NOW,
        ],
        check=True,
    )
    record = json.loads((ws / "out" / LEG / "record.json").read_text())
    return ws, record


def test_hip_bundle_ships_its_runtime_and_runs_without_the_toolchain(
    built: tuple[Path, dict], tmp_path: Path
) -> None:
    ws, record = built
    root = Path(record["toolchain"]["details"]["root"])
    assert root.parent == toolchains_dir()
    # Without the closure the program would only run here: CMake put the toolchain's folder in its RUNPATH.
    assert readelf_runpath(ws / "out" / LEG / "build" / "bin" / "llama-hipdemo") == str(root / "lib")

    bundle = ws / "out" / record["bundle"]
    assert bundle.name == f"llama-{TAG}-bin-ubuntu-rocm-{FAMILY}-x64.tar.gz"
    check = record["bundle_check"]
    assert check["ok"] is True, check["problems"]
    assert [(r["program"], r["exit_code"], r["output"]) for r in check["smoke"]] == [
        ("llama-hipdemo", 0, EXPECTED_VERSION)
    ]
    assert check["glibc_max"] == "2.35"

    with tarfile.open(bundle) as tar:
        members = {m.name: m for m in tar.getmembers()}
    for base, major, full in (
        ("libamdhip64", "7", "7.1.0"),
        ("libhsa-runtime64", "1", "1.15.0"),
        ("librocblas", "4", "4.5.0"),
    ):
        assert members[f"{TOP}/{base}.so.{full}"].isfile()
        link = members[f"{TOP}/{base}.so.{major}"]
        assert link.issym() and link.linkname == f"{base}.so.{full}"
        # The unversioned development link is not what any program needs.
        assert f"{TOP}/{base}.so" not in members
    kernels = sorted(
        n.removeprefix(f"{TOP}/rocblas/library/")
        for n in members
        if n.startswith(f"{TOP}/rocblas/library/") and members[n].isfile()
    )
    # gfx110X targets only, plus the file that names no target.
    assert kernels == [
        "Kernels.so-000-gfx1100.hsaco",
        "TensileLibrary_fallback.dat",
        "TensileLibrary_lazy_gfx1100.dat",
    ]
    assert members[f"{TOP}/LICENSE"].isfile() and members[f"{TOP}/licenses/LICENSE-thirdparty"].isfile()

    manifest = json.loads(tar_member(bundle, f"{TOP}/manifest.json"))
    came_from = {f["path"]: f["from_toolchain"] for f in manifest["files"] if "from_toolchain" in f}
    assert came_from["libamdhip64.so.7.1.0"] == "lib/libamdhip64.so.7.1.0"
    assert came_from["libamdhip64.so.7"] == "lib/libamdhip64.so.7"
    assert (
        came_from["rocblas/library/Kernels.so-000-gfx1100.hsaco"]
        == "lib/rocblas/library/Kernels.so-000-gfx1100.hsaco"
    )
    assert str(root) not in json.dumps(manifest) and str(tmp_path) not in json.dumps(manifest)
    # Each redistributed runtime file travels with its component's license, from the toolchain's share/doc/.
    third = {e["path"]: e for e in manifest["third_party"]}
    assert set(third) == {p for p, f in came_from.items() if not p.endswith((".so.7", ".so.4", ".so.1"))}
    assert third["librocblas.so.4.5.0"]["licenses"] == ["licenses/toolchain/share/doc/rocblas/LICENSE.md"]
    assert third["libamdhip64.so.7.1.0"]["licenses"] == ["licenses/toolchain/share/doc/hip/LICENSE.md"]
    assert third["libhsa-runtime64.so.1.15.0"]["licenses"] == [
        "licenses/toolchain/share/doc/hsa-runtime64/LICENSE.md"
    ]
    assert third["librocblas.so.4.5.0"]["version"] == VERSION
    for rel, text in LICENSES.items():
        assert tar_member(bundle, f"{TOP}/licenses/toolchain/{rel}").decode() == text
    # The SBOM inside and beside the bundle lists every file, the runtime with where it came from.
    sbom = json.loads(tar_member(bundle, f"{TOP}/sbom.cdx.json"))
    assert (bundle.parent / (bundle.name + ".cdx.json")).read_bytes() == tar_member(
        bundle, f"{TOP}/sbom.cdx.json"
    )
    paths = {
        p["value"]
        for c in sbom["components"]
        for p in c.get("properties", [])
        if p["name"] == "llama-pipeline:path"
    }
    assert paths == {n.removeprefix(f"{TOP}/") for n, m in members.items() if not m.isdir()} - {
        "sbom.cdx.json"
    }
    hip = next(c for c in sbom["components"] if c["name"] == "libamdhip64.so.7.1.0")
    assert hip["type"] == "library" and hip["version"] == VERSION
    assert hip["licenses"] == [{"license": {"name": "see licenses/toolchain/share/doc/hip/LICENSE.md"}}]

    # The toolchain is gone; the bundle runs on its own, from elsewhere, with nothing of the build's environment.
    shutil.rmtree(root)
    here = unpack(bundle, tmp_path / "clean" / "unpacked")
    program = here / "llama-hipdemo"
    assert readelf_runpath(program) == "$ORIGIN"
    for lib in ("libamdhip64.so.7.1.0", "librocblas.so.4.5.0", "libhsa-runtime64.so.1.15.0"):
        assert readelf_runpath(here / lib) == "$ORIGIN"
    home = tmp_path / "clean" / "home"
    home.mkdir()
    ran = subprocess.run(
        [str(program), "--version"], env=scrubbed_env(home), cwd=home, capture_output=True, text=True
    )
    assert (ran.returncode, ran.stdout.strip()) == (0, EXPECTED_VERSION), ran.stderr
    proc = check_bundle(bundle)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check-bundle passed" in proc.stdout


def tar_member(bundle: Path, name: str) -> bytes:
    with tarfile.open(bundle) as tar:
        fh = tar.extractfile(name)
        assert fh is not None
        return fh.read()


def test_broken_bundles_fail_check_bundle_naming_file_and_library(
    built: tuple[Path, dict], tmp_path: Path
) -> None:
    ws, record = built
    bundle = ws / "out" / record["bundle"]

    # A library removed: the program and librocblas both needed it.
    missing = unpack(bundle, tmp_path / "missing")
    for link_or_file in missing.glob("libamdhip64.so*"):
        link_or_file.unlink()
    proc = check_bundle(repack(missing, tmp_path / "missing.tar.gz"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "error: llama-hipdemo: needs libamdhip64.so.7: neither in the bundle" in proc.stdout
    assert "error: librocblas.so.4.5.0: needs libamdhip64.so.7" in proc.stdout
    # The smoke test fails the way a clean machine would: the loader's own words.
    assert re.search(
        r"error: llama-hipdemo: --version exited 127: .*libamdhip64\.so\.7: cannot open shared object file",
        proc.stdout,
    ), proc.stdout

    # An absolute RUNPATH put back into the toolchain's folder.
    absolute = unpack(bundle, tmp_path / "absolute")
    toolchain_lib = str(Path(record["toolchain"]["details"]["root"]) / "lib")
    subprocess.run(
        [str(find_patchelf()), "--set-rpath", toolchain_lib, str(absolute / "llama-hipdemo")], check=True
    )
    proc = check_bundle(repack(absolute, tmp_path / "absolute.tar.gz"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        f"error: llama-hipdemo: absolute or build-machine RUNPATH/RPATH entry '{toolchain_lib}'"
        in proc.stdout
    )
    # With $ORIGIN gone the program's libraries are in the bundle but out of its reach: named too.
    assert (
        "error: llama-hipdemo: needs libamdhip64.so.7: it is in the bundle (libamdhip64.so.7)" in proc.stdout
    )
    data = json.loads(run_pipeline(["check-bundle", str(tmp_path / "absolute.tar.gz"), "--json"]).stdout)
    assert data["ok"] is False

    # The toolchain's licenses removed: a redistributed runtime without its license does not ship.
    unlicensed = unpack(bundle, tmp_path / "unlicensed")
    shutil.rmtree(unlicensed / "licenses" / "toolchain")
    proc = check_bundle(repack(unlicensed, tmp_path / "unlicensed.tar.gz"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "error: libamdhip64.so.7.1.0: a third-party file (from the toolchain's lib/libamdhip64.so.7.1.0): "
        "its license files are not in the bundle: licenses/toolchain/share/doc/hip/LICENSE.md"
    ) in proc.stdout
    assert "error: librocblas.so.4.5.0: a third-party file" in proc.stdout
    assert {(p["file"], p["kind"]) for p in data["problems"]} >= {
        ("llama-hipdemo", "runpath"),
        ("llama-hipdemo", "library"),
    }
