"""Libraries planted in a user's working folder, to show whether a program loads them.

Each is a real shared library built with gcc under the name of a library a
program needs (``libm.so.6``...). Once loaded it says so on stderr and ends
the process with :data:`PLANTED_EXIT` from its constructor, before ``main``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

PLANTED_EXIT = 66
PLANTED_MESSAGE = "planted library loaded from the working folder"

_SOURCE = f"""\
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {{
    static const char msg[] = "{PLANTED_MESSAGE}\\n";
    write(2, msg, sizeof msg - 1);
    _exit({PLANTED_EXIT});
}}
double sqrt(double x) {{ return -x; }}
"""


def plant_libraries(folder: Path, names: tuple[str, ...]) -> Path:
    """Build one planted library per name into ``folder`` (made if missing); ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder.parent / f".{folder.name}-planted.c"
    source.write_text(_SOURCE)
    for name in names:
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / name), str(source)], check=True)
    source.unlink()
    return folder
