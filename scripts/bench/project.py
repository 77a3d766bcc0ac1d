"""The benchmark's generated C++ project: ``units`` translation units of template work, a static library and
a program, and the one-leg matrix.toml it builds with (``python -m scripts.bench``; the warm-overhead test
builds it too)."""

from __future__ import annotations

import textwrap
from pathlib import Path


def _unit_source(i: int) -> str:
    """One translation unit: standard headers plus recursive templates, a sort and folds.

    About 0.75 s of g++ -O3 CPU time each on a 2-core EPYC VM: heavy enough for
    ccache to matter, light enough that 300 of them build cold in minutes.
    """
    depth = 16 + i % 8
    seq = 48 + i % 32
    return textwrap.dedent(
        f"""\
        #include "bench.h"
        #include <algorithm>
        #include <array>
        #include <numeric>
        #include <tuple>
        #include <utility>
        #include <vector>

        namespace u{i} {{
        template <int N> struct Fib {{ static constexpr long value = Fib<N - 1>::value + Fib<N - 2>::value; }};
        template <> struct Fib<1> {{ static constexpr long value = 1; }};
        template <> struct Fib<0> {{ static constexpr long value = 0; }};

        template <typename T, int D> struct Tower {{
            static T go(T x) {{ return Tower<T, D - 1>::go(x) * 3 + D; }}
        }};
        template <typename T> struct Tower<T, 0> {{ static T go(T x) {{ return x; }} }};

        template <std::size_t... I> constexpr long sum_seq(std::index_sequence<I...>) {{
            return (0L + ... + static_cast<long>(I * I));
        }}

        template <typename... Ts> long fold_sizes(const std::tuple<Ts...>& t) {{
            return std::apply([](const auto&... xs) {{ return (0L + ... + static_cast<long>(sizeof(xs))); }}, t);
        }}

        struct Rec {{ int id; double score; }};

        long work(int n) {{
            std::vector<Rec> recs;
            for (int i = 0; i < n; ++i) recs.push_back(Rec{{i, (i * {i + 37} % 11) * 0.5}});
            std::sort(recs.begin(), recs.end(), [](const Rec& a, const Rec& b) {{ return a.score > b.score; }});
            long total = recs.empty() ? 0 : recs.front().id;
            std::array<long, 64> xs{{}};
            std::iota(xs.begin(), xs.end(), Fib<{30 + i % 10}>::value % 97);
            total += std::accumulate(xs.begin(), xs.end(), 0L);
            total += Tower<long, {depth}>::go(n) + Tower<int, {depth // 2}>::go(n);
            total += sum_seq(std::make_index_sequence<{seq}>{{}});
            total += fold_sizes(std::make_tuple(1, 2.0, Rec{{}}, 'c', BENCH_SEED));
            return total;
        }}
        }}  // namespace u{i}

        extern "C" long unit{i}(int n) {{ return u{i}::work(n); }}
        """
    )


def write_project(root: Path, units: int, seed: int = 0) -> Path:
    """A CMake project: ``units`` translation units in a static library, and a program."""
    src = root / "src"
    src.mkdir(parents=True, exist_ok=True)
    (root / "include").mkdir(exist_ok=True)
    (root / "include" / "bench.h").write_text(f"#pragma once\n#define BENCH_SEED {seed}L\n")
    names = []
    for i in range(units):
        path = src / f"unit{i:04d}.cpp"
        path.write_text(_unit_source(i))
        names.append(f"src/{path.name}")
    decls = "\n".join(f'extern "C" long unit{i}(int);' for i in range(units))
    calls = "\n".join(f"    total += unit{i}(n);" for i in range(units))
    (src / "main.cpp").write_text(
        f"#include <cstdio>\n{decls}\nint main(int argc, char**) {{\n    int n = argc + 8;\n    long total = 0;\n"
        f'{calls}\n    std::printf("%ld\\n", total);\n    return 0;\n}}\n'
    )
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\n"
        "project(bench LANGUAGES CXX)\n"
        "set(CMAKE_CXX_STANDARD 17)\n"
        f"add_library(bench_units STATIC {' '.join(names)})\n"
        "target_include_directories(bench_units PUBLIC include)\n"
        "add_executable(bench src/main.cpp)\n"
        "target_link_libraries(bench PRIVATE bench_units)\n"
    )
    return root


MATRIX = """\
# Written by the benchmark (scripts/bench/project.py): one CPU leg, the shared flags of a release build.
[source]
repo = "https://example.invalid/bench.git"
tag = "b1"

[ccache]
compiler_check = "content"

[cmake]
args = ["-DCMAKE_BUILD_TYPE=Release"]

[legs.cpu]
backend = "cpu"
os = "linux"
"""
