"""What a path written by someone else may look like before it is joined to a folder of ours (pipeline/names.py).

One rule each, shared by the archives' member names and links, an SDK pin's root and a CUDA redistributable
manifest's relative paths.
"""

from __future__ import annotations

import pytest

from pipeline.names import is_absolute_name, is_plain_relative_path, member_name_problem


@pytest.mark.parametrize(
    "name", ["/etc/passwd", "\\\\server\\share", "\\windows", "C:\\Windows", "c:relative", "Z:/x"]
)
def test_absolute_on_any_os(name: str) -> None:
    assert is_absolute_name(name)
    assert member_name_problem(name) == "absolute path"


@pytest.mark.parametrize("name", ["lib/libcuda.so", "./bin/clang", "C", "ab:c", "..", "dir\\file"])
def test_not_absolute(name: str) -> None:
    # "ab:c" is no drive (one letter only); '..' is another rule's (member_name_problem's), not this one.
    assert not is_absolute_name(name)


@pytest.mark.parametrize(
    "text", ["x86_64", "cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-13.2.78-archive.tar.xz", "a.b/c-d_e"]
)
def test_plain_relative_paths(text: str) -> None:
    assert is_plain_relative_path(text)


@pytest.mark.parametrize("text", ["", "/abs", "a/../b", "..", "a//b", "a/", "a b", "a\\b", "C:x", None, 3])
def test_not_plain_relative_paths(text: object) -> None:
    assert not is_plain_relative_path(text)
