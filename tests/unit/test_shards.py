"""Shards of a cold build (pure): the compile steps taken from Ninja's plan, the split, the keys and the matrix key."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.actions_cache.cache_keys import (
    SHARD_KIND,
    MalformedKeyError,
    cache_key,
    parse_key,
    restore_prefix,
    shard_cache_key,
)
from pipeline.ccache.shards import (
    COST_BASE_BYTES,
    SHARD_TARGET,
    CompileStep,
    compile_steps,
    device_targets,
    estimated_cost,
    first_word,
    ninja_path,
    shard_ninja_file,
    split_steps,
    with_sizes,
)
from pipeline.errors import ConfigError, UsageError
from pipeline.inputs.leg import MAX_SHARDS, Leg, leg_shards, shard_spec
from pipeline.inputs.matrix import load_matrix, parse_matrix

ROOT = Path(__file__).resolve().parents[2]
CCACHE = "/venv/bin/ccache"


def edge(output: str, command: str, source: str = "/src/a.c") -> dict[str, str]:
    return {"directory": "/b", "command": command, "file": source, "output": output}


def test_compile_steps_are_the_edges_ccache_launches_in_every_language() -> None:
    compdb = [
        edge("cmake_object_order_depends_target_x", "", "."),
        edge("x.dir/b.cpp.o", f"{CCACHE} /usr/bin/c++ -c /src/b.cpp -o x.dir/b.cpp.o", "/src/b.cpp"),
        edge("x.dir/a.c.o", f"{CCACHE} /usr/bin/cc -c /src/a.c", "/src/a.c"),
        edge(
            "cuda.dir/k.cu.o",
            f"{CCACHE} /opt/cuda/bin/nvcc --generate-code=arch=compute_89,code=[compute_89,sm_89] "
            "--generate-code=arch=compute_90,code=[compute_90,sm_90] -c /src/k.cu",
            "/src/k.cu",
        ),
        edge(
            "hip.dir/m.cu.o",
            f"{CCACHE} /rocm/clang++ -x hip --offload-arch=gfx1100 -c /src/m.cu",
            "/src/m.cu",
        ),
        # Not launched through ccache: a link, a code generator, a compile CMake runs bare.
        edge("libx.so", ": && /usr/bin/c++ -shared -o libx.so x.dir/a.c.o"),
        edge("gen.h", "/usr/bin/cmake -E copy in.h gen.h"),
        edge("y.dir/c.c.o", "/usr/bin/cc -c /src/c.c", "/src/c.c"),
        # Another ccache is another launcher: not the leg's cache.
        edge("z.dir/d.c.o", "/usr/bin/ccache /usr/bin/cc -c /src/d.c", "/src/d.c"),
    ]
    steps = compile_steps(compdb, CCACHE)
    assert [s.output for s in steps] == ["cuda.dir/k.cu.o", "hip.dir/m.cu.o", "x.dir/a.c.o", "x.dir/b.cpp.o"]
    assert [s.device_targets for s in steps] == [2, 1, 0, 0]


def test_a_windows_plan_names_the_launcher_quoted_with_either_slash_and_any_case() -> None:
    launcher = r"C:\venv\Scripts\ccache.exe"
    compdb = [
        edge("a.obj", r'"C:/Venv/Scripts/ccache.exe" C:\clang\clang-cl.exe /c a.c'),
        edge("b.obj", r"C:\venv\Scripts\ccache.exe C:\clang\clang-cl.exe /c b.c"),
    ]
    assert [s.output for s in compile_steps(compdb, launcher, windows=True)] == ["a.obj", "b.obj"]
    assert compile_steps(compdb, launcher, windows=False) == [CompileStep(output="b.obj", source="/src/a.c")]
    assert first_word('  "C:/a b/ccache.exe" x') == "C:/a b/ccache.exe" and first_word("") == ""


def test_a_plan_that_is_not_ninjas_or_compiles_an_object_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="JSON list"):
        compile_steps({"edges": []}, CCACHE)
    with pytest.raises(ValueError, match="lacks"):
        compile_steps([{"command": f"{CCACHE} cc"}], CCACHE)
    with pytest.raises(ValueError, match="twice"):
        compile_steps([edge("a.o", f"{CCACHE} cc -c a.c"), edge("a.o", f"{CCACHE} cc -c a.c")], CCACHE)


def test_device_targets_count_each_gpu_target_once() -> None:
    assert device_targets("c++ -c a.cpp", "a.cpp") == 0
    assert device_targets("nvcc -c a.cu", "a.cu") == 1
    assert (
        device_targets("nvcc -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80", "a.cu")
        == 2
    )
    hip = "clang++ -x hip --offload-arch=gfx1100 --offload-arch=gfx1101 --offload-arch=gfx1102 -c a.cu"
    assert device_targets(hip, "a.cu") == 3
    assert device_targets("clang++ -x hip --offload-arch=gfx1100 -c a.cpp", "a.cpp") == 1


def test_the_estimate_is_a_pass_per_target_over_the_source_and_a_fixed_part() -> None:
    host = CompileStep(output="a.o", source="a.c", source_bytes=1000)
    device = CompileStep(output="k.o", source="k.cu", device_targets=7, source_bytes=1000)
    assert estimated_cost(host) == COST_BASE_BYTES + 1000
    assert estimated_cost(device) == 8 * estimated_cost(host)
    sized = with_sizes([host, device], {"a.c": 5, "k.cu": -1})
    assert [s.source_bytes for s in sized] == [5, 0]


def _steps(costs: list[int], devices: list[int] | None = None) -> list[CompileStep]:
    devices = devices or [0] * len(costs)
    return [
        CompileStep(output=f"obj/u{i:04d}.o", source=f"u{i}.c", source_bytes=c, device_targets=d)
        for i, (c, d) in enumerate(zip(costs, devices, strict=True))
    ]


@given(
    st.lists(st.integers(min_value=0, max_value=400_000), min_size=0, max_size=120),
    st.integers(min_value=1, max_value=MAX_SHARDS + 2),
    st.randoms(use_true_random=False),
)
def test_the_parts_are_disjoint_cover_every_step_and_do_not_depend_on_the_listing_order(
    costs: list[int], count: int, shuffle: random.Random
) -> None:
    steps = _steps(costs)
    parts = split_steps(steps, count)
    assert len(parts) == count
    outputs = [s.output for part in parts for s in part]
    assert len(outputs) == len(set(outputs)) and set(outputs) == {s.output for s in steps}
    assert all(list(part) == sorted(part, key=lambda s: s.output) for part in parts)
    listed = list(steps)
    shuffle.shuffle(listed)
    assert split_steps(listed, count) == parts
    # Greedy onto the least loaded part: the largest part passes an even share by less than one step.
    if steps:
        loads = [sum(map(estimated_cost, part)) for part in parts]
        assert max(loads) <= sum(loads) / count + max(map(estimated_cost, steps))
        assert max(loads) - min(loads) <= max(map(estimated_cost, steps))


def test_the_split_spreads_the_long_device_units_where_round_robin_would_not() -> None:
    # 8 device units among 40 host units, listed so that round robin gives one shard all of them.
    costs = [2_000] * 48
    devices = [8 if i % 6 == 0 else 0 for i in range(48)]
    steps = _steps(costs, devices)
    parts = split_steps(steps, 2)
    per_part = [sum(1 for s in part if s.device_targets) for part in parts]
    assert per_part == [4, 4]
    # What `awk 'NR%2==s'` over this listing would have done: every device unit in one shard.
    assert {s.output for s in steps if s.device_targets} <= {s.output for s in steps[0::2]}
    loads = [sum(map(estimated_cost, part)) for part in parts]
    assert abs(loads[0] - loads[1]) <= max(map(estimated_cost, steps))


def test_a_split_into_more_parts_than_steps_leaves_parts_empty_and_bad_counts_are_refused() -> None:
    parts = split_steps(_steps([10, 20]), 3)
    assert [len(p) for p in parts] == [1, 1, 0]
    with pytest.raises(ValueError):
        split_steps(_steps([1]), 0)
    with pytest.raises(ValueError, match="twice"):
        split_steps(_steps([1]) * 2, 2)


def test_the_shard_ninja_file_includes_the_plan_and_names_the_outputs_escaped() -> None:
    text = shard_ninja_file(["a/b.o", "dir with space/c$.o", "C:/x.obj"], label="cpu 1of2")
    assert "include build.ninja\n" in text
    assert (
        f"build {SHARD_TARGET}: phony $\n    a/b.o $\n    dir$ with$ space/c$$.o $\n    C$:/x.obj\n" in text
    )
    assert shard_ninja_file([], label="cpu 2of2").splitlines()[2] == f"build {SHARD_TARGET}: phony"
    assert ninja_path("a:b c$") == "a$:b$ c$$"
    with pytest.raises(ValueError):
        ninja_path("a\nb")


def test_shard_keys_parse_back_and_are_never_under_the_legs_restore_prefix() -> None:
    key = shard_cache_key("cuda", "cuda-13.2.86", "b10327-mix-1a2b3c4", 2, 3)
    assert key == "llama-shard--cuda--cuda-13.2.86--b10327-mix-1a2b3c4--2of3"
    parts = parse_key(key)
    assert parts is not None and (parts.kind, parts.leg, parts.toolchain, parts.tag, parts.shard) == (
        SHARD_KIND,
        "cuda",
        "cuda-13.2.86",
        "b10327-mix-1a2b3c4",
        "2of3",
    )
    assert not key.startswith(restore_prefix("cuda", "cuda-13.2.86"))
    # A leg ending where another begins: the ccache prefix of `cuda` never takes `cuda-13-older`'s shards either.
    assert parse_key(cache_key("cuda", "t", "b1")).shard is None  # type: ignore[union-attr]
    for bad in (
        "llama-shard--cuda--t--b1--4of3",
        "llama-shard--cuda--t--b1--0of3",
        "llama-shard--cuda--t--b1",
        "llama-shard--cuda--t--latest--1of2",
        "llama-shard--cuda----1of2",
    ):
        with pytest.raises(MalformedKeyError):
            parse_key(bad)
    with pytest.raises(UsageError):
        shard_cache_key("cuda", "t", "b1", 4, 3)


def _leg(shards: int) -> Leg:
    return Leg(name="cuda", backend="cuda", os="linux", runner="ubuntu-22.04", shards=shards)


def test_a_shard_of_a_leg_is_checked_against_its_count() -> None:
    leg = _leg(3)
    assert shard_spec(leg, 2).label == "2of3" and shard_spec(leg, 3, 3).index == 3
    assert [s.label for s in leg_shards(leg)] == ["1of3", "2of3", "3of3"]
    assert leg_shards(_leg(1)) == ()
    for index, of, message in (
        (4, None, "expected 1 to 3"),
        (0, None, "expected 1 to 3"),
        (1, 2, "has 3 shards, not 2"),
    ):
        with pytest.raises(UsageError, match=message):
            shard_spec(leg, index, of)
    with pytest.raises(UsageError, match="has no shards"):
        shard_spec(_leg(1), 1)


MINIMAL = {"legs": {"cpu": {"backend": "cpu", "shards": 2}}}


def test_matrix_shards_are_a_count_from_1_to_the_workflows_restore_steps() -> None:
    assert parse_matrix(MINIMAL, Path("m.toml")).leg("cpu").shards == 2
    assert parse_matrix({"legs": {"cpu": {"backend": "cpu"}}}, Path("m.toml")).leg("cpu").shards == 1
    for value, expected in ((MAX_SHARDS + 1, f"at most {MAX_SHARDS}"), (0, ">= 1"), ("2", "an integer")):
        with pytest.raises(ConfigError, match=expected):
            parse_matrix({"legs": {"cpu": {"backend": "cpu", "shards": value}}}, Path("m.toml"))


def test_the_shipped_matrix_shards_the_cuda_profiles_and_every_rocm_family() -> None:
    matrix = load_matrix(ROOT / "matrix.toml")
    shards = {name: leg.shards for name, leg in matrix.legs.items()}
    portable = {name for name, leg in matrix.legs.items() if leg.cuda_profile == "portable" or name == "cuda"}
    for name, leg in matrix.legs.items():
        if leg.base is not None:
            # A shard compiles every step of the leg's own configure; this leg builds one target of it on top of
            # another leg's configuration, which no shard compiles: it is not sharded (matrix.toml says so).
            assert shards[name] == 1, name
        elif leg.backend == "cuda":
            assert shards[name] == (3 if name in portable else 2), name
        elif leg.backend == "rocm":
            assert shards[name] == 2, name
        else:
            assert shards[name] == 1, name
    assert len(portable) == 4
