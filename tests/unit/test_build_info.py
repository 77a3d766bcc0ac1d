"""What the programs report as llama.cpp's build and commit: the run's tag and commit."""

from __future__ import annotations

import pytest

from pipeline.source.build_info import build_info_args

SHA = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


@pytest.mark.parametrize(
    ("tag", "commit", "expected"),
    [
        # Upstream names release b<N> after its build number N (llama.cpp's release.yml: b${BUILD_NUMBER}).
        ("b6500", SHA, ["-DLLAMA_BUILD_NUMBER=6500", "-DLLAMA_BUILD_COMMIT=0c1e570"]),
        # A mix builds on its base tag; the commit is the merge commit that was built.
        ("b7000-mix-3302286", "f" * 40, ["-DLLAMA_BUILD_NUMBER=7000", "-DLLAMA_BUILD_COMMIT=fffffff"]),
        # A --source folder's own name: no number is invented, the commit is still known.
        ("g0c1e570-dirty", SHA, ["-DLLAMA_BUILD_COMMIT=0c1e570"]),
        ("local", None, []),
        ("b12", "not-a-sha", ["-DLLAMA_BUILD_NUMBER=12"]),
    ],
)
def test_build_number_and_commit_come_from_the_tag_and_commit(
    tag: str, commit: str | None, expected: list[str]
) -> None:
    assert build_info_args(tag, commit) == expected
