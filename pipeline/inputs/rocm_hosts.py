"""Where TheRock publishes each stream, by build date: matrix.toml's ``[[rocm.hosts]]``.

TheRock moved its publishing on 2026-08-22/23 (ROCm/TheRock 4d76ea1a1, #7547:
the RFC0012 ``<stream>.repo.amd.com`` buckets). The old CDN keeps what it
published before and gets nothing new, so a build comes from the host whose
date range holds the build's date: tonight's from the new host, a replayed
August night's from the old one. ``--index-url`` names one index for
everything instead.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from pipeline.errors import ConfigError

# The streams the resolver reads (the ``stream`` of a ``[[rocm.hosts]]`` entry).
ROCM_STREAMS = ("nightly", "stable")


@dataclass(frozen=True, kw_only=True)
class RocmHost:
    """One index of one stream, for the builds dated ``since`` to ``until`` (both included; None: open)."""

    stream: str
    index_url: str
    since: date | None = None
    until: date | None = None

    def holds(self, day: date) -> bool:
        """Whether a build dated ``day`` was published here."""
        return (self.since is None or self.since <= day) and (self.until is None or day <= self.until)

    @property
    def span(self) -> str:
        """``2026-08-23 on``, ``until 2026-08-22``: the range as a person reads it."""
        if self.since is None and self.until is None:
            return "any date"
        if self.until is None:
            return f"{self.since} on"
        if self.since is None:
            return f"until {self.until}"
        return f"{self.since} to {self.until}"


def check_hosts(hosts: Sequence[RocmHost], where: str) -> None:
    """A ConfigError unless each stream's ranges are ordered and neither overlap nor leave a gap."""
    for stream in ROCM_STREAMS:
        own = sorted((h for h in hosts if h.stream == stream), key=lambda h: h.since or date.min)
        for host in own:
            if host.since is not None and host.until is not None and host.until < host.since:
                raise ConfigError(
                    f"{where}: {stream} host {host.index_url}: until {host.until} is before since "
                    f"{host.since}"
                )
        for before, after in itertools.pairwise(own):
            if (
                before.until is None
                or after.since is None
                or before.until.toordinal() + 1 != after.since.toordinal()
            ):
                raise ConfigError(
                    f"{where}: {stream} hosts {before.index_url} ({before.span}) and {after.index_url} ({after.span}) "
                    "must meet: one's until the day before the next one's since"
                )


def stream_hosts(hosts: Sequence[RocmHost], stream: str = "nightly") -> list[RocmHost]:
    """The hosts of ``stream``, newest first (the order a resolver tries them in)."""
    return sorted((h for h in hosts if h.stream == stream), key=lambda h: h.since or date.min, reverse=True)


def host_for(hosts: Sequence[RocmHost], day: date, stream: str = "nightly") -> RocmHost | None:
    """The host that published ``stream``'s builds dated ``day``; None when no range holds it."""
    return next((h for h in stream_hosts(hosts, stream) if h.holds(day)), None)


def hosts_upto(hosts: Sequence[RocmHost], day: date, stream: str = "nightly") -> list[RocmHost]:
    """The hosts that may hold a build dated ``day`` or earlier, newest first: the newest one that has a build
    the policy takes has the newest such build (its range is the latest)."""
    return [h for h in stream_hosts(hosts, stream) if h.since is None or h.since <= day]


def hosts_text(hosts: Sequence[RocmHost], stream: str = "nightly") -> str:
    """``url (range); url (range)``: a stream's hosts as an error names them (``none`` when there are none)."""
    return "; ".join(f"{h.index_url} ({h.span})" for h in stream_hosts(hosts, stream)) or "none"


def index_for(hosts: Sequence[RocmHost], day: date, *, where: str, stream: str = "nightly") -> str:
    """The index of the host that published ``stream``'s builds dated ``day``, or a ConfigError naming the hosts."""
    host = host_for(hosts, day, stream)
    if host is None:
        raise ConfigError(
            f"{where}: no {stream} host publishes builds dated {day} (the hosts: {hosts_text(hosts, stream)}); "
            "--index-url names one"
        )
    return host.index_url
