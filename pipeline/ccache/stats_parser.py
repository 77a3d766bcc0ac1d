"""Parse ccache's statistics (ccache 3.7 to 4.14) and summarise them.

Three inputs, all read without running ccache:

- ``ccache --print-stats``: ``<name>\\t<count>`` lines (ccache >= 3.7);
- ``ccache --print-stats --format=json``: one JSON object (ccache >= 4.10);
- the stats log (``stats_log`` / ``CCACHE_STATSLOG``, ccache >= 4.0): per
  compilation a ``# <source path>`` line, then one line per counter the
  compilation incremented by one.

Counter names and their classes follow ccache's own tables
(``src/stats.c`` in 3.7, ``Statistics.cpp`` / ``statistics.cpp`` in 4.x):
ccache itself sums the ``FLAG_UNCACHEABLE`` and ``FLAG_ERROR`` counters for
its "Uncacheable calls" and "Errors" lines. The names kept their meaning
across versions; only the storage counters changed:

- 4.4-4.7: ``primary_storage_*`` / ``secondary_storage_*``, counted per file
  read (a manifest read counts as well as a result read);
- 4.8+: ``local_storage_*`` / ``remote_storage_*``. ``remote_storage_hit``
  counts result entries served by remote storage (one per remote hit);
  the ``*_read_hit`` / ``*_read_miss`` variants count every file read.

Stdlib only; imports nothing from the rest of the pipeline.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

__all__ = [
    "ERROR_COUNTERS",
    "KNOWN_COUNTERS",
    "UNCACHEABLE_COUNTERS",
    "CcacheStatsError",
    "CcacheSummary",
    "counters_delta",
    "parse_print_stats",
    "parse_stats_log",
    "summarize",
]


class CcacheStatsError(ValueError):
    """Statistics text that is not what ccache writes; the message names the line."""


# FLAG_ERROR in ccache 4.x: the call failed in a way the user should look at.
ERROR_COUNTERS = frozenset(
    {
        "bad_input_file",  # after 4.7
        "bad_output_file",
        "compiler_check_failed",
        "could_not_find_compiler",
        "error_hashing_extra_file",
        "internal_error",
        "missing_cache_file",
        "modified_input_file",  # after 4.7
    }
)

# FLAG_UNCACHEABLE in ccache 4.x: a call ccache cannot cache by design.
UNCACHEABLE_COUNTERS = frozenset(
    {
        "autoconf_test",
        "bad_compiler_arguments",
        "called_for_link",
        "called_for_preprocessing",
        "compile_failed",
        "compiler_produced_empty_output",
        "compiler_produced_no_output",
        "compiler_produced_stdout",
        "could_not_use_modules",  # not in 3.7
        "could_not_use_precompiled_header",
        "disabled",  # after 4.7
        "multiple_source_files",
        "no_input_file",
        "output_to_stdout",
        "preprocessor_error",
        "recache",  # not in 3.7
        "unsupported_code_directive",
        "unsupported_compiler_option",
        "unsupported_environment_variable",  # not in 3.7
        "unsupported_source_encoding",  # after 4.7
        "unsupported_source_language",
    }
)

_DIRECT_HIT = "direct_cache_hit"
_PREPROCESSED_HIT = "preprocessed_cache_hit"
_MISS = "cache_miss"
# Result entries served remotely: exact in 4.8+; in 4.4-4.7 the counter also
# counts manifest reads, so it can only bound the remote hits from above.
_REMOTE_HIT_COUNTERS = ("remote_storage_hit", "secondary_storage_hit")
_REMOTE_ERROR_COUNTERS = (
    "remote_storage_error",
    "remote_storage_timeout",
    "secondary_storage_error",
    "secondary_storage_timeout",
)
# Values that describe the cache rather than count events: they may go down
# between two snapshots without the statistics having been zeroed.
_GAUGES = frozenset(
    {
        "cache_size_kibibyte",
        "files_in_cache",
        "max_cache_size_kibibyte",
        "max_files_in_cache",
        "stats_updated_timestamp",
        "stats_zeroed_timestamp",
    }
)

KNOWN_COUNTERS = (
    ERROR_COUNTERS
    | UNCACHEABLE_COUNTERS
    | _GAUGES
    | frozenset(_REMOTE_HIT_COUNTERS + _REMOTE_ERROR_COUNTERS)
    | frozenset(
        {
            _DIRECT_HIT,
            _PREPROCESSED_HIT,
            _MISS,
            "cleanups_performed",
            "direct_cache_miss",
            "preprocessed_cache_miss",
            "primary_storage_hit",
            "primary_storage_miss",
            "secondary_storage_miss",
            "local_storage_hit",
            "local_storage_miss",
            "local_storage_read_hit",
            "local_storage_read_miss",
            "local_storage_write",
            "remote_storage_miss",
            "remote_storage_read_hit",
            "remote_storage_read_miss",
            "remote_storage_write",
        }
    )
)
"""Every counter name ccache 3.7 to 4.14 prints or logs."""

_NAME = re.compile(r"[A-Za-z0-9_]+")


def _show(line: str) -> str:
    """A line as quoted in an error message: repr, cut to a readable length."""
    return repr(line if len(line) <= 60 else line[:60] + "...")


def parse_print_stats(text: str) -> dict[str, int]:
    """Counters from ``ccache --print-stats`` output, tab or JSON form (detected).

    Raises ``CcacheStatsError`` naming the offending line when the text is
    not what ccache prints.
    """
    body = text.removeprefix("\ufeff")
    if not body.strip():
        raise CcacheStatsError("ccache --print-stats output is empty")
    if body.lstrip().startswith(("{", "[")):
        return _parse_json(body)
    return _parse_tab(body)


def _parse_tab(text: str) -> dict[str, int]:
    counters: dict[str, int] = {}
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        name, tab, value = line.partition("\t")
        if not tab or not _NAME.fullmatch(name) or not value.isascii() or not value.isdigit():
            raise CcacheStatsError(
                f"ccache --print-stats line {number}: expected '<name><TAB><count>', got {_show(line)}"
            )
        if name in counters:
            raise CcacheStatsError(f"ccache --print-stats line {number}: counter {name!r} appears twice")
        counters[name] = int(value)
    return counters


def _parse_json(text: str) -> dict[str, int]:
    def line_of(name: str) -> int:
        return text.count("\n", 0, max(text.find(f'"{name}"'), 0)) + 1

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for name, value in pairs:
            if name in seen:
                raise CcacheStatsError(
                    f"ccache --print-stats JSON line {line_of(name)}: counter {name!r} appears twice"
                )
            seen[name] = value
        return seen

    try:
        data = json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as err:
        raise CcacheStatsError(f"ccache --print-stats JSON line {err.lineno}: {err.msg}") from None
    if not isinstance(data, dict):
        raise CcacheStatsError("ccache --print-stats JSON line 1: expected an object of counters")
    counters: dict[str, int] = {}
    for name, value in data.items():
        # bool is an int subclass; ccache never prints true/false.
        if not _NAME.fullmatch(name) or isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CcacheStatsError(
                f"ccache --print-stats JSON line {line_of(name)}: expected a count for {name!r}, got {value!r}"
            )
        counters[name] = value
    return counters


def parse_stats_log(text: str) -> dict[str, int]:
    """Counter totals from a ccache stats log (``stats_log`` / ``CCACHE_STATSLOG``).

    Every counter line adds one, as in ccache's own ``--show-log-stats``.
    Empty lines and CRLF endings are accepted. ccache ends every line with a
    newline, so an unterminated last line is a record still being appended
    by a concurrent compilation and is left out. Raises ``CcacheStatsError``
    naming the line for anything that is neither a ``#`` line nor a name.
    """
    lines = text.removeprefix("\ufeff").split("\n")
    lines.pop()  # "" after the final newline, or the unterminated partial line
    counts: Counter[str] = Counter()
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not _NAME.fullmatch(line):
            raise CcacheStatsError(
                f"ccache stats log line {number}: expected a counter name or '# <source>', got {_show(raw)}"
            )
        counts[line] += 1
    return dict(counts)


def counters_delta(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """What happened between two ``--print-stats`` snapshots of one cache.

    Gauges (cache size, file count, limits, timestamps) are left out. Raises
    ``CcacheStatsError`` when an event counter went down: the statistics
    were zeroed, or the cache replaced, between the snapshots.
    """
    delta: dict[str, int] = {}
    for name in sorted((before.keys() | after.keys()) - _GAUGES):
        change = after.get(name, 0) - before.get(name, 0)
        if change < 0:
            raise CcacheStatsError(
                f"ccache counter {name!r} went down from {before.get(name, 0)} to {after.get(name, 0)}:"
                " the statistics were zeroed or the cache replaced between the two snapshots"
            )
        delta[name] = change
    return delta


@dataclass(frozen=True, kw_only=True)
class CcacheSummary:
    """What a build's compiler calls came to, from ccache's counters.

    ``hits`` counts direct and preprocessed hits, wherever the result came
    from; ``remote_hits`` are the hits served by remote storage and
    ``local_hits`` the rest. ``remote_errors`` counts remote storage errors
    and timeouts (ccache falls back to the local cache on those; they are not
    part of ``errors``).
    """

    direct_hits: int = 0
    preprocessed_hits: int = 0
    misses: int = 0
    uncacheable: int = 0
    errors: int = 0
    remote_hits: int = 0
    remote_errors: int = 0

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"CcacheSummary.{field.name} must be a count >= 0, got {value!r}")
        if self.remote_hits > self.hits:
            raise ValueError(f"CcacheSummary.remote_hits ({self.remote_hits}) exceeds hits ({self.hits})")

    @property
    def hits(self) -> int:
        return self.direct_hits + self.preprocessed_hits

    @property
    def local_hits(self) -> int:
        return self.hits - self.remote_hits

    @property
    def cacheable(self) -> int:
        """Calls ccache could look up: hits and misses."""
        return self.hits + self.misses

    @property
    def calls(self) -> int:
        """Every compiler call ccache saw, as in its "Cacheable calls: x / calls" line."""
        return self.cacheable + self.uncacheable + self.errors

    @property
    def hit_rate(self) -> float:
        """Hits per cacheable call, 0..1; 0.0 when there was no cacheable call."""
        return self.hits / self.cacheable if self.cacheable else 0.0

    def to_dict(self) -> dict[str, int | float]:
        """Every count, the derived ones included (for records and ``--json``)."""
        return {
            "hits": self.hits,
            "direct_hits": self.direct_hits,
            "preprocessed_hits": self.preprocessed_hits,
            "misses": self.misses,
            "uncacheable": self.uncacheable,
            "errors": self.errors,
            "remote_hits": self.remote_hits,
            "local_hits": self.local_hits,
            "remote_errors": self.remote_errors,
            "calls": self.calls,
            "cacheable": self.cacheable,
            "hit_rate": self.hit_rate,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CcacheSummary:
        """The inverse of ``to_dict`` (derived keys are recomputed, not read)."""
        return cls(**{field.name: data.get(field.name, 0) for field in fields(cls)})


def summarize(counters: Mapping[str, int]) -> CcacheSummary:
    """Summarise counters from any of the parsers (any ccache 3.7 to 4.14).

    Counter names this module does not know are ignored. Raises
    ``CcacheStatsError`` for a negative counter.
    """
    for name, value in counters.items():
        if value < 0:
            raise CcacheStatsError(f"ccache counter {name!r} is negative ({value})")

    def total(names: frozenset[str] | tuple[str, ...]) -> int:
        return sum(counters.get(name, 0) for name in names)

    direct = counters.get(_DIRECT_HIT, 0)
    preprocessed = counters.get(_PREPROCESSED_HIT, 0)
    # A remote read that was not turned into a hit (a corrupt entry, say)
    # still counts as a remote hit in ccache; a summary never claims more
    # remote hits than hits.
    remote_hits = min(total(_REMOTE_HIT_COUNTERS), direct + preprocessed)
    return CcacheSummary(
        direct_hits=direct,
        preprocessed_hits=preprocessed,
        misses=counters.get(_MISS, 0),
        uncacheable=total(UNCACHEABLE_COUNTERS),
        errors=total(ERROR_COUNTERS),
        remote_hits=remote_hits,
        remote_errors=total(_REMOTE_ERROR_COUNTERS),
    )
