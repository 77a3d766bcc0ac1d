"""What a matrix.toml value must look like: one check per kind, each the text an error says was expected, or None (pure)."""

from __future__ import annotations

import re

from pipeline.names import (
    COMMIT_SHA,
    GITHUB_REPO,
    GPU_TARGET,
    UPSTREAM_TAG,
    is_family,
    policy_problem,
    url_problem,
)
from pipeline.util.byte_sizes import MAX_SIZE_TEXT, parse_size

# "toolchain": a string: check for toolchains installed from a verified archive (pipeline.ccache.compiler_check).


def nonempty(v: str) -> str | None:
    return None if v.strip() else "a non-empty string"


def policy_check(v: str) -> str | None:
    # The one rule of a policy (names.policy_problem): the flag and the variable are checked by it too.
    return policy_problem(v)


def url_check(v: str) -> str | None:
    return url_problem(v)


def wheel_index_check(v: str) -> str | None:
    # The "{family}" and "{stream}" placeholders are filled per leg; the URL rule applies to what they become.
    return url_problem(v.replace("{family}", "gfx110X-all").replace("{stream}", "nightly"))


def remote_check(v: str) -> str | None:
    # ccache 4.14 fails every call on a scheme it cannot handle: accept only what it can.
    return None if re.match(r"^(redis|http)://", v) else "a redis:// or http:// URL"


def size_check(v: str) -> str | None:
    # ccache's notation, and a size the budgets can hold (a string of 400 digits overflows a float).
    try:
        parse_size(v)
    except ValueError:
        return f"a size like '5G' or '500M', at most {MAX_SIZE_TEXT}"
    return None


def macos_version_check(v: str) -> str | None:
    return None if re.match(r"^\d+\.\d+$", v) else "a macOS version like '13.3'"


def cuda_line_check(v: str) -> str | None:
    # A major line ("12": [toolchains.cuda-12]) or a release pinned for some legs ("13.4").
    return None if re.fullmatch(r"\d+(?:\.\d+)?", v) else "a CUDA line such as '12' or '13.4'"


def cmake_target_check(v: str) -> str | None:
    return None if re.fullmatch(r"[A-Za-z0-9_.+-]+", v) else "a CMake target name such as 'ggml-cuda'"


def cuda_arch_check(v: str) -> str | None:
    return (
        None
        if re.fullmatch(r"\d+[af]?(?:-(?:real|virtual))?", v)
        else "a CUDA architecture like '86' or '50-virtual'"
    )


def tag_check(v: str) -> str | None:
    return None if UPSTREAM_TAG.match(v) else "'latest' or a tag like 'b10327'"


def repo_check(v: str) -> str | None:
    return None if GITHUB_REPO.match(v) else "'owner/name'"


def sha_check(v: str) -> str | None:
    return None if COMMIT_SHA.match(v) else "a full commit SHA (40 lowercase hex digits)"


def family_check(v: str) -> str | None:
    return None if is_family(v) else "a TheRock family like 'gfx110X-all'"


def target_check(v: str) -> str | None:
    return None if GPU_TARGET.match(v) else "a GPU target like 'gfx1100'"
