"""Where things sit in a CUDA toolkit installed from NVIDIA's wheels (pure).

The 13.x wheels all unpack into one ``nvidia/cu13/`` tree (``bin/nvcc``,
``include/``, ``lib/``, ``nvvm/``). The libraries come only with their
versioned names (``libcudart.so.13``); CMake's FindCUDAToolkit looks for the
unversioned ``libcudart.so``, so the installer adds those links.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# The libraries llama.cpp's CUDA backend links: FindCUDAToolkit looks each up by its unversioned name.
UNVERSIONED_LIBS = ("cudart", "cublas", "cublasLt", "nvrtc")


def wheel_tree(version: str) -> str:
    """The folder the wheels of CUDA ``version`` share, relative to the install: ``nvidia/cu13``."""
    major = version.split(".", 1)[0]
    if not major.isdigit():
        raise ValueError(f"not a CUDA version: {version!r}")
    return f"nvidia/cu{major}"


def install_folder(version: str, os_name: str) -> str:
    """The toolchain-cache folder of one pinned toolkit: ``cuda-13.2.86-linux``."""
    return f"cuda-{version}-{os_name}"


def unversioned_links(file_names: Iterable[str], libs: Iterable[str] = UNVERSIONED_LIBS) -> dict[str, str]:
    """``{"libcudart.so": "libcudart.so.13", ...}`` for the ``libs`` found in ``file_names``.

    The link points at the shortest versioned name (the soname, ``.so.13``,
    rather than ``.so.13.2.86``). A library absent from ``file_names`` is
    absent from the answer; an unversioned name that already exists needs no link.
    """
    names = set(file_names)
    links: dict[str, str] = {}
    for lib in libs:
        plain = f"lib{lib}.so"
        if plain in names:
            continue
        pattern = re.compile(rf"^{re.escape(plain)}\.\d+(?:\.\d+)*$")
        versioned = sorted((n for n in names if pattern.match(n)), key=lambda n: (n.count("."), n))
        if versioned:
            links[plain] = versioned[0]
    return links
