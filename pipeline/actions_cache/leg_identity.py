"""A leg's cache identity in this run: its toolchain identity and the run's tag.

The I/O side of :mod:`pipeline.actions_cache.cache_keys` (which stays pure): a ROCm leg's
identity comes from its resolved build (the run's resolution's, resolved by
the caller), so every leg of a run agrees without installing anything; other
backends report theirs.
"""

from __future__ import annotations

from pipeline.actions_cache.cache_keys import check_run_tag, key_toolchain
from pipeline.errors import UsageError
from pipeline.inputs import settings as S
from pipeline.inputs.leg import Leg
from pipeline.inputs.resolution_file import ResolvedRocm
from pipeline.inputs.run_inputs import RunInputs
from pipeline.names import is_therock_identity, therock_identity
from pipeline.util.console import make_console


def toolchain_identity(inputs: RunInputs, leg: Leg, *, rocm: ResolvedRocm | None) -> str:
    """The key-safe toolchain identity of ``leg`` in this run (its backend's :meth:`cache_identity`).

    ``rocm``: a ROCm leg's resolved TheRock build (resolved by the caller), None with an installed ROCm
    (``--rocm-path``, ``PIPELINE_ROCM_PATH``), whose identity is read from the install as its builds' records
    read it: a key naming TheRock's build would be one no build of that install hits."""
    from pipeline.backends import backend_of, toolchain_request

    request = toolchain_request(inputs, leg, rocm=rocm, rocm_path=inputs.rocm_path)
    return key_toolchain(backend_of(leg).cache_identity(request, make_console(inputs.environ, stderr=True)))


def given_toolchain(leg: Leg, given: str) -> str:
    """``--toolchain``: a bare ROCm version names the same toolchain the resolution would."""
    if leg.needs_resolution and not is_therock_identity(given):
        given = therock_identity(given)
    return key_toolchain(given)


def run_tag_for_key(inputs: RunInputs) -> str:
    """The run's tag (``cache-key --tag`` aside): the resolution's, else matrix.toml's explicit tag.

    The resolution's tag carries the mix suffix that a ``PIPELINE_TAG`` base tag lacks.
    """
    matrix = inputs.require_matrix()
    if inputs.resolution is not None and inputs.resolution.source is not None:
        return check_run_tag(inputs.resolution.source.tag)
    if matrix.source.tag != "latest":
        return check_run_tag(matrix.source.tag)
    raise UsageError(
        f"no source tag for the cache key: pass --tag, or set {S.RESOLVED.env_var} to a resolution "
        f"with a source tag ({matrix.path}: source.tag is 'latest')"
    )
