"""One redaction rule for everything the pipeline shows: errors, logs, records.

A message may carry an API body (a server can echo the token it was sent), a
URL (``https://user:password@host/...``, a pre-signed ``?X-Amz-Signature=``
link) or a command line (a remote-cache URL with a password). Every such text
passes through :func:`redact` before it is printed or written, so no token and
no URL credential reaches a log line. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from pipeline.inputs.settings import GITHUB_TOKEN, SIGNING_PASSWORD

MASK = "***"

# Variables whose values are secrets wherever they appear (a child's command line, a log).
# The token settings are declared once, in pipeline.inputs.settings; Actions' own runtime token is added.
SECRET_VARIABLES = (*GITHUB_TOKEN.env, *SIGNING_PASSWORD.env, "ACTIONS_RUNTIME_TOKEN")

# A secret shorter than this is not searched for: masking every "a" would make messages unreadable,
# and no real token is this short.
MIN_SECRET_LENGTH = 4

# scheme://userinfo@ : the userinfo (user, or user:password) is a credential.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@?#]+)@")
# Query parameters that carry a credential (pre-signed links, token-in-URL APIs).
_SECRET_QUERY = re.compile(
    r"(?P<key>[?&](?:access_token|token|password|passwd|secret|sig|signature|"
    r"X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token)=)(?P<value>[^&\s#\"']+)",
    re.IGNORECASE,
)
# An Authorization header as text: "Authorization: Bearer abc", "token abc" after it.
_AUTH_HEADER = re.compile(
    r"(?P<key>\bAuthorization\s*[:=]\s*(?:Bearer|token|Basic)?\s*)(?P<value>[^\s,;\"']+)", re.I
)
_BEARER = re.compile(r"(?P<key>\bBearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every known secret, URL credential, credential query value and auth header masked."""
    for secret in sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    text = _SECRET_QUERY.sub(lambda m: f"{m['key']}{MASK}", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m['key']}{MASK}", text)
    return _BEARER.sub(lambda m: f"{m['key']}{MASK}", text)


def redact_url(url: str) -> str:
    """One URL without its user name, password or credential query values."""
    return redact(url)


def secrets_in(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values of the secret variables set in ``environ`` (to mask wherever they appear)."""
    return tuple(environ[var] for var in SECRET_VARIABLES if environ.get(var))


def redact_command(cmd: Sequence[str], secrets: Iterable[str | None] = ()) -> str:
    """A command line as shown in a log: its words joined by spaces, redacted."""
    return redact(" ".join(cmd), secrets)
