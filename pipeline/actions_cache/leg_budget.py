"""The cache budget per leg (pure): what ccache each leg can keep within the repository's Actions caches.

GitHub keeps ``[github] cache_limit_bytes`` (10 GiB by default) of caches per
repository and evicts the least recently used past it. Every leg keeps
``[github] keep`` generations of its ccache (the pruner deletes older ones),
so a leg's share is the limit, below the warning fraction, divided over
``legs x keep`` caches, plus one for each leg the Saturday warm-up compiles
(its warmed generation is kept until the next week's first night used it:
pipeline/actions_cache/prune.py) and one for each leg with shards (its shard
set, kept until the leg saved what it merged). A share smaller than a warm build's cache (``[ccache]
warm_size``: the cpu leg's, measured) cannot stay warm: the leg restores a
cache that misses, and the nightly pays cold builds. Then the budget is too
small for the matrix: raise the limit (a paid plan) or move the legs to the
shared remote cache (``[ccache] remote``), where one copy serves every run.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.actions_cache.budget import parse_size
from pipeline.inputs.matrix import Matrix
from pipeline.rocm.policy import WINDOWED_POLICIES
from pipeline.util.byte_sizes import human_bytes


@dataclass(frozen=True, kw_only=True)
class LegShare:
    leg: str
    # The ccache one generation of this leg can have.
    share_bytes: int
    # What a warm build needs (one generation).
    warm_bytes: int
    # How many generations it keeps at most: [github] keep, plus a warm-up's, plus a shard set.
    generations: int = 1

    @property
    def fits(self) -> bool:
        return self.share_bytes >= self.warm_bytes


@dataclass(frozen=True, kw_only=True)
class LegBudget:
    limit_bytes: int
    warn_fraction: float
    keep: int
    max_size_bytes: int
    warm_bytes: int
    shares: tuple[LegShare, ...]
    # The legs with shards: one shard set each, counted as one generation more.
    shard_sets: int = 0

    @property
    def usable_bytes(self) -> int:
        return int(self.limit_bytes * self.warn_fraction)

    @property
    def needed_bytes(self) -> int:
        """What every leg's generations take when each is a warm build's size."""
        return sum(s.generations for s in self.shares) * self.warm_bytes

    @property
    def caches(self) -> int:
        """Every leg's generations: the caches the budget is shared over."""
        return sum(s.generations for s in self.shares)

    def warnings(self) -> list[str]:
        out = []
        short = [s for s in self.shares if not s.fits]
        if short:
            share = short[0].share_bytes
            out.append(
                f"{len(short)} of {len(self.shares)} legs get {human_bytes(share)} of ccache each within "
                f"{human_bytes(self.usable_bytes)} ({self.warn_fraction:.0%} of cache_limit_bytes "
                f"{human_bytes(self.limit_bytes)}, {self.keep} generations per leg): a warm build needs "
                f"{human_bytes(self.warm_bytes)}; {len(self.shares)} legs need "
                f"{human_bytes(self.needed_bytes / self.warn_fraction)} of Actions cache, "
                "or the shared remote cache ([ccache] remote)"
            )
        grows_to = self.caches * self.max_size_bytes
        if grows_to > self.limit_bytes:
            fit = min(s.share_bytes for s in self.shares) if self.shares else 0
            out.append(
                f"[ccache] max_size {human_bytes(self.max_size_bytes)} lets {len(self.shares)} legs' {self.caches} "
                f"generations grow to {human_bytes(grows_to)}, past cache_limit_bytes {human_bytes(self.limit_bytes)}: "
                f"GitHub evicts the least recently used; a max_size of {human_bytes(fit)} stays within it"
            )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "limit_bytes": self.limit_bytes,
            "usable_bytes": self.usable_bytes,
            "keep": self.keep,
            "shard_sets": self.shard_sets,
            "warm_bytes": self.warm_bytes,
            "needed_bytes": self.needed_bytes,
            "legs": [
                {
                    "leg": s.leg,
                    "share_bytes": s.share_bytes,
                    "warm_bytes": s.warm_bytes,
                    "generations": s.generations,
                    "fits": s.fits,
                }
                for s in self.shares
            ],
            "warnings": self.warnings(),
        }


def plan_leg_budget(
    legs: Sequence[str],
    *,
    limit_bytes: int,
    warn_fraction: float,
    keep: int,
    max_size_bytes: int,
    warm_bytes: int,
    warmed: Collection[str] = (),
    shards: Mapping[str, int] | None = None,
) -> LegBudget:
    """An equal share of the usable budget for each leg's ``keep`` generations, one more for each ``warmed``
    leg and one for the shard set of each leg with shards (``shards``: leg -> its ``shards``; 1 is none): no
    leg's cache is worth less."""
    sharded = {leg for leg in legs if (shards or {}).get(leg, 1) > 1}
    generations = {leg: keep + (leg in warmed) + (leg in sharded) for leg in legs}
    caches = max(1, sum(generations.values()))
    share = int(limit_bytes * warn_fraction) // caches
    shares = tuple(
        LegShare(
            leg=leg,
            share_bytes=min(share, max_size_bytes),
            warm_bytes=warm_bytes,
            generations=generations[leg],
        )
        for leg in legs
    )
    return LegBudget(
        limit_bytes=limit_bytes,
        warn_fraction=warn_fraction,
        keep=keep,
        max_size_bytes=max_size_bytes,
        warm_bytes=warm_bytes,
        shares=shares,
        shard_sets=len(sharded),
    )


def matrix_leg_budget(matrix: Matrix) -> LegBudget:
    """:func:`plan_leg_budget` for matrix.toml's legs, ``[github]`` limit and ``[ccache]`` sizes.

    Every declared leg gets its share, a disabled one too: it is planned, so enabling it later
    does not shrink the others' caches past what they hold.
    """
    return plan_leg_budget(
        list(matrix.all_legs),
        limit_bytes=matrix.github.cache_limit_bytes,
        warn_fraction=matrix.github.cache_warn_fraction,
        keep=matrix.github.keep,
        max_size_bytes=parse_size(matrix.ccache.max_size),
        warm_bytes=parse_size(matrix.ccache.warm_size),
        warmed=warmed_legs(matrix),
        shards={name: leg.shards for name, leg in matrix.all_legs.items()},
    )


def warmed_legs(matrix: Matrix) -> list[str]:
    """The legs the Saturday warm-up compiles: every ROCm leg, when [rocm] warm_up is on and the policy has
    weekly windows (pipeline/commands/warm_up.py)."""
    if not matrix.rocm.warm_up or matrix.rocm.policy not in WINDOWED_POLICIES:
        return []
    return [name for name, leg in matrix.all_legs.items() if leg.needs_resolution]
