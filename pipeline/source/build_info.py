"""The build number and commit llama.cpp's programs report, from the run's tag and commit: pure.

llama.cpp's ``cmake/build-info.cmake`` asks git in the source folder
(``git rev-list --count HEAD``, ``git rev-parse --short HEAD``). A source
archive has no git metadata: unpacked inside the pipeline's own checkout, git
answers for the pipeline's repository (``build 151, commit 2b9a7e7`` of the
wrong project); anywhere else, ``build 0, commit unknown``. A shallow clone
counts one commit. Its top-level ``CMakeLists.txt`` takes
``LLAMA_BUILD_NUMBER`` and ``LLAMA_BUILD_COMMIT`` when they are defined
(``if (NOT DEFINED LLAMA_BUILD_NUMBER)``), so the pipeline defines them from
what it resolved: tag ``b<N>`` (with or without a mix suffix) is build N,
as upstream names its release tags, and the commit is the built commit's
short SHA (the mix's merge commit when there is a mix).
"""

from __future__ import annotations

import re

from pipeline.names import COMMIT_SHA

# A run's tag: b<N>, or b<N>-mix-<hash> (names.RUN_TAG), with N captured.
_NUMBERED_TAG = re.compile(r"^b(\d+)(?:-mix-[0-9a-f]{7,40})?$")
# `git rev-parse --short`'s usual length, as llama.cpp's own releases print it.
SHORT_SHA = 7


def build_number(tag: str) -> int | None:
    """The build number a run tag names (``b7000``, ``b7000-mix-<hash>``: 7000); None for any other tag."""
    match = _NUMBERED_TAG.fullmatch(tag)
    return int(match.group(1)) if match else None


def build_info_args(tag: str, commit: str | None) -> list[str]:
    """``-DLLAMA_BUILD_NUMBER=N`` when ``tag`` is a run tag, ``-DLLAMA_BUILD_COMMIT=<sha[:7]>`` when the commit is known.

    Nothing for what is unknown (a ``--source`` folder's own tag, a tree
    without a commit): llama.cpp's own answer is kept there.
    """
    args = []
    if (number := build_number(tag)) is not None:
        args.append(f"-DLLAMA_BUILD_NUMBER={number}")
    if commit and COMMIT_SHA.fullmatch(commit):
        args.append(f"-DLLAMA_BUILD_COMMIT={commit[:SHORT_SHA]}")
    return args
