"""The ROCm leg with a Linux distribution's ROCm 6.4 at ``/usr``: Debian sid's, inside a root made once.

Debian sid keeps clang under ``/usr/lib/llvm-21``, the device libraries in
clang's resource folder (``/usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode``)
and HIP's CMake packages under ``/usr/lib/x86_64-linux-gnu/cmake``. Before
the installed-ROCm discovery, ``build --rocm-path /usr`` stopped at CMake's
HIP compiler test ("cannot find ROCm device library"): clang was pointed at
a device-library folder that does not exist there.

The pipeline of this checkout runs inside the root (bound in, on
PYTHONPATH, with its dependencies in a venv there) and compiles a generated
HIP project for gfx1100, which Debian 12's HIP 5.2 cannot. It does not build
the real llama.cpp: that cold ROCm build is about an hour on 2 cores.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.hip_project import COMPILATIONS, KERNELS, write_hip_project
from tests.support.projects import write_matrix
from tests.support.sid_root import ROOT, SID, SOURCE_INSIDE, mounted, pipeline_venv, run_in, sid_root

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
# Made in the background from the start of the run (tests/conftest.py).
DEBIAN_ROOTS = (SID,)

LEG = "rocm-linux-gfx1100"
# Its own mount point in the shared sid root: the real-tree rocm test mounts its workspace at /ws there, and a
# second bind mount at one path would hide the first one's tree from a build still running in it.
WS = "/ws-hip"


@pytest.fixture(scope="module")
def sid() -> tuple[Path, str]:
    root = sid_root()
    return root, pipeline_venv(root)


def _owner(root: Path, path: str) -> str:
    """The Debian package dpkg says installed ``path`` inside ``root``."""
    proc = run_in(root, ["dpkg", "-S", path])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split(":")[0]


def test_rocm_6_4_at_usr_builds_hip_for_gfx1100_and_a_rebuild_elsewhere_hits(
    sid: tuple[Path, str], tmp_path: Path
) -> None:
    root, python = sid
    write_hip_project(tmp_path / "project")
    write_matrix(
        tmp_path / "matrix.toml",
        extra=f"""
[legs.{LEG}]
backend = "rocm"
os = "linux"
family = "gfx110X-all"
targets = ["gfx1100"]
cmake_args = ["-DGGML_HIP=ON"]
""",
    )
    env = {"HIP_PLATFORM": "amd", "PYTHONPATH": SOURCE_INSIDE, "COLUMNS": "200"}

    with mounted(root, binds=[(ROOT, SOURCE_INSIDE), (tmp_path, WS)]):

        def build(out: str) -> dict:
            proc = run_in(
                root,
                [
                    python,
                    "-m",
                    "pipeline",
                    "--matrix",
                    f"{WS}/matrix.toml",
                    "build",
                    LEG,
                    "--source",
                    f"{WS}/project",
                    "--out",
                    f"{WS}/{out}",
                    "--ccache-dir",
                    f"{WS}/ccache",
                    "--no-bundle",
                    "--rocm-path",
                    "/usr",
                ],
                env=env,
                cwd=WS,
                timeout=1200,
            )
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            assert f"{LEG}: success" in proc.stdout
            return json.loads((tmp_path / out / LEG / "record.json").read_text())  # type: ignore[no-any-return]

        first = build("out1")
        hipconfig = run_in(root, ["hipconfig", "--version"])
        device_libs = first["toolchain"]["details"]["device_libs"]
        libs_owner = _owner(root, f"{device_libs}/ockl.bc")
        second = build("out2")

    tc = first["toolchain"]
    # The version hipconfig (HIP's own tool) reports, and the compiler's content digest.
    hip = hipconfig.stdout.strip().split("-")[0]
    assert re.fullmatch(r"6\.4\.\d+", hip), hipconfig
    assert re.fullmatch(rf"rocm-hip{re.escape(hip)}-[0-9a-f]{{12}}", tc["identity"])
    assert tc["details"]["hip_version"] == hip and tc["details"]["cmake_prefix"] == "/usr"
    # The device libraries Debian's package installed, in the resource folder of the clang that compiles.
    assert libs_owner.startswith("rocm-device-libs"), libs_owner
    compiler = next(a for a in first["cmake_args"] if a.startswith("-DCMAKE_HIP_COMPILER="))
    llvm = Path(compiler.split("=", 1)[1]).parents[1]
    assert re.fullmatch(r"/usr/lib/llvm-\d+", str(llvm)) and device_libs.startswith(f"{llvm}/lib/clang/")
    assert "-DGPU_TARGETS=gfx1100" in first["cmake_args"]
    assert (first["ccache"]["hits"], first["ccache"]["misses"]) == (0, COMPILATIONS)
    objects = sorted((tmp_path / "out1" / LEG / "build").rglob("kernel*.hip.o"))
    assert len(objects) == KERNELS
    # Device code for gfx1100 is in each object's offload bundle (Debian 12's HIP 5.2 cannot make it).
    assert all(b"amdgcn-amd-amdhsa--gfx1100" in obj.read_bytes() for obj in objects)

    # Another build folder, the same toolchain: every compile is a hit.
    assert second["toolchain"]["identity"] == tc["identity"]
    assert (second["ccache"]["hits"], second["ccache"]["misses"]) == (COMPILATIONS, 0)


# The three libraries the ROCm leg's bundle ships from Debian's ROCm, as the closure names them.
SHIPPED_LIBRARIES = ("libamdhip64.so.6", "libhipblas.so.2", "librocblas.so.4")
_DESCRIBE = """
import json, sys
from pathlib import Path
from pipeline.bundle.closure import CopiedFile
from pipeline.bundle.third_party import describe_third_party
real = [Path("/usr/lib/x86_64-linux-gnu", n).resolve() for n in sys.argv[2:]]
copied = [CopiedFile(path=p.name, origin=f"lib/x86_64-linux-gnu/{p.name}") for p in real]
print(json.dumps(describe_third_party(Path(sys.argv[1]), copied, toolchain_root=Path("/usr"), details={"kind": "rocm"})))
"""


def test_debians_rocm_libraries_each_carry_their_packages_copyright(
    sid: tuple[Path, str], tmp_path: Path
) -> None:
    root, python = sid
    stage = tmp_path / "stage"
    stage.mkdir()
    with mounted(root, binds=[(ROOT, SOURCE_INSIDE), (tmp_path, WS)]):
        proc = run_in(
            root,
            [python, "-c", _DESCRIBE, f"{WS}/stage", *SHIPPED_LIBRARIES],
            env={"PYTHONPATH": SOURCE_INSIDE},
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        listed = json.loads(proc.stdout)
        owners = {e["path"]: _owner(root, f"/usr/lib/x86_64-linux-gnu/{e['path']}") for e in listed}
    assert len(listed) == len(SHIPPED_LIBRARIES)
    for entry in listed:
        package = owners[entry["path"]]
        assert (entry["package"], entry["archive"]) == (package, f"dpkg:{package}")
        assert entry["licenses"][0] == f"licenses/toolchain/share/doc/{package}/copyright"
        copied = (stage / entry["licenses"][0]).read_bytes()
        assert copied == (root / "usr/share/doc" / package / "copyright").read_bytes()
    # One package each (libamdhip64-6, libhipblas2, librocblas4 in sid), not one license for all.
    assert len(set(owners.values())) == len(SHIPPED_LIBRARIES)
