"""Where the CUDA wheels put things, and which unversioned links the installer adds."""

from __future__ import annotations

import pytest

from pipeline.cuda_layout import install_folder, unversioned_links, wheel_tree

# The lib/ folder of the 13.2 wheels as installed here (nvidia/cu13/lib).
WHEEL_LIB = [
    "libcublas.so.13", "libcublasLt.so.13", "libcudadevrt.a", "libcudart.so.13", "libcudart_static.a",
    "libnvblas.so.13", "libnvrtc-builtins.so.13.2", "libnvrtc.so.13", "libnvvm.so.4",
]  # fmt: skip


def test_links_for_the_four_libraries_llama_cpp_links() -> None:
    assert unversioned_links(WHEEL_LIB) == {
        "libcudart.so": "libcudart.so.13",
        "libcublas.so": "libcublas.so.13",
        "libcublasLt.so": "libcublasLt.so.13",
        "libnvrtc.so": "libnvrtc.so.13",
    }


def test_the_soname_wins_over_a_longer_version() -> None:
    assert unversioned_links(["libcudart.so.13.2.86", "libcudart.so.13"], ["cudart"]) == {
        "libcudart.so": "libcudart.so.13"
    }


def test_no_link_when_the_plain_name_exists_or_the_library_is_missing() -> None:
    assert unversioned_links(["libcudart.so", "libcudart.so.13"], ["cudart", "cublas"]) == {}


def test_cublas_is_not_mistaken_for_cublaslt() -> None:
    assert unversioned_links(["libcublasLt.so.13"], ["cublas"]) == {}


def test_tree_and_folder_names() -> None:
    assert wheel_tree("13.2.86") == "nvidia/cu13"
    assert wheel_tree("12.9.1") == "nvidia/cu12"
    assert install_folder("13.2.86", "linux") == "cuda-13.2.86-linux"
    with pytest.raises(ValueError):
        wheel_tree("x.y")
