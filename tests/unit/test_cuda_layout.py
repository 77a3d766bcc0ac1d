"""Where the CUDA wheels put things, and which unversioned links the installer adds."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.toolchain.cuda_layout import install_folder, unversioned_links, wheel_tree

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


def test_pip_download_line_is_exact_binary_only_and_without_dependencies() -> None:
    from pipeline.toolchain.cuda_wheels import pip_download_command

    cmd = pip_download_command("/py", "nvidia-cuda-nvcc==13.2.86", Path("/d"))
    assert cmd == ["/py", "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                   "--disable-pip-version-check", "-d", "/d", "nvidia-cuda-nvcc==13.2.86"]  # fmt: skip
    # Fetching Windows wheels from Linux (e.g. to prime a cache) names the platform.
    assert pip_download_command("/py", "x==1", Path("/d"), "win_amd64")[-3:] == [
        "--platform",
        "win_amd64",
        "x==1",
    ]


def test_links_are_made_in_the_lib_folder_and_a_missing_library_is_named(tmp_path: Path) -> None:
    from pipeline.errors import ToolchainError
    from pipeline.toolchain.cuda_wheels import link_unversioned

    for name in WHEEL_LIB:
        (tmp_path / name).write_bytes(b"")
    made = link_unversioned(tmp_path)
    assert len(made) == 4
    assert (tmp_path / "libcublasLt.so").is_symlink()
    assert str((tmp_path / "libcublasLt.so").readlink()) == "libcublasLt.so.13"
    (tmp_path / "libnvrtc.so").unlink()
    (tmp_path / "libnvrtc.so.13").unlink()
    with pytest.raises(ToolchainError, match=r"the pinned wheels hold no libnvrtc\.so\.\*"):
        link_unversioned(tmp_path)
