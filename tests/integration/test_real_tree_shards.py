"""The proof of the shards on the real llama.cpp tree: the reduced cpu leg with ``shards = 2``.

The shipped cpu leg's flags plus the one CI reduction (scripts/workload/reduction.py; the leg takes
``shards = 2``, a key the shipped matrix sets on the CUDA and ROCm legs, which changes how its cold cache
is made and nothing it builds). ``python -m scripts.bench.shards`` does the work (:func:`measure`): the
leg built cold and unsharded, then its two shards, then the leg again from the merged shard caches. Here:

- the two shards' compile steps are disjoint and together are the leg's, by Ninja's own plan (the targets
  whose rule is a compiler's) and Ninja's own logs (what each shard compiled);
- after the merge the leg's build hits every compile;
- the critical path (the slowest shard plus the warm build, by Ninja's logs) is printed beside the
  unsharded cold build: the figures docs/caches.md keeps.

Three builds of the reduced leg, two of them halves: in ``nox -s e2e`` (marker ``long``), past the suite's
budget on 2 cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.bench.shards import measure

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.long, pytest.mark.leg("cpu")]

READS_THE_SDIST = True


def test_two_shards_cover_the_leg_disjointly_and_the_merged_cache_hits_every_compile(tmp_path: Path) -> None:
    bench = measure(tmp_path, shards=2)
    print("\n" + "\n".join(bench.lines()) + "\n" + json.dumps(bench.to_json()), flush=True)
    first, second = (part.compiled for part in bench.parts)
    assert bench.leg_steps and bench.cold.compiled == bench.leg_steps
    assert not first & second, sorted(first & second)[:5]
    assert first | second == bench.leg_steps, sorted(bench.leg_steps - (first | second))[:5]
    for part in bench.parts:
        shard = part.record["ccache"]["shard"]
        assert part.record["status"] == "sharded"
        assert shard["leg_steps"] == len(bench.leg_steps) and shard["steps"] == len(part.compiled)
        assert part.record["ccache"]["misses"] == len(part.compiled) and part.record["ccache"]["hits"] == 0
    assert bench.warm is not None
    warm = bench.warm.record["ccache"]
    assert (warm["hits"], warm["misses"], warm["hit_rate"]) == (len(bench.leg_steps), 0, 1.0)
    assert warm["shards_merged"]["shards"] == ["1of2", "2of2"] and warm["shards_merged"]["already_there"] == 0
    assert bench.warm.compiled == bench.leg_steps  # every compile ran, through ccache, as hits
    # Each shard did about half of the cold build's compile work (the split's estimate, not a measurement).
    assert all(0.25 <= share <= 0.75 for share in bench.cold_work_share()), bench.cold_work_share()
