"""A matrix.toml table read key by key: typed reads that name the file and the key, leftovers refused with a "did you mean"."""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pipeline.errors import ConfigError

# "toolchain": a string: check for toolchains installed from a verified archive (pipeline.ccache.compiler_check).


Check = Callable[[str], "str | None"]


def did_you_mean(word: str, choices: object) -> str:
    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1)  # type: ignore[attr-defined]
    return f" (did you mean {close[0]!r}?)" if close else ""


_T = TypeVar("_T")


_MISSING: Any = object()


# Every number of matrix.toml is hours, days or a fraction: past this it is a typo or an overflow waiting.
MAX_NUMBER = 1e6


class TomlTable:
    """A TOML table being consumed: each read pops a key; ``done`` rejects leftovers."""

    def __init__(self, data: Mapping[str, Any], path: Path, prefix: str) -> None:
        self.data = dict(data)
        self.path = path
        self.prefix = prefix
        self.known: list[str] = []

    def _key(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def _fail(self, key: str, expected: str, value: Any = _MISSING) -> ConfigError:
        got = "" if value is _MISSING else f", got {value!r}"
        return ConfigError(f"{self.path}: {self._key(key)}: expected {expected}{got}")

    def _take(self, key: str, default: Any) -> Any:
        self.known.append(key)
        if key in self.data:
            return self.data.pop(key)
        if default is None:
            # A typo of a required key ('backnd') leaves it missing: name the stray key, the cause.
            stray = difflib.get_close_matches(key, [k for k in self.data if k not in self.known], n=1)
            if stray:
                raise ConfigError(
                    f"{self.path}: {self._key(stray[0])}: unknown key (did you mean {key!r}?); "
                    f"{self._key(key)} is required"
                )
            raise ConfigError(f"{self.path}: {self._key(key)}: required key is missing")
        return default

    def names(self) -> list[str]:
        return list(self.data)

    def table(self, key: str, *, required: bool = False) -> TomlTable:
        self.known.append(key)
        value = self.data.pop(key, _MISSING)
        if value is _MISSING:
            if required:
                raise ConfigError(f"{self.path}: {self._key(key)}: required table is missing")
            value = {}
        if not isinstance(value, dict):
            raise self._fail(key, "a table", value)
        return TomlTable(value, self.path, self._key(key))

    def table_list(self, key: str) -> list[TomlTable]:
        value = self._take(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self._fail(key, "an array of tables", value)
        return [TomlTable(v, self.path, f"{self._key(key)}[{i}]") for i, v in enumerate(value)]

    def string(self, key: str, default: Any, *, check: Check | None = None) -> Any:
        value = self._take(key, default)
        if not isinstance(value, str):
            raise self._fail(key, "a string", value)
        if check and (problem := check(value)):
            raise self._fail(key, problem, value)
        return value

    def optional_str(self, key: str, *, check: Check | None = None) -> str | None:
        if key not in self.data:
            self.known.append(key)
            return None
        return self.string(key, None, check=check)  # type: ignore[no-any-return]

    def choice(self, key: str, choices: tuple[str, ...], default: Any) -> Any:
        value = self._take(key, default)
        if not isinstance(value, str) or value not in choices:
            expected = "one of " + ", ".join(repr(c) for c in choices)
            hint = did_you_mean(value, choices) if isinstance(value, str) else ""
            raise ConfigError(f"{self.path}: {self._key(key)}: expected {expected}, got {value!r}{hint}")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self._take(key, default)
        if not isinstance(value, bool):
            raise self._fail(key, "true or false", value)
        return value

    def integer(self, key: str, default: Any, *, minimum: int | None = None) -> Any:
        value = self._take(key, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._fail(key, "an integer", value)
        if minimum is not None and value < minimum:
            raise self._fail(key, f"an integer >= {minimum}", value)
        return value

    def number(
        self,
        key: str,
        default: Any,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        above: float | None = None,
    ) -> Any:
        """A finite number within ``minimum``..``maximum``; ``above``: a bound it must pass (a divisor's 0)."""
        value = self._take(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self._fail(key, "a number", value)
        # nan slips past every comparison (a nan threshold silently turns an alarm off); inf and
        # 1e308 overflow later as durations: refuse them here, naming the key.
        if not math.isfinite(value):
            raise self._fail(key, "a finite number", value)
        maximum = MAX_NUMBER if maximum is None else maximum
        if above is not None and not above < value <= maximum:
            raise self._fail(key, f"a number above {above:g} and up to {maximum:g}", value)
        if (minimum is not None and value < minimum) or value > maximum:
            raise self._fail(key, f"a number between {minimum} and {maximum}", value)
        return float(value)

    def str_list(self, key: str, *, check: Check | None = None) -> list[str]:
        value = self._take(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._fail(key, "an array of strings", value)
        for item in value:
            if check and (problem := check(item)):
                raise self._fail(key, f"each item {problem}", item)
        return value

    def renamed(self, old: str, new: str) -> None:
        """Refuse ``old``, a key since renamed to ``new``: one line naming the file, the key and its new name."""
        if old in self.data:
            raise ConfigError(
                f"{self.path}: {self._key(old)}: renamed to {self._key(new)}, with the same values: rename the key"
            )

    def done(self) -> None:
        """Reject any key nobody asked for."""
        for key in self.data:
            raise ConfigError(f"{self.path}: {self._key(key)}: unknown key" + did_you_mean(key, self.known))
