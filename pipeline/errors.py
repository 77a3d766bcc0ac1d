"""The pipeline's error hierarchy.

A ``PipelineError`` is a user's or an environment's mistake: ``main()`` prints
its one-line message and exits with its code, never a traceback. Anything else
that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations


class PipelineError(Exception):
    """A failure the user can act on; ``str(err)`` is the whole message."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} ({self.hint})"
        return self.message


class UsageError(PipelineError):
    """A bad command-line argument."""

    exit_code = 2


class ConfigError(PipelineError):
    """A malformed matrix.toml: the message names the file and the key."""

    exit_code = 2


class BuildError(PipelineError):
    """CMake or Ninja failed."""

    exit_code = 1


class SourceError(PipelineError):
    """The source tree could not be obtained, or is not what was asked for."""

    exit_code = 3


class NetworkError(PipelineError):
    """A remote host could not be reached or answered badly after retries."""

    exit_code = 4
    # The host answered that the page is not there (HTTP 404, a missing local folder): a caller
    # that knows what the page stands for (a GPU family) can say what is there instead.
    not_found = False

    @classmethod
    def missing(cls, message: str) -> NetworkError:
        """The error for a page the host says does not exist."""
        err = cls(message)
        err.not_found = True
        return err


class IndexFormatError(PipelineError):
    """An index (TheRock's HTML or S3 XML) could not be understood."""

    exit_code = 5


class ResolutionError(PipelineError):
    """No build matches the requested policy, version or family."""

    exit_code = 6


class ToolchainError(PipelineError):
    """A toolchain could not be found, downloaded, verified or installed."""

    exit_code = 7


class GitHubError(PipelineError):
    """The GitHub API refused or answered something unexpected."""

    exit_code = 8


class BundleError(PipelineError):
    """A bundle or manifest is corrupt, foreign or missing."""

    exit_code = 9


class BundleCheckError(BundleError):
    """A leg's own bundle was built and packed, and fails check-bundle: the verdict is in its record."""

    exit_code = 13


class PublishError(PipelineError):
    """The run cannot be published as it is: a missing leg, a conflicting asset, mixed tags."""

    exit_code = 10


class StaleToolchainError(ResolutionError):
    """The newest ROCm build the policy can take is older than ``rocm.max_age_days``, and ``rocm.stale`` says fail."""

    exit_code = 14


class BusyError(PipelineError):
    """Another live run holds the lock of a leg's output folder or of a toolchain install."""

    exit_code = 12


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an exception so that ``finally`` blocks run and records say ``interrupted``.

    A KeyboardInterrupt, so every place that handles Ctrl-C handles SIGTERM
    the same way; only the exit code differs (128 + the signal's number).
    """

    exit_code = 143


# Not a class: an OSError (a path that cannot be written or read) escaping a
# command becomes one line at the CLI boundary with this code.
OS_ERROR_EXIT = 11

# What every exit code means, in the words of docs/settings.md's table: the table is generated
# (`python -m pipeline settings --exit-codes`), its classes read from the hierarchy above.
EXIT_CODE_MEANINGS: dict[int, str] = {
    0: "success (`compare`: the two sides are identical)",
    1: "CMake or Ninja failed, a bad record; `compare`: the sides differ",
    2: "a bad flag or variable; a malformed `matrix.toml` (non-finite or out-of-range numbers, empty strings, "
    "a BOM, a malformed URL)",
    3: "the source tree could not be obtained, or is not what was asked for",
    4: "a host could not be reached or answered badly after its retries",
    5: "TheRock's index could not be understood",
    6: "no ROCm build matches the policy, version or family",
    7: "a toolchain could not be found, downloaded, verified or installed",
    8: "the GitHub API refused or answered something unexpected",
    9: "a bundle or manifest is corrupt, foreign or missing; `compare` met a FIFO or device",
    10: "the run cannot be published as it is",
    OS_ERROR_EXIT: "a path cannot be written or read: a file where a folder is needed, `/dev/null`, a read-only "
    "or full disk, a folder where a file is needed (`--out`, `--ccache-dir`/`CCACHE_DIR`, "
    "`resolve --write`, `report --html`, `timings --trace`, `GITHUB_OUTPUT`)",
    12: "another live run holds the leg's output folder, a toolchain install or a download "
    "(`--wait-lock` waits instead)",
    13: "a leg built and packed its bundle, and the bundle fails check-bundle (the record's `bundle_check` and "
    "`error` say which problem first)",
    14: "the newest ROCm build the policy can take is older than `rocm.max_age_days`, and `rocm.stale` (or "
    "`PIPELINE_ROCM_STALE`) says `fail`",
    130: "interrupted by SIGINT (Ctrl-C)",
    Terminated.exit_code: "stopped by SIGTERM",
}


def error_classes() -> list[type[PipelineError]]:
    """Every error class of this module, in the order they are declared."""
    return [c for c in globals().values() if isinstance(c, type) and issubclass(c, PipelineError)]


def exit_codes_markdown() -> str:
    """docs/settings.md's table of exit codes: each code, the error classes that exit with it, its meaning."""
    rows = ["| exit code | error | meaning |", "| --- | --- | --- |"]
    for code, meaning in sorted(EXIT_CODE_MEANINGS.items()):
        names = [f"`{c.__name__}`" for c in error_classes() if c.exit_code == code]
        if code == OS_ERROR_EXIT:
            names.append("`OSError` (at the CLI boundary)")
        rows.append(f"| {code} | {', '.join(names) or '-'} | {meaning} |")
    return "\n".join(rows) + "\n"


def describe_os_error(exc: OSError) -> str:
    """One line for an ``OSError``: the path(s) it names and the reason, e.g. ``out/x: Permission denied``."""
    reason = exc.strerror or type(exc).__name__
    if isinstance(exc, FileExistsError):
        # mkdir(exist_ok=True) raises it only when a file stands where a folder is needed.
        reason = "exists and is not a folder"
    if exc.filename2 is not None:
        # A rename or copy: the destination is the path the user named.
        return f"{exc.filename2}: {reason}"
    if exc.filename is None:
        return f"{reason} ({exc})" if str(exc) and str(exc) != reason else reason
    return f"{exc.filename}: {reason}"
