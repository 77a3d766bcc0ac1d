"""Read the files a GitHub Actions step writes, the way the runner does."""

from __future__ import annotations

from pathlib import Path


def read_file_commands(path: Path) -> dict[str, str]:
    """Parse GITHUB_OUTPUT / GITHUB_ENV in their multiline ``name<<DELIM`` form."""
    values: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line:
            i += 1
            continue
        name, delim = line.split("<<", 1)
        end = lines.index(delim, i + 1)
        values[name] = "\n".join(lines[i + 1 : end])
        i = end + 1
    return values
