"""scripts/bench/idle.py: the other processes' CPU during a benchmark run, from /proc/stat and getrusage."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.bench import idle as bi

# /proc/stat as Linux 6.x writes it (proc(5)): user nice system idle iowait irq softirq steal guest guest_nice.
STAT = """cpu  3231830 1989 470414 4300368 34983 0 5917 38075 0 0
cpu0 1615000 1000 235000 2150000 17000 0 3000 19000 0 0
intr 1 2 3
"""


def test_busy_is_user_nice_system_irq_softirq_and_steal_stands_apart() -> None:
    busy, steal = bi.read_proc_stat(STAT, 100.0)
    assert busy == pytest.approx((3231830 + 1989 + 470414 + 0 + 5917) / 100)
    assert steal == pytest.approx(380.75)


def test_a_stat_without_the_aggregate_line_is_refused() -> None:
    with pytest.raises(ValueError, match="no aggregate 'cpu' line"):
        bi.read_proc_stat("cpu0 1 2 3 4\n", 100.0)


def test_other_work_is_the_machines_busy_time_less_this_process_trees() -> None:
    start = bi.CpuSnapshot(busy_s=1000.0, steal_s=10.0, own_s=5.0, wall_s=100.0)
    end = bi.CpuSnapshot(busy_s=1190.0, steal_s=12.5, own_s=185.0, wall_s=200.0)
    # 190 busy seconds, 180 of them this tree's: 10 by others, of 100 s x 2 cores.
    assert bi.other_work(start, end, 2) == {"other_cpu_s": 10.0, "steal_s": 2.5, "other_share": 0.05}


def test_counters_that_tick_apart_never_give_negative_other_work() -> None:
    start = bi.CpuSnapshot(busy_s=1000.0, steal_s=0.0, own_s=5.0, wall_s=0.0)
    end = bi.CpuSnapshot(busy_s=1010.0, steal_s=0.0, own_s=15.02, wall_s=10.0)
    assert bi.other_work(start, end, 2)["other_cpu_s"] == 0.0


def test_no_proc_stat_gives_no_snapshot(tmp_path: Path) -> None:
    assert bi.snapshot(tmp_path / "absent") is None


def test_an_unreadable_proc_stat_gives_no_snapshot_not_a_traceback(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("intr 1 2 3\n", encoding="ascii")
    assert bi.snapshot(stat) is None


QUIET_START = bi.CpuSnapshot(busy_s=1000.0, steal_s=0.0, own_s=0.0, wall_s=0.0)


def _machine(start_load: float, end_load: float) -> dict[str, object]:
    return {"cpus": 2, "load_average_start": [start_load, 0.0, 0.0], "load_average_end": [end_load, 0.0, 0.0]}


def test_a_run_whose_own_builds_raise_the_load_is_still_idle_when_nothing_else_ran() -> None:
    machine = _machine(0.3, 2.1)
    # 200 s on 2 cores: 396 busy seconds, 394 of them the bench's own, 2 (0.5%) others'.
    end = bi.CpuSnapshot(busy_s=1396.0, steal_s=0.3, own_s=394.0, wall_s=200.0)
    assert bi.idle_verdict(machine, QUIET_START, end) == (True, None)
    assert machine["other_cpu_s"] == 2.0 and machine["other_share"] == 0.005 and machine["steal_s"] == 0.3


def test_other_processes_over_the_share_make_the_run_not_idle_and_say_how_much() -> None:
    end = bi.CpuSnapshot(busy_s=1396.0, steal_s=0.0, own_s=364.0, wall_s=200.0)
    idle, warning = bi.idle_verdict(_machine(0.3, 2.1), QUIET_START, end)
    assert not idle
    assert (
        warning is not None
        and "other processes used 32.0 CPU seconds during the run, 8.0% of the machine" in warning
    )


def test_a_busy_start_is_not_idle_whatever_happened_after() -> None:
    end = bi.CpuSnapshot(busy_s=1396.0, steal_s=0.0, own_s=396.0, wall_s=200.0)
    assert bi.idle_verdict(_machine(0.9, 2.1), QUIET_START, end) == (False, None)


def test_without_snapshots_the_load_at_the_end_decides() -> None:
    idle, warning = bi.idle_verdict(_machine(0.3, 2.1), None, None)
    assert not idle and warning is not None and "load average 2.10 at the end on 2 cores" in warning
    assert bi.idle_verdict(_machine(0.3, 0.4), None, None) == (True, None)
