"""The one redaction rule: tokens, URL credentials, credential query values and auth headers never shown."""

from __future__ import annotations

import pytest

from pipeline.ccache.remote import redact_url as redact_remote
from pipeline.github.rest import RestClient, redact_token
from pipeline.redaction import MASK, redact, redact_command, redact_url, secrets_in

TOKEN = "ghp_0123456789abcdefABCDEF0123456789abcd"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://user:hunter2@cache.example:8080/x", "https://***@cache.example:8080/x"),
        ("redis://:s3cret@127.0.0.1:6379", "redis://***@127.0.0.1:6379"),
        (
            "GET https://h/a.tar.gz?X-Amz-Signature=abcd1234&x=1 failed",
            "GET https://h/a.tar.gz?X-Amz-Signature=***&x=1 failed",
        ),
        ("https://h/api?access_token=zzzz9999#frag", "https://h/api?access_token=***#frag"),
        ("sent Authorization: Bearer abc.def-ghi", "sent Authorization: Bearer ***"),
        ("header Authorization=token qwerty123", "header Authorization=token ***"),
        ("echo: Bearer abcdefgh12345678", "echo: Bearer ***"),
        # Nothing secret: unchanged.
        (
            "https://github.com/ggml-org/llama.cpp.git at b1234",
            "https://github.com/ggml-org/llama.cpp.git at b1234",
        ),
        ("git@github.com:o/r.git", "git@github.com:o/r.git"),
        ("http://[::1]:8080/index/", "http://[::1]:8080/index/"),
    ],
)
def test_redact_masks_credentials_and_nothing_else(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_a_known_secret_is_masked_wherever_it_appears() -> None:
    body = f'{{"message": "Bad credentials for {TOKEN}", "documentation_url": "x"}}'
    shown = redact(body, (TOKEN,))
    assert TOKEN not in shown and MASK in shown and "Bad credentials for" in shown


def test_short_and_empty_secrets_do_not_mask_ordinary_text() -> None:
    assert redact("a cat sat", ("a", "", None)) == "a cat sat"


def test_github_redaction_is_the_shared_rule() -> None:
    text = f"POST https://u:p@api.local/x: 403 ({TOKEN})"
    assert redact_token(text, TOKEN) == "POST https://***@api.local/x: 403 (***)"
    client = RestClient("o/r", TOKEN, api_url="http://127.0.0.1:1")
    assert TOKEN not in client.hide_token(f"echo {TOKEN}")
    assert TOKEN not in repr(client)


def test_remote_cache_redaction_is_the_shared_rule() -> None:
    assert redact_remote("redis://user:pw@127.0.0.1:6379") == "redis://***@127.0.0.1:6379"
    assert redact_url("http://127.0.0.1:8080/cache") == "http://127.0.0.1:8080/cache"


def test_command_lines_lose_secrets_from_the_environment() -> None:
    env = {"GITHUB_TOKEN": TOKEN, "PATH": "/usr/bin"}
    assert secrets_in(env) == (TOKEN,)
    line = redact_command(
        ["cmake", "-DREMOTE=http://u:pw@h/c", f"-DTOKEN={TOKEN}", "/usr/bin"], secrets_in(env)
    )
    assert line == "cmake -DREMOTE=http://***@h/c -DTOKEN=*** /usr/bin"
