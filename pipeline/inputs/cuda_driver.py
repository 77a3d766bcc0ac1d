"""The oldest NVIDIA driver each CUDA line's runtime starts on (pure).

Source: NVIDIA's CUDA Toolkit release notes, table "CUDA Toolkit and
Corresponding Driver Versions" (and its minor-version-compatibility table):
a CUDA 12.x runtime starts on the R525 branch and newer (Linux 525.60.13,
Windows 528.33, the 12.0 GA floor, which minor-version compatibility extends
to every 12.x); a CUDA 13.x runtime needs the R580 branch (Linux 580.65.06,
the 13.0 GA floor). The bundle's manifest and the release notes say it, so a
user whose driver is older takes the 12.x bundle instead, and check-bundle
refuses a bundle whose runtime is of a newer line than its leg's (a 12.x leg
that ships ``libcudart.so.13`` would ask for R580 while its notes say R525).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class DriverFloor:
    """The oldest driver branch and builds a CUDA line's runtime starts on."""

    line: str
    branch: str
    linux: str
    # None where the table gives no single Windows build for the line (the branch is the floor).
    windows: str | None

    def text(self, os_name: str) -> str:
        """``R525 (525.60.13 or newer)``: what the manifest and the release notes say for ``os_name``."""
        build = self.windows if os_name == "windows" else self.linux
        return f"{self.branch} ({build} or newer)" if build else f"{self.branch} or newer"


DRIVER_FLOORS = {
    "12": DriverFloor(line="12", branch="R525", linux="525.60.13", windows="528.33"),
    "13": DriverFloor(line="13", branch="R580", linux="580.65.06", windows=None),
}

# The CUDA runtime a bundle ships: libcudart.so.12 (Linux), cudart64_12.dll (Windows).
_RUNTIME = re.compile(r"^(?:libcudart\.so\.(\d+)|cudart64_(\d+)\.dll)$", re.IGNORECASE)


def driver_floor(cuda_version: str) -> DriverFloor | None:
    """The floor of the line ``cuda_version`` (``12.8.93``) belongs to; None for a line not in the table."""
    return DRIVER_FLOORS.get(cuda_version.split(".", 1)[0])


def runtime_line(file_name: str) -> str | None:
    """The CUDA line of a runtime library's file name (``libcudart.so.12`` -> ``12``), else None."""
    match = _RUNTIME.match(file_name)
    if match is None:
        return None
    return match.group(1) or match.group(2)
