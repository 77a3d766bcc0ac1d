"""The smoke run's GPU side: did a GPU backend module find a device, and did the forward pass run on it?

A GPU module can load (every library it needs resolves) and still find
nothing to run on: no driver (Vulkan: no ICD; ggml then logs
``failed to initialize backend from <module>: ggml_backend_init returned
NULL``) or a driver without a device. That is the machine's state, not
the bundle's fault: the ``gpu-forward-pass`` check then is skipped, saying
"no <backend> device", and the ``backends`` check counts the module as
loaded. Only a module the loader could not open is a missing library.

With a device (a GPU, or Mesa's lavapipe, a software Vulkan driver that runs
on the CPU), ``llama-simple`` offloads the model (``-ngl 99``) and
llama.cpp logs ``using device <name> (<description>) (<id>) - <n> MiB
free``: the check passes naming that device and its backend. ggml-vulkan
passes over a CPU-type device unless ``GGML_VK_VISIBLE_DEVICES`` names it
("ggml_vulkan: No devices found."); on a machine whose only Vulkan devices
are such (no GPU, lavapipe installed) the run is repeated with
:data:`CPU_VULKAN_DEVICE`, so the Vulkan backend still computes.

Pure: ggml's and llama.cpp's log text in, findings out
(:func:`pipeline.bundle.smoke.gpu_forward_pass_check` runs the program).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath

from pipeline.names import VULKAN_DRIVER_VARIABLES

# How a backend module's name (libggml-<name>.so) reads in a line.
BACKEND_WORDS = {
    "vulkan": "Vulkan",
    "cuda": "CUDA",
    "hip": "ROCm/HIP",
    "sycl": "SYCL",
    "opencl": "OpenCL",
    "metal": "Metal",
    "cann": "CANN",
    "musa": "MUSA",
}
# ggml's backend modules that drive a GPU (libggml-<name>.so, in ggml's words: ROCm's is "hip"); rpc, blas
# and cpu do not. Not matrix.toml's backend names (pipeline.names.BACKEND_NAMES).
GGML_GPU_MODULES = frozenset(BACKEND_WORDS)
# Layers llama-simple offloads: all of them (its own default).
GPU_LAYERS = "99"
# ggml-vulkan's device choice (GGML_VK_VISIBLE_DEVICES): the first device, when every device is a CPU one.
CPU_VULKAN_DEVICE = {"GGML_VK_VISIBLE_DEVICES": "0"}

_INIT_NULL = re.compile(r"failed to initialize backend from (?P<path>.+?): ggml_backend_init returned NULL")
_OPEN_FAILED = re.compile(r"failed to load (?P<path>.+?): (?P<why>.+)$", re.M)
_USING_DEVICE = re.compile(r"using device (?P<name>\S+) \((?P<description>.*)\) \([^()]*\) - \d+ MiB free")
_NO_VULKAN_DEVICES = "ggml_vulkan: No devices found."


def backend_word(backend: str) -> str:
    return BACKEND_WORDS.get(backend, backend)


def _names(pattern: re.Pattern[str], log: str) -> set[str]:
    return {PurePath(m.group("path").replace("\\", "/")).name for m in pattern.finditer(log)}


def found_no_device(log: str) -> set[str]:
    """The module files whose ``ggml_backend_init`` returned NULL: loaded, but no driver or device."""
    return _names(_INIT_NULL, log)


def failed_to_open(log: str) -> set[str]:
    """The module files the loader could not open (a library they need is missing, or they are broken)."""
    return _names(_OPEN_FAILED, log)


@dataclass(frozen=True, kw_only=True)
class Device:
    """A device llama.cpp put the model on: ``Vulkan0``, ``llvmpipe (LLVM 15.0.6, 256 bits)``."""

    name: str
    description: str


def devices_used(log: str) -> list[Device]:
    """The devices llama.cpp's log says the model uses (none: the CPU only)."""
    return [
        Device(name=m.group("name"), description=m.group("description")) for m in _USING_DEVICE.finditer(log)
    ]


def only_cpu_vulkan_devices(log: str) -> bool:
    """ggml-vulkan found a driver but no device it takes by default (no GPU; a CPU device it passes over)."""
    return _NO_VULKAN_DEVICES in log


def no_device_reason(backend: str, module: str, log: str) -> str:
    """Why ``module`` (of ``backend``) ran nothing, from the run's log, in words."""
    word = backend_word(backend)
    if module in failed_to_open(log):
        return f"{module} did not load (the backends check says why)"
    if module in found_no_device(log):
        driver = "Vulkan driver (ICD)" if backend == "vulkan" else f"{word} driver"
        return f"no {word} device: {module} loaded, and its ggml_backend_init found no {driver} or device"
    if backend == "vulkan" and _NO_VULKAN_DEVICES in log:
        return f"no {word} device: {module} loaded, and its driver lists no device ggml-vulkan takes, not even a CPU one"
    return f"no {word} device: {module} loaded, and llama.cpp put the model on none of its devices"


def driver_selection(environ: Mapping[str, str]) -> dict[str, str]:
    """What of ``environ`` picks the GPU driver (the Vulkan loader's ICD variables that are set)."""
    return {name: environ[name] for name in VULKAN_DRIVER_VARIABLES if name in environ}
