"""What every backend provides (:class:`Backend`) and the data its bundle needs (pure).

A backend is one module of :mod:`pipeline.backends` (cpu, cuda, metal, rocm,
vulkan), in the spirit of cibuildwheel's ``platforms/``: how its toolchain is prepared, what identity
its ccache is keyed on, where its toolchain keeps the runtime a bundle
carries, and the word its bundles are named with. What differs between
Linux and Windows stays inside that module.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest


@dataclass(frozen=True, kw_only=True)
class DataFolder:
    """A folder of the toolchain that goes beside the libraries (``dest`` under the bundle's root, where they are)."""

    source: str
    dest: str
    # Copied only when a library of this name prefix is in the bundle (the library that reads the folder).
    owner: str
    # Keep only the files of the leg's GPU targets (and those naming no target).
    per_target: bool = True


@dataclass(frozen=True, kw_only=True)
class OpenedLibrary:
    """A library a bundle must carry although the closure's reading of imports may not name it: one a runtime
    library loads by name at run time (``dlopen``, ``LoadLibrary``), or one the toolchain does not hold.

    Debian's and TheRock's libamdhip64 open libamd_comgr (HIP's code-object compiler) at run time: without
    it no kernel loads on a GPU. The name is read from the owner's own bytes (``pattern``, a regular
    expression over them, UTF-16 strings included), so the name the library asks for is the one copied,
    and a library that asks for none needs none. ``check-bundle`` fails a bundle in which an owner asks
    for a name the bundle lacks.
    """

    # A library whose file name starts with this (any case on Windows) opens it.
    owner: str
    pattern: str
    # Where the need is shown: a repository, commit and file, or the incident it fixed.
    evidence: str
    # Copied from the build machine's own libraries when the toolchain has none (libatomic: GCC's runtime,
    # which TheRock's tarball does not carry and a clean machine may lack).
    from_system: bool = False

    def owns(self, file_name: str, *, windows: bool) -> bool:
        """Whether the bundle file ``file_name`` is this entry's owner (its name starts with ``owner``; any
        case on Windows)."""
        return (
            file_name.lower().startswith(self.owner.lower()) if windows else file_name.startswith(self.owner)
        )


def asked_names(
    owner_name: str, data: bytes, opened: Sequence[OpenedLibrary], *, windows: bool
) -> list[tuple[str, OpenedLibrary]]:
    """The libraries ``data`` (the bytes of the bundle file ``owner_name``) asks for by name, as the
    backend's :class:`~pipeline.backends.protocol.OpenedLibrary` entries declare them: (name, entry), each
    name once. A Windows DLL may hold the name as a UTF-16 string: its bytes are read without the NULs too."""
    found: dict[str, OpenedLibrary] = {}
    for entry in opened:
        if not entry.owns(owner_name, windows=windows):
            continue
        pattern = re.compile(entry.pattern.encode(), re.IGNORECASE if windows else 0)
        for text in (data, data.replace(b"\0", b"")) if windows else (data,):
            for match in pattern.finditer(text):
                found.setdefault(match.group(0).decode("ascii", "replace"), entry)
    return sorted(found.items())


@dataclass(frozen=True, kw_only=True)
class RuntimeProfile:
    """Where one backend's toolchain keeps its runtime, on one OS."""

    # Folders under the toolchain root searched for a needed library, in order.
    library_dirs: tuple[str, ...] = ()
    data_folders: tuple[DataFolder, ...] = ()
    opened: tuple[OpenedLibrary, ...] = ()
    # A bundle arch's own folders, searched instead of ``library_dirs`` (a cross toolkit keeps the target's
    # libraries apart from its compiler's: CUDA's bin/arm64 beside the x64 bin/).
    # (arch, folders) pairs: hashable, as the profile is.
    arch_library_dirs: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def dirs_for(self, arch: str) -> tuple[str, ...]:
        """The folders searched for a bundle of ``arch``."""
        return dict(self.arch_library_dirs).get(arch, self.library_dirs)


# A backend whose toolchain holds no runtime a bundle must carry (the host compiler's is the base system).
NO_RUNTIME = RuntimeProfile()


class Backend(Protocol):
    """One backend: cpu, rocm, cuda or vulkan."""

    @property
    def name(self) -> str: ...

    @property
    def downloads_toolchain(self) -> bool:
        """Whether its toolchain may be downloaded (matrix.toml pins it, or the run resolves it)."""
        ...

    def prepare(self, request: ToolchainRequest, console: Console) -> Toolchain:
        """Find (or install) the toolchain that builds ``request.leg``."""
        ...

    def cache_identity(self, request: ToolchainRequest, console: Console) -> str:
        """The identity its ccache is keyed on (not yet made key-safe), known as early as it can be."""
        ...

    def runtime(self, os_name: str) -> RuntimeProfile:
        """Where its toolchain keeps the runtime a bundle carries, on ``os_name``."""
        ...

    def bundle_variant(self, os_name: str, family: str | None) -> str:
        """The backend part of a bundle's name, with its leading '-' ('' for none)."""
        ...
