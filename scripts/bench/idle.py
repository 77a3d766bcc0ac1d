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
from typing import Any

# Above this 1-minute load average (runnable processes) at the start, the machine is not idle: wall
# times then measure the machine's other work too.
IDLE_LOAD = 0.5

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
    return {
        "other_cpu_s": round(other, 1),
        "steal_s": round(end.steal_s - start.steal_s, 1),
        "other_share": round(other / capacity, 4),
    }


def busy_load(load: list[float] | None) -> bool:
    """Whether the 1-minute load average ``load[0]`` says the machine is busy (unknown: not)."""
    return load is not None and load[0] > IDLE_LOAD


def idle_warning(load: list[float] | None, cpus: int | None, when: str) -> str | None:
    """The warning to print when the load average says the machine is busy (None: idle, or unknown)."""
    if load is None or not busy_load(load):
        return None
    return (
        f"bench: WARNING: load average {load[0]:.2f} {when} on {cpus} cores: the machine is not idle, so the "
        "wall times are not idle figures (the CPU seconds still measure the pipeline's own work)"
    )


def idle_verdict(
    machine: dict[str, Any], start: CpuSnapshot | None, end: CpuSnapshot | None
) -> tuple[bool, str | None]:
    """Whether the run was idle, and the warning to end it with when not: a 1-minute load of at most
    ``IDLE_LOAD`` at the start (``machine["load_average_start"]``), and other processes using at most
    ``IDLE_OTHER_SHARE`` of the machine between the snapshots (``machine`` gets their CPU seconds, the
    host's steal and that share). Without snapshots the load at the end decides, as before this module,
    though the benchmark's own builds raise it."""
    busy_at_start = busy_load(machine["load_average_start"])
    if start is None or end is None:
        warning = idle_warning(machine["load_average_end"], machine["cpus"], "at the end")
        return not (busy_at_start or warning), warning
    other = other_work(start, end, machine["cpus"] or 1)
    machine.update(other)
    if other["other_share"] > IDLE_OTHER_SHARE:
        return False, (
            f"bench: WARNING: other processes used {other['other_cpu_s']} CPU seconds during the run, "
            f"{other['other_share']:.1%} of the machine: the wall times are not idle figures (the CPU "
            "seconds still measure the pipeline's own work)"
        )
    return not busy_at_start, None
