"""The license rule on ROCm as it is really shipped: TheRock's dist tarball, and Debian's packages at /usr.

The tarball is packed by the real ``tar`` exactly as TheRock's build packs it
(``./`` members, no top folder) and unpacked by the pipeline's own extractor.
Debian's expected values come from ``dpkg-query`` itself.
"""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

from pipeline.archives.extract import extract_archive
from pipeline.bundle.closure import CopiedFile
from pipeline.bundle.third_party import TOOLCHAIN_LICENSES, describe_third_party, license_problems
from tests.support.therock_dist import DATA, LIBRARIES, license_text, make_therock_dist

pytestmark = pytest.mark.integration

DEBIAN_HIP = Path("/usr/lib/x86_64-linux-gnu")


def _bundle_path(origin: str) -> str:
    # The closure puts libraries at the bundle's top and data folders under their name (rocblas/library/...).
    return origin.removeprefix("lib/") if origin in DATA else Path(origin).name


def test_a_therock_tarball_gives_each_library_its_own_license_and_refuses_the_unlicensed(
    tmp_path: Path,
) -> None:
    tarball = make_therock_dist(tmp_path / "staging", tmp_path / "therock-dist-linux-gfx110X-all.tar.gz")
    with tarfile.open(tarball) as tar:
        assert all(m.name == "." or m.name.startswith("./") for m in tar.getmembers())
    install = extract_archive(tarball, tmp_path / "install")
    # This machine's Debian packages are the declared source; here two of them are present.
    doc = tmp_path / "usr" / "share" / "doc"
    for package in ("zlib1g", "libnuma1"):
        (doc / package).mkdir(parents=True)
        (doc / package / "copyright").write_text(f"{package} copyright\n")
    copied = [CopiedFile(path=_bundle_path(rel), origin=rel) for rel in [*LIBRARIES, *DATA]]
    stage = tmp_path / "stage"
    stage.mkdir()
    listed = describe_third_party(
        stage,
        copied,
        toolchain_root=install,
        details={"kind": "rocm", "version": "7.13.0a20260430"},
        declared_doc=doc,
    )
    licenses = {e["path"]: [p.removeprefix(f"{TOOLCHAIN_LICENSES}/") for p in e["licenses"]] for e in listed}
    assert licenses == {
        "libamdhip64.so.7.13.0": ["share/doc/hip/LICENSE.md"],
        "libhsa-runtime64.so.1.18.0": ["share/doc/hsa-runtime64/LICENSE.md"],
        "libamd_comgr.so.3.0.0": ["share/doc/amd_comgr/LICENSE.txt", "share/doc/amd_comgr/NOTICES.txt"],
        "librocblas.so.5.1.0": ["share/doc/rocblas/LICENSE.md"],
        "libhipblas.so.3.1.0": ["share/doc/hipblas/LICENSE.md"],
        "libhipblaslt.so.1.1.0": ["share/doc/hipblaslt/LICENSE.md"],
        "rocblas/library/TensileLibrary_lazy_gfx1100.dat": ["share/doc/rocblas/LICENSE.md"],
        "hipblaslt/library/TensileLibrary_gfx1100.dat": ["share/doc/hipblaslt/LICENSE.md"],
        # The sysdeps prefix's own doc folder, by the name map (liblzma is xz's).
        "librocm_sysdeps_liblzma.so.5": [
            "lib/rocm_sysdeps/share/doc/xz/COPYING",
            "lib/rocm_sysdeps/share/doc/xz/COPYING.0BSD",
            "lib/rocm_sysdeps/share/doc/xz/COPYING.GPLv2",
        ],
        # TheRock ships no license for these: the declared source where this machine has it ...
        "librocm_sysdeps_z.so.1": ["share/doc/zlib1g/copyright"],
        "librocm_sysdeps_numa.so.1": ["share/doc/libnuma1/copyright"],
        # ... and none where it does not: never the ROCm licenses.
        "librocm_sysdeps_zstd.so.1": [],
        "librocm_sysdeps_elf.so.1": [],
        "librocm_sysdeps_drm.so.2": [],
        "librocm_sysdeps_drm_amdgpu.so.1": [],
    }
    for rel in ("share/doc/hip/LICENSE.md", "lib/rocm_sysdeps/share/doc/xz/COPYING.0BSD"):
        assert (stage / TOOLCHAIN_LICENSES / rel).read_text() == license_text(rel)
    assert (stage / TOOLCHAIN_LICENSES / "share/doc/zlib1g/copyright").read_text() == "zlib1g copyright\n"
    # check-bundle's rule refuses exactly the files without a license (fail closed).
    files = [{"path": c.path, "sha256": "0" * 64, "size": 1, "from_toolchain": c.origin} for c in copied]
    problems = dict(license_problems({"files": files, "third_party": listed}, stage))
    assert sorted(problems) == [
        "librocm_sysdeps_drm.so.2",
        "librocm_sysdeps_drm_amdgpu.so.1",
        "librocm_sysdeps_elf.so.1",
        "librocm_sysdeps_zstd.so.1",
    ]
    assert all("no license in the bundle" in why for why in problems.values())


def _dpkg_owner(path: Path) -> str:
    proc = subprocess.run(["dpkg-query", "-S", str(path)], capture_output=True, text=True, check=True)
    return proc.stdout.split(":")[0]


@pytest.mark.skipif(
    not any(DEBIAN_HIP.glob("libamdhip64.so.*.*")),
    reason="Debian's HIP runtime (libamdhip64) is not installed",
)
def test_a_library_of_debians_rocm_at_usr_carries_its_packages_copyright(tmp_path: Path) -> None:
    real = sorted(DEBIAN_HIP.glob("libamdhip64.so.*.*"))[-1]
    package = _dpkg_owner(real)
    stage = tmp_path / "stage"
    stage.mkdir()
    listed = describe_third_party(
        stage,
        [CopiedFile(path=real.name, origin=f"lib/x86_64-linux-gnu/{real.name}")],
        toolchain_root=Path("/usr"),
        details={"kind": "rocm"},
    )
    [entry] = listed
    assert entry["package"] == package and entry["archive"] == f"dpkg:{package}"
    # The package's copyright file, then the common license texts it refers to (Debian keeps those apart).
    first, *common = entry["licenses"]
    assert first == f"{TOOLCHAIN_LICENSES}/share/doc/{package}/copyright"
    text = (Path("/usr/share/doc") / package / "copyright").read_text()
    assert (stage / first).read_text() == text
    assert all(c.startswith(f"{TOOLCHAIN_LICENSES}/share/common-licenses/") for c in common)
    assert all(f"/usr/share/common-licenses/{Path(c).name}" in text and (stage / c).is_file() for c in common)
    version = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, check=True
    ).stdout
    assert entry["version"] == version
