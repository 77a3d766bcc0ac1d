"""Running a bundle built for another architecture: Linux arm64 under ``qemu-aarch64`` on x86-64.

Debian's ``qemu-user`` runs an aarch64 program on an x86-64 machine with the
cross sysroot (``-L /usr/aarch64-linux-gnu``: its loader, glibc and
libstdc++), so an arm64 bundle cross-built here gets the same smoke run as a
native one. macOS and Windows bundles cannot run on Linux at all: their smoke
run is skipped, saying why.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.util.this_machine import host_arch as host_arch

# (os, arch) -> (qemu-user program, the sysroot it loads libraries from), for a Linux host.
QEMU: dict[tuple[str, str], tuple[str, str]] = {
    ("linux", "arm64"): ("qemu-aarch64", "/usr/aarch64-linux-gnu"),
}


@dataclass(frozen=True, kw_only=True)
class HowToRun:
    """How a bundle's programs are started here: directly, under an emulator, or not at all (``skipped``)."""

    prefix: tuple[str, ...] = ()
    skipped: str | None = None
    # What the record says, e.g. "under qemu-aarch64 -L /usr/aarch64-linux-gnu".
    note: str | None = None


def how_to_run(
    os_name: str,
    arch: str,
    *,
    host_os: str,
    host: str,
    which: Callable[[str], str | None] = shutil.which,
    is_dir: Callable[[str], bool] = lambda p: Path(p).is_dir(),
) -> HowToRun:
    """How the smoke run starts a bundle for ``os_name``/``arch`` on a ``host_os``/``host`` machine."""
    if os_name != host_os:
        return HowToRun(skipped=f"a {os_name} bundle on a {host_os} machine")
    if arch == host:
        return HowToRun()
    emulator = QEMU.get((os_name, arch)) if host_os == "linux" else None
    if emulator is None:
        return HowToRun(skipped=f"a {os_name}/{arch} bundle on a {host_os}/{host} machine")
    program, sysroot = emulator
    found = which(program)
    if found is None:
        return HowToRun(skipped=f"a {arch} bundle on an {host} machine without {program} (Debian: qemu-user)")
    if not is_dir(sysroot):
        return HowToRun(skipped=f"a {arch} bundle on an {host} machine without the cross sysroot {sysroot}")
    return HowToRun(prefix=(found, "-L", sysroot), note=f"under {program} -L {sysroot}")
