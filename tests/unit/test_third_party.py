"""Where a bundle's redistributed runtime came from, and the licenses that must travel with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.bundle.closure import CopiedFile
from pipeline.bundle.license_match import declared, library_stem, projects_of
from pipeline.bundle.third_party import TOOLCHAIN_LICENSES, describe_third_party, license_problems

RUNTIME_SHA = "3" * 64
BLAS_SHA = "4" * 64
EULA = "NVIDIA Software License Agreement ... Attachment A: redistributable files\n"


def wheel_install(install: Path) -> Path:
    """NVIDIA's wheels as they unpack (nvidia_cuda_runtime 13.x's own layout): one tree, a dist-info per wheel."""
    tree = install / "nvidia" / "cu13"
    (tree / "lib").mkdir(parents=True)
    for lib in ("libcudart.so.13", "libcublas.so.13"):
        (tree / "lib" / lib).write_bytes(b"\x7fELF " + lib.encode())
    for name, version, lib in (
        ("nvidia_cuda_runtime", "13.2.86", "libcudart.so.13"),
        ("nvidia_cublas", "13.3.0.5", "libcublas.so.13"),
    ):
        info = install / f"{name}-{version}.dist-info"
        (info / "licenses").mkdir(parents=True)
        (info / "licenses" / "License.txt").write_text(EULA)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.4\nName: {name.replace('_', '-')}\nVersion: {version}\n"
            "License-Expression: LicenseRef-NVIDIA-Proprietary\nLicense-File: License.txt\n"
        )
        (info / "RECORD").write_text(f"nvidia/cu13/lib/{lib},sha256=x,1\n{info.name}/METADATA,,\n")
    (install / ".pipeline-install.json").write_text(
        json.dumps(
            {
                "archives": [
                    {"label": "nvidia-cuda-runtime==13.2.86", "sha256": RUNTIME_SHA},
                    {"label": "nvidia-cublas==13.3.0.5", "sha256": BLAS_SHA},
                ]
            }
        )
    )
    return tree


def test_a_wheel_file_names_its_wheel_its_sha256_and_carries_the_wheel_license(tmp_path: Path) -> None:
    tree = wheel_install(tmp_path / "cuda")
    stage = tmp_path / "stage"
    stage.mkdir()
    copied = [
        CopiedFile(path="libcudart.so.13", origin="lib/libcudart.so.13"),
        CopiedFile(path="libcublas.so.13", origin="lib/libcublas.so.13"),
        CopiedFile(path="libcudart.so", origin="lib/libcudart.so", link="libcudart.so.13"),
    ]
    listed = describe_third_party(
        stage, copied, toolchain_root=tree, details={"kind": "cuda", "version": "13.2.86"}
    )
    by_path = {e["path"]: e for e in listed}
    # A symlink is no file of its own: its target is listed.
    assert set(by_path) == {"libcudart.so.13", "libcublas.so.13"}
    runtime = by_path["libcudart.so.13"]
    assert (runtime["package"], runtime["version"]) == ("nvidia-cuda-runtime", "13.2.86")
    assert (runtime["archive"], runtime["archive_sha256"]) == ("nvidia-cuda-runtime==13.2.86", RUNTIME_SHA)
    assert runtime["declared_license"] == "LicenseRef-NVIDIA-Proprietary"
    license_path = f"{TOOLCHAIN_LICENSES}/nvidia_cuda_runtime-13.2.86.dist-info/licenses/License.txt"
    assert runtime["licenses"] == [license_path]
    assert (stage / license_path).read_text() == EULA
    assert by_path["libcublas.so.13"]["archive_sha256"] == BLAS_SHA


def test_an_archive_file_gets_its_component_license_and_an_unnamed_one_none(tmp_path: Path) -> None:
    """Fail closed: a file no component names gets no license (it once got every license of the archive)."""
    root = tmp_path / "therock"
    (root / "lib" / "rocblas" / "library").mkdir(parents=True)
    (root / "lib" / "librocblas.so.4.5.0").write_bytes(b"\x7fELF")
    (root / "lib" / "libfoo.so.1").write_bytes(b"\x7fELF")
    (root / "lib" / "rocblas" / "library" / "Kernels.hsaco").write_bytes(b"k")
    for component in ("rocblas", "hip"):
        (root / "share" / "doc" / component).mkdir(parents=True)
        (root / "share" / "doc" / component / "LICENSE.md").write_text(f"{component} license\n")
    stage = tmp_path / "stage"
    stage.mkdir()
    copied = [
        CopiedFile(path="librocblas.so.4.5.0", origin="lib/librocblas.so.4.5.0"),
        CopiedFile(path="libfoo.so.1", origin="lib/libfoo.so.1"),
        CopiedFile(path="rocblas/library/Kernels.hsaco", origin="lib/rocblas/library/Kernels.hsaco"),
    ]
    details = {
        "kind": "therock",
        "version": "7.10.0a20260301",
        "url": "https://example.invalid/t.tar.gz",
        "sha256": "5" * 64,
    }
    by_path = {
        e["path"]: e
        for e in describe_third_party(
            stage, copied, toolchain_root=root, details=details, declared_doc=tmp_path / "no-doc"
        )
    }
    rocblas = by_path["librocblas.so.4.5.0"]
    assert rocblas["licenses"] == [f"{TOOLCHAIN_LICENSES}/share/doc/rocblas/LICENSE.md"]
    assert rocblas["license_source"] == "share/doc/rocblas"
    assert (rocblas["archive"], rocblas["archive_sha256"], rocblas["version"]) == (
        "https://example.invalid/t.tar.gz",
        "5" * 64,
        "7.10.0a20260301",
    )
    # A data folder is named by its folder, not its file name.
    assert by_path["rocblas/library/Kernels.hsaco"]["licenses"] == [
        f"{TOOLCHAIN_LICENSES}/share/doc/rocblas/LICENSE.md"
    ]
    assert (by_path["libfoo.so.1"]["licenses"], by_path["libfoo.so.1"]["license_source"]) == ([], None)
    assert not (stage / TOOLCHAIN_LICENSES / "share/doc/hip").exists()
    files = [{"path": p, "sha256": "0" * 64, "size": 1, "from_toolchain": f"lib/{p}"} for p in by_path]
    problems = dict(license_problems({"files": files, "third_party": list(by_path.values())}, stage))
    assert sorted(problems) == ["libfoo.so.1"]


@pytest.mark.parametrize(("name", "stem", "projects"), [
    ("librocm_sysdeps_liblzma.so.5", "lzma", ("xz",)),
    ("liblzma.so.5", "lzma", ("xz",)),
    ("librocm_sysdeps_z.so.1", "z", ("zlib",)),
    ("libz.so", "z", ("zlib",)),
    ("librocm_sysdeps_elf.so.1", "elf", ("elfutils",)),
    ("librocm_sysdeps_numa.so.1", "numa", ("numactl",)),
    ("librocm_sysdeps_bz2.so", "bz2", ("bzip2",)),
    ("librocm_sysdeps_zstd.so.1", "zstd", ("zstd",)),
    ("librocm_sysdeps_drm_amdgpu.so.1", "drm_amdgpu", ("libdrm",)),
    ("libhsa-runtime64.so.1.18.0", "hsa-runtime64", ("hsa-runtime64", "rocr", "hsa-rocr")),
    ("libamdhip64.so.7", "amdhip64", None),
    ("amdhip64_7.dll", "amdhip64_7", None),
])  # fmt: skip
def test_a_library_name_maps_to_the_project_whose_doc_folder_holds_its_license(
    name: str, stem: str, projects: tuple[str, ...] | None
) -> None:
    assert (library_stem(name), projects_of(name)) == (stem, projects)


def test_a_declared_source_is_the_debian_copyright_and_the_common_licenses_it_names(tmp_path: Path) -> None:
    doc = tmp_path / "usr" / "share" / "doc"
    (doc / "libelf1t64").mkdir(parents=True)
    (doc / "libelf1t64" / "copyright").write_text(
        "elfutils: see /usr/share/common-licenses/LGPL-3 and GPL-2\nand /usr/share/common-licenses/GPL-2.\n"
    )
    common = tmp_path / "usr" / "share" / "common-licenses"
    common.mkdir()
    for name in ("LGPL-3", "GPL-2", "Apache-2.0"):
        (common / name).write_text(name)
    covered = declared(("elfutils",), doc)
    assert covered is not None and covered.base == tmp_path / "usr"
    assert covered.files == (
        "share/doc/libelf1t64/copyright",
        "share/common-licenses/GPL-2",
        "share/common-licenses/LGPL-3",
    )
    assert covered.source == "declared: elfutils's license from Debian's libelf1t64 package"
    # No package of the project on this machine: nothing, so the bundle is refused.
    assert declared(("numactl",), doc) is None


def test_a_third_party_file_without_a_license_in_the_bundle_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "licenses").mkdir()
    (tmp_path / "licenses" / "EULA.txt").write_text(EULA)
    manifest = {
        "files": [
            {"path": "llama-cli", "sha256": "0" * 64, "size": 1},
            {
                "path": "libcudart.so.13",
                "sha256": "1" * 64,
                "size": 1,
                "from_toolchain": "lib/libcudart.so.13",
            },
            {"path": "libcudart.so", "symlink": "libcudart.so.13", "from_toolchain": "lib/libcudart.so"},
            {
                "path": "libcublas.so.13",
                "sha256": "2" * 64,
                "size": 1,
                "from_toolchain": "lib/libcublas.so.13",
            },
            {
                "path": "libcublasLt.so.13",
                "sha256": "3" * 64,
                "size": 1,
                "from_toolchain": "lib/libcublasLt.so.13",
            },
        ],
        "third_party": [
            {"path": "libcudart.so.13", "licenses": ["licenses/EULA.txt"]},
            {"path": "libcublas.so.13", "licenses": ["licenses/gone.txt"]},
        ],
    }
    problems = dict(license_problems(manifest, tmp_path))
    # The program is llama.cpp's own; a symlink is covered by its target.
    assert sorted(problems) == ["libcublas.so.13", "libcublasLt.so.13"]
    assert "licenses/gone.txt" in problems["libcublas.so.13"]
    assert "no license in the bundle" in problems["libcublasLt.so.13"]


def test_a_tree_pip_installed_names_each_library_by_its_own_wheels_version(tmp_path: Path) -> None:
    # `pip install nvidia-cuda-nvcc nvidia-cuda-runtime`: no pipeline marker, the dist-info folders in
    # site-packages, two levels above the toolkit tree; the toolchain's version is nvcc's.
    site = tmp_path / "venv" / "lib" / "python3.13" / "site-packages"
    tree = site / "nvidia" / "cu13"
    (tree / "lib").mkdir(parents=True)
    (tree / "bin").mkdir()
    (tree / "lib" / "libcudart.so.13").write_bytes(b"\x7fELF cudart")
    (tree / "bin" / "nvcc").write_bytes(b"\x7fELF nvcc")
    for name, version, path in (
        ("nvidia_cuda_runtime", "13.0.96", "lib/libcudart.so.13"),
        ("nvidia_cuda_nvcc", "13.0.88", "bin/nvcc"),
    ):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "LICENSE.txt").write_text(EULA)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n"
            "License: NVIDIA Proprietary Software\n"
        )
        (info / "RECORD").write_text(f"nvidia/cu13/{path},sha256=x,1\n{info.name}/METADATA,,\n")
    stage = tmp_path / "stage"
    stage.mkdir()
    [entry] = describe_third_party(
        stage,
        [CopiedFile(path="libcudart.so.13", origin="lib/libcudart.so.13")],
        toolchain_root=tree,
        details={"kind": "cuda", "version": "13.0.88"},
    )
    assert (entry["package"], entry["version"]) == ("nvidia-cuda-runtime", "13.0.96")
    assert entry["archive"] == "nvidia_cuda_runtime-13.0.96.dist-info"
    assert entry["declared_license"] == "NVIDIA Proprietary Software"
    assert entry["licenses"] == [f"{TOOLCHAIN_LICENSES}/nvidia_cuda_runtime-13.0.96.dist-info/LICENSE.txt"]
