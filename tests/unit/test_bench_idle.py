"""scripts/bench_idle.py: the other processes' CPU during a benchmark run, from /proc/stat and getrusage."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import bench_idle as bi

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
