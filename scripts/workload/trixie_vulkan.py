"""A Vulkan SDK-shaped folder from Debian 13 (trixie)'s headers and loader, kept in the test cache.

The real tree needs Vulkan headers with ``VK_EXT_layer_settings`` (1.3.272
or newer); this machine's Debian 12 has 1.3.239. Trixie's ``libvulkan-dev``
and ``libvulkan1`` (1.4.309) need no install: ``apt-get download`` fetches the
two ``.deb`` files and ``dpkg-deb -x`` unpacks them. apt reads a source list
and a state folder of this module's own (never the machine's sources), with
the mirror this machine's apt already uses, read from ``/etc/apt`` at run
time. The folder it makes is what ``--vulkan-sdk`` takes: ``include/vulkan``,
``lib/libvulkan.so*`` and ``bin/glslc`` (a copy of this machine's glslc).

Where the files cannot be had, :func:`trixie_vulkan_sdk` raises
:class:`SdkUnavailable` with the reason, and the test fails with it. The
tests and the GPU check (scripts/gpu_check/prepare.py, which carries it to
the lent machine) both take it from here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from scripts.workload.llama_sdist import e2e_cache_root

VERSION = "1.4.309"
PACKAGES = ("libvulkan-dev/trixie", "libvulkan1/trixie")
SUITE = "trixie"
APT_SOURCES = Path("/etc/apt")
MULTIARCH = "x86_64-linux-gnu"
# apt's Release files for the older suites are past their validity date; the packages are still signed.
APT_OPTIONS = ("-o", "Acquire::Check-Valid-Until=false")


class SdkUnavailable(Exception):
    """The trixie SDK could not be made here; the message says which step and why."""


def debian_mirror(apt_dir: Path = APT_SOURCES) -> str:
    """The Debian archive this machine's apt reads (not its security archive), from its own source files."""
    uris: list[str] = []
    for path in sorted((apt_dir / "sources.list.d").glob("*.sources")):
        text = path.read_text(encoding="utf-8", errors="replace")
        uris += re.findall(r"(?m)^URIs:\s*(\S+)", text)
    for path in [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*.list"))]:
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            uris += re.findall(r"(?m)^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+", text)
    for uri in uris:
        if uri.rstrip("/").endswith("/debian"):
            return uri.rstrip("/")
    raise SdkUnavailable(f"no Debian archive (a URI ending in /debian) in {apt_dir}'s sources: {uris}")


def _apt(args: list[str], *, state: Path, cwd: Path) -> None:
    cmd = ["apt-get", "-q", *APT_OPTIONS,
           "-o", f"Dir::Etc::sourcelist={state / 'sources.list'}",
           "-o", "Dir::Etc::sourceparts=-",
           "-o", f"Dir::State::Lists={state / 'lists'}",
           "-o", f"Dir::Cache={state / 'cache'}", *args]  # fmt: skip
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise SdkUnavailable(
            f"apt-get {' '.join(args)} from {SUITE} failed ({proc.returncode}): {' | '.join(tail)}"
        )


def trixie_vulkan_sdk(cache_root: Path | None = None) -> Path:
    """The SDK folder under ``cache_root`` (default: the test cache, :func:`e2e_cache_root`), made once
    (atomically) and reused."""
    root = cache_root or e2e_cache_root()
    sdk = root / f"vulkan-sdk-{SUITE}-{VERSION}"
    if (sdk / "bin" / "glslc").is_file() and (sdk / "include" / "vulkan" / "vulkan_core.h").is_file():
        return sdk
    glslc = shutil.which("glslc")
    if glslc is None:
        raise SdkUnavailable(
            "glslc is not installed on this machine (Debian: glslc): the SDK's bin/glslc is a copy of it"
        )
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise SdkUnavailable("apt-get and dpkg-deb are needed to fetch trixie's Vulkan packages")
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".vulkan-sdk-") as tmp:
        work = Path(tmp)
        state, debs, unpacked, new = work / "apt", work / "debs", work / "unpacked", work / "sdk"
        for folder in (state / "lists" / "partial", state / "cache" / "archives" / "partial", debs, unpacked):
            folder.mkdir(parents=True)
        (state / "sources.list").write_text(f"deb {debian_mirror()} {SUITE} main\n", encoding="utf-8")
        _apt(["update"], state=state, cwd=work)
        _apt(["download", *PACKAGES], state=state, cwd=debs)
        files = sorted(debs.glob("*.deb"))
        if len(files) != len(PACKAGES) or not all(f"_{VERSION}" in f.name for f in files):
            raise SdkUnavailable(
                f"apt-get download gave {[f.name for f in files]}, not {VERSION} of {PACKAGES}"
            )
        for deb in files:
            proc = subprocess.run(
                ["dpkg-deb", "-x", str(deb), str(unpacked)], capture_output=True, text=True, check=False
            )
            if proc.returncode != 0:
                raise SdkUnavailable(f"dpkg-deb -x {deb.name} failed: {proc.stderr.strip()}")
        (new / "bin").mkdir(parents=True)
        shutil.copytree(unpacked / "usr" / "include", new / "include", symlinks=True)
        shutil.copytree(unpacked / "usr" / "lib" / MULTIARCH, new / "lib", symlinks=True)
        shutil.copy2(glslc, new / "bin" / "glslc")
        if not (new / "lib" / "libvulkan.so").exists():
            raise SdkUnavailable(f"{PACKAGES} hold no usr/lib/{MULTIARCH}/libvulkan.so")
        try:
            Path(new).replace(sdk)
        except OSError:
            # Another run installed it meanwhile: its folder is as good as this one.
            if not (sdk / "bin" / "glslc").is_file():
                raise
    return sdk
