"""The backend table against the names matrix.toml accepts."""

from __future__ import annotations


def test_the_backend_names_are_the_backends_table() -> None:
    """names.BACKEND_NAMES (what matrix.toml accepts, stdlib only for the noxfile) and the table of backend objects
    (pipeline/backends) are one set in one order: a backend added to one and not the other fails here."""
    from pipeline.backends import BACKENDS as TABLE
    from pipeline.names import BACKEND_NAMES as NAMES

    assert tuple(TABLE) == NAMES
    assert all(obj.name == name for name, obj in TABLE.items())
    assert NAMES == ("cpu", "cuda", "metal", "rocm", "vulkan")
