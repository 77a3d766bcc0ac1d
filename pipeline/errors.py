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


class PublishError(PipelineError):
    """The run cannot be published as it is: a missing leg, a conflicting asset, mixed tags."""

    exit_code = 10


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
