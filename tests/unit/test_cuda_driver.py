"""The NVIDIA driver in a CUDA build and bundle: the link stub's symbols, the stand-in's source, the refusal to ship it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.bundle.check import check_tree
from pipeline.bundle.driver_standin import DriverForSmoke, runtime_driver_version, standin_source
from pipeline.toolchain.cuda_layout import DRIVER_SONAME, DRIVER_STUB, driver_entry_points, no_device_source

# Lines as cuda.h 13.2 writes them (nvidia-cuda-runtime 13.2.86, include/cuda.h).
CUDA_H = """\
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
    #define __CUDA_API_PTDS(api) api ## _ptds
    #define __CUDA_API_PTSZ(api) api ## _ptsz
#else
    #define __CUDA_API_PTDS(api) api
    #define __CUDA_API_PTSZ(api) api
#endif
#define cuMemAlloc                          cuMemAlloc_v2
#define cuMemPrefetchAsync                  __CUDA_API_PTSZ(cuMemPrefetchAsync_v2)
#define cuMemcpyHtoD                        __CUDA_API_PTDS(cuMemcpyHtoD_v2)
#define CUDA_VERSION 13020
CUresult CUDAAPI cuInit(unsigned int Flags);
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                             const CUmemAllocationProp *prop, unsigned long long flags);
"""


def test_the_link_stub_exports_every_name_a_program_compiled_against_cuda_h_can_import() -> None:
    assert driver_entry_points(CUDA_H) == (
        "cuInit",
        "cuMemAlloc",
        "cuMemAlloc_v2",
        "cuMemCreate",
        "cuMemPrefetchAsync_v2",
        "cuMemPrefetchAsync_v2_ptsz",
        "cuMemcpyHtoD_v2",
        "cuMemcpyHtoD_v2_ptds",
    )


def test_the_stub_sits_where_findcudatoolkit_looks_with_the_drivers_soname() -> None:
    # FindCUDAToolkit: find_library(cuda ... PATH_SUFFIXES ... stubs) under the toolkit's library folder.
    assert (DRIVER_STUB, DRIVER_SONAME) == ("lib/stubs/libcuda.so", "libcuda.so.1")


def test_every_stub_function_answers_no_device() -> None:
    source = no_device_source(["cuInit", "cuMemCreate"])
    # CUDA_ERROR_NO_DEVICE = 100 (cuda.h's cudaError_enum).
    assert "int cuInit(void) { return 100; }" in source
    assert "int cuMemCreate(void) { return 100; }" in source
    with pytest.raises(ValueError, match="not a CUDA driver symbol"):
        no_device_source(['cuInit); system("x"'])


def test_the_standin_answers_the_runtimes_start_and_no_device_for_the_rest() -> None:
    source = standin_source(["cuMemCreate", "cuDriverGetVersion"], 13000)
    assert "int cuDriverGetVersion(int *version) { *version = 13000; return 0; }" in source
    assert (
        "int cuGetProcAddress_v2(const char *name, void **fn, int version, u64 flags, int *status) {"
        in source
    )
    assert "int cuMemCreate(void) { return 100; }" in source
    # Defined once: the bootstrap functions are the stand-in's own, not "no device" stubs.
    assert "int cuDriverGetVersion(void)" not in source
    with pytest.raises(ValueError, match="not a CUDA driver symbol"):
        standin_source(["cudaMalloc"], 13000)


def test_the_standin_reports_the_bundled_runtimes_major_release() -> None:
    assert runtime_driver_version(["libcudart.so.13", "libcublas.so.13", "libggml-cuda.so"]) == 13000
    assert runtime_driver_version(["libggml-cpu.so"]) == 0


def test_a_bundle_without_cuda_says_nothing_of_the_driver() -> None:
    assert DriverForSmoke().line is None
    assert "stand-in" in str(DriverForSmoke(needed_by=("libggml-cuda.so",), library_dir=Path("/x")).line)
    assert DriverForSmoke(needed_by=("libggml-cuda.so",)).line == "the machine's NVIDIA driver (libcuda.so.1)"


@pytest.mark.parametrize("name", ["libcuda.so.1", "libcuda.so", "libcuda.so.580.65.06", "nvcuda.dll"])
def test_a_bundle_that_ships_the_driver_is_refused(tmp_path: Path, name: str) -> None:
    (tmp_path / "LICENSE").write_text("MIT\n")
    (tmp_path / name).write_bytes(b"not the bundle's to ship")
    result = check_tree(tmp_path, os_name="linux", glibc_max=None)
    # The files are no ELF: besides the driver rule, the check says it examined no program.
    assert [(p.kind, p.file, p.message) for p in result.problems if p.kind != "empty"] == [
        ("driver", name, "the GPU driver's own library ships with the driver, never in a bundle")
    ]


def test_a_library_that_only_looks_like_the_driver_ships(tmp_path: Path) -> None:
    (tmp_path / "LICENSE").write_text("MIT\n")
    (tmp_path / "libcudart.so.13").write_bytes(b"the runtime ships")
    assert [p.kind for p in check_tree(tmp_path, os_name="linux", glibc_max=None).problems] == ["empty"]
