"""What every backend provides (:class:`Backend`) and the data its bundle needs (pure).

A backend is one module of :mod:`pipeline.backends`, in the spirit of
cibuildwheel's ``platforms/``: how its toolchain is prepared, what identity
its ccache is keyed on, where its toolchain keeps the runtime a bundle
carries, and the word its bundles are named with. What differs between
Linux and Windows stays inside that module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.toolchain.compiler_set import Toolchain, ToolchainRequest


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
    """A library a runtime library loads with ``dlopen`` rather than through DT_NEEDED.

    The bundle must carry it all the same: Debian's libamdhip64 opens libamd_comgr (HIP's code-object
    compiler) at run time, and without it no kernel loads on a GPU. The name is read from the owner's
    own bytes (``pattern``, a regular expression over them), so the soname the library asks for is
    the one copied.
    """

    # A library whose file name starts with this opens it.
    owner: str
    pattern: str


@dataclass(frozen=True, kw_only=True)
class RuntimeProfile:
    """Where one backend's toolchain keeps its runtime, on one OS."""

    # Folders under the toolchain root searched for a needed library, in order.
    library_dirs: tuple[str, ...] = ()
    data_folders: tuple[DataFolder, ...] = ()
    opened: tuple[OpenedLibrary, ...] = ()


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
