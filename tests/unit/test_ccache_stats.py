"""Tests for pipeline.ccache.stats_parser: real ccache 4.14 samples, older formats, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.ccache.stats_parser import (
    ERROR_COUNTERS,
    KNOWN_COUNTERS,
    UNCACHEABLE_COUNTERS,
    CcacheStatsError,
    CcacheSummary,
    counters_delta,
    parse_print_stats,
    parse_stats_log,
    summarize,
)

DATA = Path(__file__).parent / "data" / "ccache"


def sample(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


# The totals of the calls generate.sh makes with real ccache 4.14.
REAL_4_14 = CcacheSummary(
    direct_hits=2, preprocessed_hits=2, misses=3, uncacheable=2, errors=1, remote_hits=2, remote_errors=1
)


# --- real ccache 4.14 -------------------------------------------------------------------------


def test_real_tab_output_summarises_to_the_calls_made() -> None:
    counters = parse_print_stats(sample("print-stats-4.14.tab"))
    summary = summarize(counters)
    assert summary == REAL_4_14
    assert (summary.hits, summary.local_hits, summary.calls, summary.cacheable) == (4, 2, 10, 7)
    assert summary.hit_rate == pytest.approx(4 / 7)
    # remote_storage_read_hit counts manifest reads too (3 here): it must not be taken for hits.
    assert counters["remote_storage_read_hit"] == 3


def test_real_json_output_equals_the_tab_output() -> None:
    assert parse_print_stats(sample("print-stats-4.14.json")) == parse_print_stats(
        sample("print-stats-4.14.tab")
    )


def test_every_counter_of_ccache_4_14_is_known() -> None:
    # Fails when a ccache upgrade adds a counter the summary may need to classify.
    assert set(parse_print_stats(sample("print-stats-4.14.tab"))) <= KNOWN_COUNTERS


def test_real_stats_log_agrees_with_print_stats_of_the_same_run() -> None:
    log = parse_stats_log(sample("stats-log-4.14.log"))
    tab = parse_print_stats(sample("print-stats-4.14.tab"))
    assert summarize(log) == REAL_4_14
    assert {name: tab[name] for name in log} == log
    # Only gauges and the cleanups of `ccache -C` are in --print-stats and not in the log.
    assert {name for name, value in tab.items() if value and name not in log} == {
        "cache_size_kibibyte",
        "cleanups_performed",
        "files_in_cache",
        "max_cache_size_kibibyte",
        "stats_updated_timestamp",
    }


def test_real_delta_from_an_empty_cache_is_the_run_itself() -> None:
    after = parse_print_stats(sample("print-stats-4.14.tab"))
    before = dict.fromkeys(after, 0)
    delta = counters_delta(before, after)
    assert "cache_size_kibibyte" not in delta and "stats_updated_timestamp" not in delta
    assert summarize(delta) == REAL_4_14


# --- older formats ---------------------------------------------------------------------------


def test_ccache_3_7_tab_output_in_display_order() -> None:
    counters = parse_print_stats(sample("print-stats-3.7.tab"))
    assert next(iter(counters)) == "stats_updated_timestamp"
    assert summarize(counters) == CcacheSummary(
        direct_hits=40, preprocessed_hits=5, misses=12, uncacheable=8, errors=2
    )


def test_ccache_4_6_primary_and_secondary_names() -> None:
    summary = summarize(parse_print_stats(sample("print-stats-4.6.tab")))
    assert summary == CcacheSummary(
        direct_hits=10,
        preprocessed_hits=2,
        misses=3,
        uncacheable=3,  # called_for_link 2 + recache 1
        errors=1,
        remote_hits=5,
        remote_errors=3,  # secondary_storage_error 1 + secondary_storage_timeout 2
    )
    assert summary.local_hits == 7


def test_ccache_4_6_stats_log_remote_hits_are_an_upper_bound() -> None:
    summary = summarize(parse_stats_log(sample("stats-log-4.6.log")))
    assert (summary.hits, summary.misses, summary.remote_errors) == (2, 2, 1)
    # 4.4-4.7 count the remote manifest read as well as the result read: one remote hit
    # shows two secondary_storage_hit lines, so the summary can only cap them at the hits.
    assert summary.remote_hits == 2


# --- summary ---------------------------------------------------------------------------------


def test_remote_hits_never_exceed_hits() -> None:
    summary = summarize({"direct_cache_hit": 1, "cache_miss": 1, "remote_storage_hit": 3})
    assert (summary.remote_hits, summary.local_hits) == (1, 0)


def test_unknown_counters_are_ignored_and_classes_are_disjoint() -> None:
    assert summarize({"some_future_counter": 7}) == CcacheSummary()
    assert not ERROR_COUNTERS & UNCACHEABLE_COUNTERS


def test_no_cacheable_call_has_a_zero_hit_rate() -> None:
    summary = summarize({"called_for_link": 4})
    assert (summary.calls, summary.cacheable, summary.hit_rate) == (4, 0, 0.0)


def test_negative_counter_is_rejected() -> None:
    with pytest.raises(CcacheStatsError, match="'cache_miss' is negative"):
        summarize({"cache_miss": -1})


def test_summary_dict_round_trips_and_carries_derived_values() -> None:
    data = REAL_4_14.to_dict()
    assert data["hits"] == 4 and data["remote_hits"] == 2 and data["local_hits"] == 2
    assert data["calls"] == 10 and data["hit_rate"] == pytest.approx(4 / 7)
    assert json.loads(json.dumps(data)) == data
    assert CcacheSummary.from_dict(data) == REAL_4_14


@pytest.mark.parametrize("kwargs", [{"misses": -1}, {"direct_hits": 1, "remote_hits": 2}, {"errors": True}])
def test_inconsistent_summary_is_refused(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="CcacheSummary"):
        CcacheSummary(**kwargs)


def test_delta_refuses_zeroed_statistics() -> None:
    with pytest.raises(CcacheStatsError, match="'cache_miss' went down from 5 to 1"):
        counters_delta({"cache_miss": 5}, {"cache_miss": 1})
    # A cleanup shrinks the cache: gauges may go down.
    assert counters_delta({"files_in_cache": 9, "cache_miss": 1}, {"files_in_cache": 2, "cache_miss": 3}) == {
        "cache_miss": 2
    }


# --- malformed input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("cache_miss 3\n", "line 1: expected '<name><TAB><count>', got 'cache_miss 3'"),
        ("cache_miss\t3\n\nhello\n", "line 3: .* got 'hello'"),
        ("cache_miss\t-1\n", "line 1"),
        ("cache_miss\tabc\n", "line 1"),
        ("cache_miss\t\u0663\n", "line 1"),  # a non-ASCII digit
        ("bad name\t1\n", "line 1"),
        ("cache_miss\t1\r\ncache_miss\t2\r\n", "line 2: counter 'cache_miss' appears twice"),
        ('{\n  "cache_miss": 1,\n}\n', "JSON line 3"),
        ("[1, 2]", "JSON line 1: expected an object"),
        ('{\n  "direct_cache_hit": 1,\n  "cache_miss": -1\n}\n', "JSON line 3: .*'cache_miss', got -1"),
        ('{"cache_miss": true}', "got True"),
        ('{"cache_miss": 1.5}', "got 1.5"),
        ('{\n"cache_miss": 1,\n"cache_miss": 2\n}', "'cache_miss' appears twice"),
    ],
)
def test_malformed_print_stats_names_the_line(text: str, message: str) -> None:
    with pytest.raises(CcacheStatsError, match=message):
        parse_print_stats(text)


def test_long_bad_line_is_cut_in_the_message() -> None:
    with pytest.raises(CcacheStatsError) as caught:
        parse_print_stats("x" * 500 + "\n")
    assert len(str(caught.value)) < 150


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# a.c\ncache_miss\t1\n", "line 2: expected a counter name or '# <source>', got 'cache_miss\\\\t1'"),
        ('{\n"cache_miss": 1\n}\n', "line 1"),
    ],
)
def test_malformed_stats_log_names_the_line(text: str, message: str) -> None:
    with pytest.raises(CcacheStatsError, match=message):
        parse_stats_log(text)


def test_stats_log_tolerates_crlf_blank_lines_bom_and_a_truncated_tail() -> None:
    text = "\ufeff# a.c\r\ndirect_cache_hit\r\n\r\n# \r\ncalled_for_link\r\n# b.c\ncache_mi"
    assert parse_stats_log(text) == {"direct_cache_hit": 1, "called_for_link": 1}
    assert parse_stats_log("") == {}


def test_tab_output_tolerates_crlf_and_a_bom() -> None:
    assert parse_print_stats("\ufeffcache_miss\t2\r\ndirect_cache_hit\t1\r\n") == {
        "cache_miss": 2,
        "direct_cache_hit": 1,
    }


# --- properties ------------------------------------------------------------------------------

# What ccache 4.14 logs for each kind of compilation (taken from stats-log-4.14.log).
_RECORDS: dict[str, list[str]] = {
    "local_direct": [
        "direct_cache_hit",
        "local_storage_hit",
        "local_storage_read_hit",
        "local_storage_read_hit",
    ],
    "remote_direct": [
        "direct_cache_hit",
        "local_storage_miss",
        "local_storage_read_miss",
        "local_storage_read_miss",
        "local_storage_write",
        "local_storage_write",
        "remote_storage_hit",
        "remote_storage_read_hit",
        "remote_storage_read_hit",
    ],
    "local_preprocessed": ["local_storage_hit", "local_storage_read_hit", "preprocessed_cache_hit"],
    "remote_preprocessed": [
        "local_storage_miss",
        "local_storage_read_miss",
        "local_storage_write",
        "preprocessed_cache_hit",
        "remote_storage_hit",
        "remote_storage_read_hit",
    ],
    "miss": ["cache_miss", "direct_cache_miss", "local_storage_miss", "preprocessed_cache_miss"],
    "miss_remote_down": [
        "cache_miss",
        "direct_cache_miss",
        "preprocessed_cache_miss",
        "remote_storage_error",
    ],
}

compilations = st.lists(
    st.one_of(
        st.sampled_from(sorted(_RECORDS)).map(lambda kind: (kind, _RECORDS[kind])),
        st.sampled_from(sorted(UNCACHEABLE_COUNTERS)).map(lambda name: ("uncacheable", [name])),
        st.sampled_from(sorted(ERROR_COUNTERS)).map(lambda name: ("error", [name])),
    ),
    max_size=40,
)


# The end of a log another compilation is appending to: its last line has no newline yet.
partial_tails = st.sampled_from(
    ["", "# src/late.c", "# src/late.c\ndirect_cache_hit", "cache_miss", "cache_mi"]
)


@given(compilations, st.sampled_from(["\n", "\r\n"]), partial_tails)
def test_summary_of_a_stats_log_counts_its_compilations(
    calls: list[tuple[str, list[str]]], newline: str, partial_tail: str
) -> None:
    lines: list[str] = []
    for number, (_, record) in enumerate(calls):
        lines += [f"# src/file{number}.c", *record, ""]
    text = newline.join(lines) + partial_tail.replace("\n", newline)

    summary = summarize(parse_stats_log(text))

    def count(*kinds: str) -> int:
        return sum(kind in kinds for kind, _ in calls)

    assert summary.direct_hits == count("local_direct", "remote_direct")
    assert summary.preprocessed_hits == count("local_preprocessed", "remote_preprocessed")
    assert summary.remote_hits == count("remote_direct", "remote_preprocessed")
    assert summary.local_hits == count("local_direct", "local_preprocessed")
    assert summary.misses == count("miss", "miss_remote_down")
    assert summary.remote_errors == count("miss_remote_down")
    assert summary.uncacheable == count("uncacheable")
    assert summary.errors == count("error")
    assert summary.calls == len(calls)


counter_maps = st.dictionaries(
    st.text("abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=30),
    st.integers(min_value=0, max_value=2**64 - 1),
)


@given(counter_maps)
def test_tab_and_json_forms_read_back_what_ccache_writes(counters: dict[str, int]) -> None:
    tab = "".join(f"{name}\t{value}\n" for name, value in sorted(counters.items()))
    as_json = "{" + ",".join(f'\n  "{name}": {value}' for name, value in sorted(counters.items())) + "\n}\n"
    if counters:
        assert parse_print_stats(tab) == counters
    assert parse_print_stats(as_json) == counters
