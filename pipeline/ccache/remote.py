"""ccache's remote storage: check the URL, probe the server, say when it is down.

ccache itself is the distributed engine (``remote_storage``, shared by every
leg and machine that points at the same server); the pipeline only checks
what it hands to ccache:

- The spec is validated before any work starts. ccache 4.14 exits with an
  error on every compiler call for a scheme it has neither a built-in
  backend nor a storage helper for (``https``, ``ftp``...), which would turn
  a typo into a failed build at the first object.
- Each server is probed once, with a short timeout, before the build. A
  server that is down is left out of ccache's settings and reported as a
  warning: the build goes on with the local cache. Handing a dead server to
  ccache anyway would cost every compiler call a failed connection and count
  it as a ``remote_storage_error``.
- A server that goes away during the build is ccache's business: it falls
  back to the local cache per call and counts ``remote_storage_error`` or
  ``remote_storage_timeout``; :func:`remote_errors_warning` turns those counts
  into a warning after the build.

Syntax (ccache's manual, "Remote storage backends"): whitespace-separated
backends, each a URL followed by properties (``key=value``, ``read-only``)
and custom attributes (``@key=value``); ``|`` counts as whitespace for older
ccache versions. Credentials in a URL never reach a message or a record:
everything shown goes through :func:`redact`.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit

from pipeline.errors import UsageError
from pipeline.redaction import redact_url

SCHEMES = ("redis", "http")
DEFAULT_PORTS = {"redis": 6379, "http": 80}
# A healthy cache server on the same network answers in milliseconds; a dead
# one should cost the build a couple of seconds, not a minute.
PROBE_TIMEOUT = 2.0

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_PROPERTY = re.compile(r"^@?[A-Za-z][A-Za-z0-9_-]*(?:=.*)?$")
_SHARD = re.compile(r"^([^()]+)(?:\((\d+(?:\.\d+)?)\))?$")
_REDIS_DB = re.compile(r"^/?\d*$")
_NOT_SUPPORTED = {
    "https": "ccache speaks HTTPS only through a storage helper (ccache-storage-https), "
    "which the pinned ccache does not ship; use http:// or a local TLS proxy",
    "rediss": "ccache's built-in Redis backend does not speak TLS; use redis://",
}


@dataclass(frozen=True, kw_only=True)
class RemoteBackend:
    """One backend of a ``remote_storage`` spec: its URL, properties and endpoints."""

    # The backend as ccache gets it: the URL and its properties.
    text: str
    url: str
    scheme: str
    properties: tuple[str, ...] = ()
    # (host, port) of every server: one, or one per shard.
    endpoints: tuple[tuple[str, int], ...] = ()

    @property
    def display(self) -> str:
        """The URL without credentials, for messages and records."""
        return redact_url(self.url)


ProbeFn = Callable[[RemoteBackend, str, int, float], "str | None"]


@dataclass(frozen=True, kw_only=True)
class RemoteCheck:
    """What the pre-build check found: which backends ccache gets, which are down."""

    configured: tuple[RemoteBackend, ...]
    reachable: tuple[RemoteBackend, ...]
    # (backend's display URL, why it is unreachable)
    unreachable: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def effective(self) -> str | None:
        """The spec to hand to ccache (credentials included), or None: local cache only."""
        return " ".join(b.text for b in self.reachable) or None

    @property
    def display(self) -> str:
        """The configured spec without credentials."""
        return " ".join(b.display for b in self.configured)

    @property
    def status(self) -> str:
        """``ok``, ``partial`` (some backends down) or ``unreachable`` (all down)."""
        if not self.unreachable:
            return "ok"
        return "partial" if self.reachable else "unreachable"

    def to_record(self) -> dict[str, Any]:
        return {
            "remote": self.display,
            "remote_status": self.status,
            "remote_unreachable": [{"url": url, "reason": reason} for url, reason in self.unreachable],
        }


# --------------------------------------------------------------------------
# Pure: parsing, redaction, messages


def redact_spec(spec: str) -> str:
    """A whole ``remote_storage`` spec with credentials removed from every URL."""
    return " ".join(redact_url(t) if _SCHEME.match(t) else t for t in spec.replace("|", " ").split())


def _port(parts: SplitResult, scheme: str, where: str, shown: str) -> int:
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"{where}: {shown}: the port is not a number from 1 to 65535") from None
    if port == 0:
        raise UsageError(f"{where}: {shown}: the port is not a number from 1 to 65535")
    return port or DEFAULT_PORTS[scheme]


def _shards(properties: Sequence[str], where: str, shown: str) -> list[str]:
    names: list[str] = []
    for prop in properties:
        key, _, value = prop.partition("=")
        if key != "shards":
            continue
        for item in value.split(","):
            match = _SHARD.match(item.strip())
            if not match:
                raise UsageError(f"{where}: {shown}: bad shard {item!r} (expected NAME or NAME(WEIGHT))")
            names.append(match.group(1))
    return names


def _backend(url: str, properties: list[str], where: str) -> RemoteBackend:
    shown = redact_url(url)
    scheme = url.split(":", 1)[0].lower()
    if scheme in _NOT_SUPPORTED:
        raise UsageError(f"{where}: {shown}: {_NOT_SUPPORTED[scheme]}")
    if scheme not in SCHEMES:
        raise UsageError(
            f"{where}: {shown}: unsupported remote cache scheme {scheme!r} (expected redis:// or http://)"
        )
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket
        raise UsageError(f"{where}: {shown}: malformed URL") from None
    if not url.lower().startswith(f"{scheme}://") or not parts.hostname:
        tail = "[/DB]" if scheme == "redis" else "[/PATH]"
        raise UsageError(f"{where}: {shown}: expected {scheme}://HOST[:PORT]{tail}")
    if scheme == "redis" and not _REDIS_DB.match(parts.path):
        raise UsageError(f"{where}: {shown}: redis:// takes an optional /DBNUMBER, got {parts.path!r}")
    port = _port(parts, scheme, where, shown)
    shards = _shards(properties, where, shown)
    if "*" in parts.hostname:
        if not shards:
            raise UsageError(f"{where}: {shown}: '*' in the host needs a shards=... property")
        endpoints = tuple((parts.hostname.replace("*", name), port) for name in shards)
    else:
        if shards:
            raise UsageError(f"{where}: {shown}: shards=... needs a '*' in the host for the shard names")
        endpoints = ((parts.hostname, port),)
    return RemoteBackend(
        text=" ".join([url, *properties]),
        url=url,
        scheme=scheme,
        properties=tuple(properties),
        endpoints=endpoints,
    )


def parse_remote(spec: str, *, where: str) -> tuple[RemoteBackend, ...]:
    """The backends of a ``remote_storage`` spec; UsageError naming ``where`` and the problem.

    Only ``redis://`` and ``http://`` servers are accepted: the schemes the
    pinned ccache speaks without a storage helper.
    """
    tokens = spec.replace("|", " ").split()
    if not tokens:
        raise UsageError(f"{where}: empty remote cache URL (expected redis://HOST or http://HOST)")
    groups: list[tuple[str, list[str]]] = []
    for token in tokens:
        if _SCHEME.match(token):
            groups.append((token, []))
        elif not groups:
            raise UsageError(
                f"{where}: {redact_url(token)!r} is not a URL (expected redis://HOST or http://HOST)"
            )
        elif _PROPERTY.match(token):
            groups[-1][1].append(token)
        else:
            raise UsageError(
                f"{where}: {redact_url(token)!r} is neither a URL nor a property "
                "(expected redis://HOST[:PORT] or http://HOST[:PORT][/PATH], then key=value properties)"
            )
    return tuple(_backend(url, props, where) for url, props in groups)


def unreachable_warning(url: str, reason: str, *, others_left: bool) -> str:
    """The warning for a backend that did not answer the pre-build probe."""
    fallback = (
        "ccache uses the other remote storage and the local cache"
        if others_left
        else "building with the local cache only"
    )
    return f"remote cache {url} is unreachable ({reason}); {fallback}"


def remote_errors_warning(display: str, remote_errors: int, calls: int) -> str | None:
    """A warning when ccache counted remote storage errors or timeouts during the build."""
    if remote_errors <= 0:
        return None
    return (
        f"remote cache {display}: {remote_errors} remote storage error(s) or timeout(s) in {calls} "
        "compiler calls; those calls fell back to the local cache"
    )


# --------------------------------------------------------------------------
# I/O edge: probing


def _describe(exc: OSError, timeout: float) -> str:
    if isinstance(exc, socket.gaierror):
        return "cannot resolve the host name"
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return exc.strerror or type(exc).__name__


def probe_endpoint(
    backend: RemoteBackend, host: str, port: int, timeout: float = PROBE_TIMEOUT
) -> str | None:
    """None when the server at host:port answers in its protocol, else why not.

    Redis gets a ``PING`` (any reply, ``-NOAUTH`` included, shows a live Redis:
    ccache authenticates itself); HTTP gets a ``HEAD`` of the base path (any
    status line will do: a 404 is an empty cache).
    """
    if backend.scheme == "redis":
        request = b"*1\r\n$4\r\nPING\r\n"
        expected: tuple[bytes, ...] = (b"+", b"-")
        protocol = "Redis"
    else:
        path = urlsplit(backend.url).path or "/"
        authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        request = f"HEAD {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n".encode()
        expected = (b"HTTP/",)
        protocol = "HTTP"
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(request)
            reply = sock.recv(64)
    except OSError as exc:
        return _describe(exc, timeout)
    if not reply:
        return "the server closed the connection without answering"
    if not reply.startswith(expected):
        return f"something answers on port {port}, but not a {protocol} server"
    return None


def check_remote(
    spec: str,
    *,
    where: str,
    timeout: float = PROBE_TIMEOUT,
    probe: ProbeFn = probe_endpoint,
) -> RemoteCheck:
    """Validate ``spec`` and probe every server once; the down ones are left out, with a warning."""
    backends = parse_remote(spec, where=where)
    reachable: list[RemoteBackend] = []
    down: list[tuple[str, str]] = []
    for backend in backends:
        for host, port in backend.endpoints:
            reason = probe(backend, host, port, timeout)
            if reason is not None:
                shown = backend.display
                if len(backend.endpoints) > 1:
                    shown += f" (shard {host}:{port})"
                down.append((shown, reason))
                break
        else:
            reachable.append(backend)
    warnings = tuple(unreachable_warning(url, reason, others_left=bool(reachable)) for url, reason in down)
    return RemoteCheck(
        configured=backends, reachable=tuple(reachable), unreachable=tuple(down), warnings=warnings
    )
