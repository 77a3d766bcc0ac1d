"""Reading ggml's and llama.cpp's log for the smoke run's GPU side (lines in their own formats)."""

from __future__ import annotations

from pipeline.bundle.gpu_smoke import (
    Device,
    devices_used,
    driver_selection,
    failed_to_open,
    found_no_device,
    no_device_reason,
    only_cpu_vulkan_devices,
)

# ggml-backend-reg.cpp's and llama.cpp's formats, filled in as a run on a machine without a driver writes them.
NO_DRIVER_LOG = """\
load_backend: loaded CPU backend from /b/libggml-cpu-haswell.so
load_backend: failed to initialize backend from /b/libggml-vulkan.so: ggml_backend_init returned NULL
main: decoded 4 tokens in 0.01 s, speed: 400.00 t/s
"""
LAVAPIPE_LOG = """\
load_backend: loaded Vulkan backend from /b/libggml-vulkan.so
llama_model_load_from_file_impl: using device Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits)) (unknown id) - 7834 MiB free
"""
MISSING_LIBRARY_LOG = (
    "load_backend: failed to load /b/libggml-cuda.so: libcudart.so.13: cannot open shared object file: "
    "No such file or directory\n"
)


def test_a_module_without_a_driver_loaded_but_found_no_device() -> None:
    assert found_no_device(NO_DRIVER_LOG) == {"libggml-vulkan.so"}
    assert failed_to_open(NO_DRIVER_LOG) == set()
    assert no_device_reason("vulkan", "libggml-vulkan.so", NO_DRIVER_LOG) == (
        "no Vulkan device: libggml-vulkan.so loaded, and its ggml_backend_init found no Vulkan driver (ICD) or device"
    )


def test_a_module_that_did_not_open_is_a_library_problem() -> None:
    assert failed_to_open(MISSING_LIBRARY_LOG) == {"libggml-cuda.so"}
    assert found_no_device(MISSING_LIBRARY_LOG) == set()
    assert no_device_reason("cuda", "libggml-cuda.so", MISSING_LIBRARY_LOG) == (
        "libggml-cuda.so did not load (the backends check says why)"
    )


def test_the_device_the_model_uses() -> None:
    # The description holds parentheses of its own.
    assert devices_used(LAVAPIPE_LOG) == [
        Device(name="Vulkan0", description="llvmpipe (LLVM 15.0.6, 256 bits)")
    ]
    assert devices_used(NO_DRIVER_LOG) == []


def test_only_cpu_vulkan_devices() -> None:
    assert only_cpu_vulkan_devices("ggml_vulkan: No devices found.\n")
    assert not only_cpu_vulkan_devices(LAVAPIPE_LOG)
    assert no_device_reason(
        "vulkan",
        "libggml-vulkan.so",
        "load_backend: loaded Vulkan backend from /b/libggml-vulkan.so\nggml_vulkan: No devices found.\n",
    ).startswith("no Vulkan device: libggml-vulkan.so loaded, and its driver")


def test_the_driver_selection_kept_from_the_environment() -> None:
    assert driver_selection(
        {"VK_ICD_FILENAMES": "/x.json", "LD_LIBRARY_PATH": "/build/lib", "PATH": "/tc"}
    ) == {"VK_ICD_FILENAMES": "/x.json"}
