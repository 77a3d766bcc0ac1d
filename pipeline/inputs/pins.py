"""Pinned toolchain archives: ``[toolchains.*]`` of matrix.toml as frozen data.

Pure: no I/O (it sits outside pipeline.toolchain, whose package runs tools). ``config.py`` hands the raw ``[toolchains]`` table here, so the
pins are validated with the rest of the file, before any work starts, and
every error names the file and the dotted key.

    [toolchains.cuda]
    version = "13.2.86"                 # the toolkit's version: install folder and identity
    [[toolchains.cuda.wheels]]
    name = "nvidia-cuda-nvcc"
    version = "13.2.86"
    sha256 = { linux = "...", windows = "..." }

    [toolchains.cuda-12]                # another line, from NVIDIA's redistributable archives
    version = "12.8.93"
    [toolchains.cuda-12.redist]
    url = "https://.../compute/cuda/redist/"
    manifest = "redistrib_12.8.1.json"  # NVIDIA's manifest: per component and platform, path, sha256, size
    sha256 = "..."                      # the manifest's: it vouches for every archive it lists
    components = ["cuda_nvcc", "cuda_cudart", "cuda_cccl", "libcublas"]

    [toolchains."cuda-13.4"]            # a line named by major.minor: one leg's toolkit beside the 13.x line
    version = "13.4.59"
    [toolchains."cuda-13.4".redist]
    ...
    components = ["cuda_nvcc", "cuda_crt", "libnvvm", "cccl", "cuda_cudart", "libcublas"]
    host_platform = "windows-x86_64"    # the machine that cross-compiles: these components are its own
    host_components = ["cuda_nvcc", "cuda_crt", "libnvvm", "cccl"]

    [toolchains.vulkan.linux]
    url = "https://.../vulkansdk-linux-x86_64-1.4.328.1.tar.xz"
    sha256 = "..."
    version = "1.4.328.1"
    root = "x86_64"                     # the SDK folder inside the archive's top folder
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigError
from pipeline.names import SHA256_HEX, is_plain_relative_path, url_problem

# What a wheel's sha256 is pinned for: NVIDIA publishes x86-64 Linux and Windows wheels, and
# aarch64 Linux ones (``linux-aarch64``, the arm64 runners') for the 13.x line.
PIN_PLATFORMS = ("linux", "windows", "linux-aarch64")
# The Vulkan SDK archives: one per OS.
SDK_OSES = ("linux", "windows")
# The CUDA line [toolchains.cuda] pins; other lines are [toolchains.cuda-<major>].
DEFAULT_CUDA_LINE = "13"

# A PyPI project name (PEP 508) and an exact version: nothing pip could widen.
_WHEEL_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_VERSION = re.compile(r"^\d+(?:\.\d+)+$")
# [toolchains.cuda-12] (a major line) or [toolchains."cuda-13.4"] (a minor release pinned for some legs).
_CUDA_LINE = re.compile(r"^cuda-\d+(?:\.\d+)?$")
# NVIDIA's manifest names: redistrib_12.8.1.json; its components: cuda_nvcc, libcublas.
_MANIFEST_NAME = re.compile(r"^redistrib_\d+(?:\.\d+)+\.json$")
_COMPONENT = re.compile(r"^[a-z][a-z0-9_]*$")
# NVIDIA's platform keys in a redistrib manifest (an arm64 Linux server is linux-sbsa).
REDIST_PLATFORMS = ("linux-x86_64", "linux-sbsa", "windows-x86_64", "windows-arm64")


@dataclass(frozen=True, kw_only=True)
class WheelPin:
    """One wheel of a toolkit: exact name, version and per-OS sha256."""

    name: str
    version: str
    sha256: Mapping[str, str]

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True, kw_only=True)
class RedistPins:
    """A CUDA toolkit from NVIDIA's redistributable archives, pinned by its manifest's sha256.

    The manifest (``redistrib_<release>.json``) lists, per component and
    platform, each archive's relative path, sha256 and size: once its own
    sha256 is checked, its per-archive values are as good as pins, so one
    value pins every archive of every platform it lists.
    """

    # The dotted key it was read from (``toolchains.cuda-12.redist``): errors name it.
    key: str
    # The folder the manifest and the archives' relative paths are under (ends with '/').
    url: str
    manifest: str
    sha256: str
    # The components a leg installs (``cuda_nvcc``, ``libcublas``), in order.
    components: tuple[str, ...]
    # A cross build's: the platform of the machine that compiles (``windows-x86_64``) and the components
    # taken for it (the compiler and what it reads: nvcc, crt, nvvm, cccl); the others are the leg's
    # platform's (the libraries it links and ships). None: every component is the leg's platform's.
    host_platform: str | None = None
    host_components: tuple[str, ...] = ()

    @property
    def manifest_url(self) -> str:
        return self.url + self.manifest

    def platforms(self, leg_platform: str) -> tuple[tuple[str, str], ...]:
        """(component, platform) for each component, in order: the host's for ``host_components``, else
        ``leg_platform`` (the manifest's key for the leg's os and arch)."""
        return tuple(
            (
                name,
                self.host_platform if self.host_platform and name in self.host_components else leg_platform,
            )
            for name in self.components
        )


@dataclass(frozen=True, kw_only=True)
class CudaPins:
    """The CUDA toolkit as pinned wheels (NVIDIA's ``nvidia-*`` 13.x wheels) or redistributable archives."""

    version: str
    wheels: tuple[WheelPin, ...]
    # Set when the toolkit comes from NVIDIA's redistributable archives instead of wheels.
    redist: RedistPins | None = None

    def for_arch(self, arch: str) -> CudaPins:
        """These pins as an ``arch`` leg installs them: an arm64 leg's Linux wheels are the ``linux-aarch64`` ones
        (the manifest names every platform's archive: redistributable pins serve every arch)."""
        if arch != "arm64":
            return self
        wheels = tuple(WheelPin(name=w.name, version=w.version,
                                sha256={"linux": w.sha256["linux-aarch64"]} if "linux-aarch64" in w.sha256 else {})
                       for w in self.wheels)  # fmt: skip
        return CudaPins(version=self.version, wheels=wheels, redist=self.redist)

    def wheels_for(self, os_name: str) -> tuple[tuple[WheelPin, str], ...]:
        """(wheel, sha256) for ``os_name``; empty when the pins do not cover that OS."""
        if not all(os_name in w.sha256 for w in self.wheels):
            return ()
        return tuple((w, w.sha256[os_name]) for w in self.wheels)


@dataclass(frozen=True, kw_only=True)
class SdkPin:
    """One SDK archive for one OS: where, what it hashes to, and where the SDK sits inside."""

    url: str
    sha256: str
    version: str
    # Relative folder of the SDK inside the installed tree ("" = the tree itself).
    root: str = ""


@dataclass(frozen=True, kw_only=True)
class ToolchainPins:
    """Everything under ``[toolchains]``; absent parts mean "find it on the system"."""

    cuda: CudaPins | None = None
    vulkan: Mapping[str, SdkPin] = field(default_factory=dict)
    # Other CUDA lines, by name ("12": [toolchains.cuda-12], "13.4": [toolchains."cuda-13.4"]); [toolchains.cuda]
    # is DEFAULT_CUDA_LINE.
    cuda_lines: Mapping[str, CudaPins] = field(default_factory=dict)

    def cuda_for(self, line: str | None) -> CudaPins | None:
        """The pins of CUDA line ``line`` (None: the default line)."""
        if line is None or line == DEFAULT_CUDA_LINE:
            return self.cuda
        return self.cuda_lines.get(line)

    def for_leg(self, cuda_line: str | None, arch: str) -> ToolchainPins:
        """The pins one leg installs from: its CUDA line as ``cuda``, for its arch."""
        cuda = self.cuda_for(cuda_line)
        # LunarG's SDK archives pinned here are x86-64 ones: an arm64 leg uses the runner's Vulkan.
        vulkan = self.vulkan if arch == "x64" else {}
        return ToolchainPins(
            cuda=cuda.for_arch(arch) if cuda is not None else None, vulkan=vulkan, cuda_lines=self.cuda_lines
        )


def _fail(path: Path, key: str, expected: str, value: Any = None) -> ConfigError:
    got = "" if value is None else f", got {value!r}"
    return ConfigError(f"{path}: {key}: expected {expected}{got}")


def _table(data: Any, path: Path, key: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _fail(path, key, "a table", data)
    return dict(data)


def _unknown(data: Mapping[str, Any], path: Path, key: str) -> None:
    for name in data:
        raise ConfigError(f"{path}: {key}.{name}: unknown key")


def _string(
    data: dict[str, Any], path: Path, key: str, name: str, pattern: re.Pattern[str], what: str
) -> str:
    value = data.pop(name, None)
    if value is None:
        raise ConfigError(f"{path}: {key}.{name}: required key is missing")
    if not isinstance(value, str) or not pattern.match(value):
        raise _fail(path, f"{key}.{name}", what, value)
    return value


def _sha(value: Any, path: Path, key: str) -> str:
    if not isinstance(value, str) or not SHA256_HEX.match(value.lower()):
        raise _fail(path, key, "a sha256 (64 hex digits)", value)
    return value.lower()


def parse_cuda_pins(
    data: Any, path: Path, key: str = "toolchains.cuda", *, wheels_required: bool = True
) -> CudaPins:
    """``[toolchains.cuda]`` (or another line's table) -> :class:`CudaPins`.

    ``wheels_required=False``: a line declared by its version before its wheels are pinned; a
    leg of it fails to install, naming the missing pins, and builds nothing.
    """
    t = _table(data, path, key)
    version = _string(t, path, key, "version", _VERSION, "a version such as '13.2.86'")
    # A toolkit from redistributable archives has no wheels to pin.
    wheels_required = wheels_required and "redist" not in t
    raw = t.pop("wheels", None if wheels_required else [])
    if not isinstance(raw, list) or (wheels_required and not raw):
        raise _fail(path, f"{key}.wheels", "a non-empty array of tables", raw)
    wheels: list[WheelPin] = []
    for i, item in enumerate(raw):
        where = f"{key}.wheels[{i}]"
        w = _table(item, path, where)
        name = _string(w, path, where, "name", _WHEEL_NAME, "a package name")
        wversion = _string(w, path, where, "version", _VERSION, "an exact version such as '13.2.86'")
        shas = _table(w.pop("sha256", None), path, f"{where}.sha256")
        hashes = {platform: _sha(shas.pop(platform), path, f"{where}.sha256.{platform}")
                  for platform in PIN_PLATFORMS if platform in shas}  # fmt: skip
        _unknown(shas, path, f"{where}.sha256")
        if not hashes:
            raise _fail(path, f"{where}.sha256", "a sha256 for 'linux', 'windows' and/or 'linux-aarch64'")
        _unknown(w, path, where)
        if any(p.name.lower() == name.lower() for p in wheels):
            raise ConfigError(f"{path}: {where}.name: {name!r} is listed twice")
        wheels.append(WheelPin(name=name, version=wversion, sha256=hashes))
    redist = parse_redist_pins(t.pop("redist"), path, f"{key}.redist") if "redist" in t else None
    if redist is not None and wheels:
        raise ConfigError(f"{path}: {key}: wheels and redist both install the toolkit: keep one")
    _unknown(t, path, key)
    return CudaPins(version=version, wheels=tuple(wheels), redist=redist)


def parse_redist_pins(data: Any, path: Path, key: str) -> RedistPins:
    """``[toolchains.cuda-<line>.redist]`` -> :class:`RedistPins`."""
    t = _table(data, path, key)
    url = t.pop("url", None)
    if (problem := url_problem(url)) is not None:
        raise _fail(path, f"{key}.url", problem, url)
    if not str(url).endswith("/"):
        raise _fail(path, f"{key}.url", "the folder that holds the manifest, ending with '/'", url)
    manifest = _string(
        t, path, key, "manifest", _MANIFEST_NAME, "NVIDIA's manifest name such as 'redistrib_12.8.1.json'"
    )
    sha = _sha(t.pop("sha256", None), path, f"{key}.sha256")
    raw = t.pop("components", None)
    if not isinstance(raw, list) or not raw:
        raise _fail(
            path, f"{key}.components", "a non-empty array of component names such as 'cuda_nvcc'", raw
        )
    components: list[str] = []
    for i, name in enumerate(raw):
        if not isinstance(name, str) or not _COMPONENT.match(name):
            raise _fail(path, f"{key}.components[{i}]", "a component name such as 'cuda_nvcc'", name)
        if name in components:
            raise ConfigError(f"{path}: {key}.components[{i}]: {name!r} is listed twice")
        components.append(name)
    host_platform = t.pop("host_platform", None)
    if host_platform is not None and host_platform not in REDIST_PLATFORMS:
        raise _fail(path, f"{key}.host_platform", f"one of {', '.join(REDIST_PLATFORMS)}", host_platform)
    raw_host = t.pop("host_components", [])
    if not isinstance(raw_host, list) or not all(isinstance(n, str) for n in raw_host):
        raise _fail(path, f"{key}.host_components", "an array of component names", raw_host)
    for i, name in enumerate(raw_host):
        if name not in components:
            raise _fail(path, f"{key}.host_components[{i}]", "one of its components", name)
    if bool(host_platform) != bool(raw_host):
        raise ConfigError(
            f"{path}: {key}: host_platform and host_components go together (the cross build's compiler "
            "and the platform it runs on)"
        )
    _unknown(t, path, key)
    return RedistPins(key=key, url=str(url), manifest=manifest, sha256=sha, components=tuple(components),
                      host_platform=host_platform, host_components=tuple(raw_host))  # fmt: skip


def parse_sdk_pin(data: Any, path: Path, key: str) -> SdkPin:
    """``[toolchains.vulkan.<os>]`` -> :class:`SdkPin`."""
    t = _table(data, path, key)
    url = t.pop("url", None)
    if (problem := url_problem(url)) is not None:
        raise _fail(path, f"{key}.url", problem, url)
    sha = _sha(t.pop("sha256", None), path, f"{key}.sha256")
    version = _string(t, path, key, "version", _VERSION, "a version such as '1.4.328.1'")
    root = t.pop("root", "")
    if not isinstance(root, str) or (root and not is_plain_relative_path(root)):
        raise _fail(path, f"{key}.root", "a relative folder such as 'x86_64'", root)
    _unknown(t, path, key)
    return SdkPin(url=url, sha256=sha, version=version, root=root)


def parse_toolchain_pins(data: Any, path: Path) -> ToolchainPins:
    """The whole ``[toolchains]`` table (``{}`` when absent)."""
    t = _table(data if data is not None else {}, path, "toolchains")
    cuda = parse_cuda_pins(t.pop("cuda"), path) if "cuda" in t else None
    lines: dict[str, CudaPins] = {}
    for name in [n for n in t if _CUDA_LINE.match(n)]:
        line = name.removeprefix("cuda-")
        lines[line] = parse_cuda_pins(t.pop(name), path, f"toolchains.{name}", wheels_required=False)
        if not lines[line].version.startswith(f"{line}."):
            raise _fail(path, f"toolchains.{name}.version", f"a CUDA {line}.x version", lines[line].version)
    vulkan: dict[str, SdkPin] = {}
    if "vulkan" in t:
        v = _table(t.pop("vulkan"), path, "toolchains.vulkan")
        for os_name in SDK_OSES:
            if os_name in v:
                vulkan[os_name] = parse_sdk_pin(v.pop(os_name), path, f"toolchains.vulkan.{os_name}")
        _unknown(v, path, "toolchains.vulkan")
    _unknown(t, path, "toolchains")
    return ToolchainPins(cuda=cuda, vulkan=vulkan, cuda_lines=lines)
