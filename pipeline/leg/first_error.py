"""The first real error in a failed configure's or build's output, as one line.

A failed CMake run or Ninja build ends in a tail of 25 lines, and the cause
is often above it: a ``CMake Error at FILE:LINE`` block, or the compiler's
first ``error:``. :func:`first_error` finds it so the step's error line can
quote it. Pure: lines in, text out.

What counts, in the order the output has it:

- CMake: ``CMake Error at FILE:LINE (command):`` (and ``CMake Error in
  FILE:``, ``CMake Error: message``) with the first sentence of its indented
  message, and where the call came from when CMake prints a call stack;
- a compiler's ``FILE:LINE[:COL]: [fatal ]error: message`` (GCC, Clang,
  glslc) or ``FILE(LINE[,COL]): [fatal ]error[ CODE]: message`` (MSVC, nvcc);
- a linker's ``undefined reference to``, ``ld.lld: error:`` or ``error LNK``.

Only when none of these is in the output does the first other line with
``error:`` stand in (``ninja: error: ...``, ``collect2: error: ...``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# The most of a message the error line quotes.
MAX_MESSAGE = 240

_CMAKE_AT = re.compile(r"^CMake Error (?:at|in) (?P<where>.+?):\s*$")
_CMAKE_PLAIN = re.compile(r"^CMake Error: (?P<msg>.+)$")
# Each: where (file and line, or the linker), what kind ("error", "fatal error", "error C2039"), the message.
_LOCATED = (
    # GCC, Clang, glslc: FILE:LINE[:COL]: [fatal ]error: message
    re.compile(r"^(?P<loc>(?:[A-Za-z]:)?[^\s:][^:]*:\d+(?::\d+)?): (?P<kind>(?:fatal )?error): (?P<msg>.+)$"),
    # MSVC, nvcc: FILE(LINE[,COL]): [fatal ]error[ CODE]: message
    re.compile(
        r"^(?P<loc>(?:[A-Za-z]:)?[^\s(:][^(:]*\(\d+(?:,\d+)?\))\s*: "
        r"(?P<kind>(?:fatal )?error(?: [A-Z]+\d+)?): (?P<msg>.+)$"
    ),
    # GNU ld: OBJECT:(SECTION+OFFSET): undefined reference to `symbol'
    re.compile(r"^(?P<loc>[^\s:][^:]*:\([^)]*\)): (?P<kind>)(?P<msg>undefined reference to .+)$"),
    # lld, mold: ld.lld: error: message
    re.compile(r"^(?P<loc>(?:\S*/)?(?:ld\.lld|ld64\.lld|lld-link|ld|mold)): (?P<kind>error): (?P<msg>.+)$"),
    # MSVC's linker: OBJECT : [fatal ]error LNKnnnn: message
    re.compile(r"^(?P<loc>[^:]+?) : (?P<kind>(?:fatal )?error LNK\d+): (?P<msg>.+)$"),
)
_ANY_ERROR = re.compile(r"\berror: ")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def _clean(text: str) -> str:
    return " ".join(text.split())


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (whitespace collapsed, its full stop dropped), at most MAX_MESSAGE long."""
    flat = _clean(text)
    sentence = _SENTENCE_END.split(flat, maxsplit=1)[0].rstrip()
    if sentence.endswith("."):
        sentence = sentence[:-1]
    if len(sentence) > MAX_MESSAGE:
        sentence = sentence[: MAX_MESSAGE - 3].rstrip() + "..."
    return sentence


def _cmake_block(header: str, rest: list[str]) -> str:
    """``CMake Error at WHERE: first sentence`` (+ the call that led there) from the lines after the header."""
    message: list[str] = []
    caller = None
    lines = iter(rest)
    for line in lines:
        if not line.strip():
            message.append("")
            continue
        if line.startswith((" ", "\t")):
            message.append(line.strip())
            continue
        if line.startswith("Call Stack"):
            caller = next((c.strip() for c in lines if c.strip()), None)
        break
    text = f"{header}: {first_sentence(' '.join(message))}" if any(message) else header
    return f"{text} (called from {caller})" if caller else text


def first_error(lines: Iterable[str]) -> str | None:
    """The first real error in ``lines`` as one line (see the module docstring); None when there is none."""
    fallback: str | None = None
    pending: list[str] = []
    header: str | None = None
    for raw in lines:
        line = raw.rstrip("\r\n")
        if header is not None:
            # Inside a CMake error block: its indented message, then what follows it.
            if line.startswith((" ", "\t")) or not line.strip() or line.startswith("Call Stack"):
                pending.append(line)
                # The call stack's first entry is the one line after its title that we want.
                if len(pending) > 1 and pending[-2].startswith("Call Stack") and line.strip():
                    return _cmake_block(header, pending)
                continue
            return _cmake_block(header, pending)
        if match := _CMAKE_AT.match(line):
            header, pending = f"CMake Error at {match.group('where')}", []
            if line.startswith("CMake Error in "):
                header = f"CMake Error in {match.group('where')}"
            continue
        if match := _CMAKE_PLAIN.match(line):
            return f"CMake Error: {first_sentence(match.group('msg'))}"
        for pattern in _LOCATED:
            if match := pattern.match(line):
                kind = f"{match.group('kind')}: " if match.group("kind") else ""
                return f"{match.group('loc')}: {kind}{first_sentence(match.group('msg'))}"
        if fallback is None and _ANY_ERROR.search(line):
            fallback = first_sentence(line)
    if header is not None:
        return _cmake_block(header, pending)
    return fallback
