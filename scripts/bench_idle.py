"""Whether the machine was idle while the benchmark ran: the CPU the other processes used meanwhile.

The load average cannot say it at the end of a run: the benchmark's own builds
are what keeps it high (the 1-minute load after five warm builds is 1.5 to 2 on
2 cores whatever else runs). What can: the machine's busy CPU seconds over the
run (``/proc/stat``) less the benchmark's own (this process and every child it
waited for, ``getrusage``). What is left is the other processes' work, which
slowed the timed commands down; the host's steal (time this VM was runnable
but not running) is counted apart.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

# At most this share of the run's CPU capacity (wall seconds x cores) used by other processes, with
# the 1-minute load at most IDLE_LOAD at the start: an idle run. Kernel threads and the VM's agent
# take well under 1% here.
IDLE_OTHER_SHARE = 0.03


@dataclass(frozen=True)
class CpuSnapshot:
    """The machine's busy and stolen CPU seconds since boot, and this process tree's own, at one moment."""

    busy_s: float
    steal_s: float
    own_s: float
    wall_s: float


def read_proc_stat(text: str, ticks_per_second: float) -> tuple[float, float]:
    """(busy, steal) seconds from the aggregate ``cpu`` line of ``/proc/stat``'s ``text``.

    Busy is user, nice, system, irq and softirq (guest time is inside user and nice already);
    idle and iowait are not, and steal is the host's, not this machine's work.
    """
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            ticks = [int(v) for v in fields[1:]] + [0] * 8
            user, nice, system, _idle, _iowait, irq, softirq, steal = ticks[:8]
            return (user + nice + system + irq + softirq) / ticks_per_second, steal / ticks_per_second
    raise ValueError("no aggregate 'cpu' line in /proc/stat")


def own_cpu_s() -> float:
    """User + system seconds of this process and of every child it has waited for (their trees included)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def snapshot(stat: Path = Path("/proc/stat")) -> CpuSnapshot | None:
    """The counters now; None where the OS has no ``/proc/stat``, or one this cannot read (the figures are
    then unknown, and the bench says so by the load average, as before)."""
    try:
        busy, steal = read_proc_stat(stat.read_text(encoding="ascii"), float(os.sysconf("SC_CLK_TCK")))
    except (OSError, ValueError):
        return None
    return CpuSnapshot(busy_s=busy, steal_s=steal, own_s=own_cpu_s(), wall_s=time.monotonic())


def other_work(start: CpuSnapshot, end: CpuSnapshot, cpus: int) -> dict[str, float]:
    """What the machine did between two snapshots beside this process tree: ``other_cpu_s`` (never
    below zero: the counters tick at different moments), ``steal_s``, and ``other_share``, the other
    processes' part of the span's capacity (wall seconds times ``cpus``)."""
    other = max(0.0, (end.busy_s - start.busy_s) - (end.own_s - start.own_s))
    capacity = max(end.wall_s - start.wall_s, 1e-9) * max(cpus, 1)
    return {"other_cpu_s": round(other, 1), "steal_s": round(end.steal_s - start.steal_s, 1),
            "other_share": round(other / capacity, 4)}
