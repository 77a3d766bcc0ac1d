"""A cache for glslc, the shader compiler ccache does not know: the launcher CMake runs as glslc.

llama.cpp's ggml-vulkan compiles each ``.comp`` shader through its own
``vulkan-shaders-gen`` program, which runs ``glslc`` (``--glslc``, CMake's
``Vulkan_GLSLC_EXECUTABLE``) once per shader variant. ccache never sees those
calls, so every build of a new folder compiled every variant again. The leg
points ``Vulkan_GLSLC_EXECUTABLE`` at a launcher (:mod:`pipeline.ccache.glslc_session`
writes it) that runs :func:`main` here.

What a result is keyed by, as ccache's direct mode does it:

- the *primary key*: this format's version, glslc's identity (the digest of
  its binary and of its ``--version`` text, which names the shaderc,
  glslang and SPIRV-Tools it runs), the arguments with every path under the
  workspace made relative to it (so another folder hits), the input's path
  the same way, and the input's content;
- a *manifest* per primary key: the files the input included (glslc's
  depfile) with each one's content digest, and the result they gave. A
  result is used only when every included file still has its recorded
  digest: a changed include is a miss.

The result is the file glslc wrote (``-o``) and its stderr; the depfile a
caller asks for is written again from the recorded includes, at the paths of
this folder. Every cache file is written to a temp name and renamed: a reader
sees a whole entry or none. A call this module does not understand (several
inputs, ``-o -``, preprocess only, ...) runs glslc unchanged, counted as
uncacheable. Each call appends one word (``hit``, ``miss``, ``uncacheable``)
to the run's stats file, which the leg reads into its record.

It runs once per shader variant (1,117 for llama.cpp 0c1e570), so a hit must
cost little beside glslc: the module imports ``os``, ``sys`` and ``hashlib``
only, and nothing of the pipeline. pathlib, dataclasses, tempfile, typing and
json (through re) would more than double its start-up (``python -X
importtime``), hence plain classes, ``os.path`` (ruff's PTH rules are off for
this file) and files of tab-separated lines: the launcher's settings
(``key<TAB>value``), a manifest (``result<TAB>path<TAB>digest...`` per
entry) and a result's ``includes`` (``path<TAB>digest``). A path with a tab
or a newline in it is never stored: such a call is compiled, not cached.
"""

from __future__ import annotations

import hashlib
import os
import sys

# Not typing's: importing typing alone costs as much as the rest of a hit (mypy reads this name the same way).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

# Bumped when what a key covers or how an entry is laid out changes: old entries are then never read.
FORMAT = "glslc-cache-2"
# Options whose value is the next argument.
VALUE_OPTIONS = frozenset({"-o", "-MF", "-I", "-x", "-MT", "-MQ"})
# Options that change what is written or where (preprocess or dependencies only, several outputs, a query):
# such a call runs glslc unchanged.
UNCACHEABLE = frozenset(
    {"-E", "-S", "-M", "-MM", "-c", "-MT", "-MQ", "--show-limits", "--version", "-h", "--help", "-save-temps"}
)
# Manifest entries kept per primary key: one per combination of include contents seen lately.
MANIFEST_ENTRIES = 8
OUTCOMES = ("hit", "miss", "uncacheable", "corrupt")
# Beside a result's files: the sha256 of each, checked on every read (a flipped byte or a cut SPIR-V is a miss).
DIGESTS = "digests"
RESULT_FILES = ("output", "includes", "stderr")


class Invocation:
    """One glslc call as this cache reads it: one input, one output file, maybe a depfile.

    ``depfile``: where the caller wants glslc's depfile (None: it asked for none); ``args``: every other
    argument, in order, as given.
    """

    __slots__ = ("args", "depfile", "input", "output")

    def __init__(self, *, input: str, output: str, depfile: str | None, args: tuple[str, ...]) -> None:
        self.input, self.output, self.depfile, self.args = input, output, depfile, args

    def _fields(self) -> tuple[str, str, str | None, tuple[str, ...]]:
        return (self.input, self.output, self.depfile, self.args)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Invocation) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"Invocation(input={self.input!r}, output={self.output!r}, depfile={self.depfile!r}, args={self.args!r})"


def parse_invocation(argv: Sequence[str]) -> Invocation | None:
    """``argv`` (without glslc itself) as an :class:`Invocation`; None for a call the cache does not handle."""
    inputs: list[str] = []
    output = depfile = None
    wants_depfile = False
    args: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in UNCACHEABLE:
            return None
        if arg in VALUE_OPTIONS:
            if i + 1 >= len(argv):
                return None
            value = argv[i + 1]
            i += 2
            if arg == "-o":
                output = value
            elif arg == "-MF":
                depfile = value
            else:
                args += [arg, value]
            continue
        if arg == "-MD":
            wants_depfile = True
        elif arg == "-" or not arg.startswith("-"):
            inputs.append(arg)
        else:
            args.append(arg)
        i += 1
    if len(inputs) != 1 or output is None or output == "-" or inputs[0] == "-":
        return None
    if depfile is not None and not wants_depfile:
        return None
    if wants_depfile and depfile is None:
        # glslc's own default for -MD without -MF.
        depfile = output + ".d"
    return Invocation(input=inputs[0], output=output, depfile=depfile, args=tuple(args))


def _abs(path: str, cwd: str) -> str:
    return os.path.normpath(os.path.join(cwd, path))


def portable(path: str, base: str | os.PathLike[str], cwd: str | os.PathLike[str]) -> str:
    """``path`` as the key holds it: relative to ``base`` (``./...``) when under it, else absolute."""
    absolute = _abs(path, os.fspath(cwd))
    root = os.path.normpath(os.fspath(base))
    if absolute == root or absolute.startswith(root.rstrip(os.sep) + os.sep):
        return "./" + os.path.relpath(absolute, root).replace(os.sep, "/")
    return absolute.replace(os.sep, "/")


def local(path: str, base: str | os.PathLike[str]) -> str:
    """A :func:`portable` path back in this folder."""
    return os.path.join(os.fspath(base), path[2:]) if path.startswith("./") else path


def key_args(inv: Invocation, base: str | os.PathLike[str], cwd: str | os.PathLike[str]) -> list[str]:
    """The arguments as the key holds them: each include folder made :func:`portable`."""
    out: list[str] = []
    take_path = False
    for arg in inv.args:
        if take_path:
            out.append(portable(arg, base, cwd))
            take_path = False
        elif arg == "-I":
            out.append(arg)
            take_path = True
        elif arg.startswith("-I"):
            out.append("-I" + portable(arg[2:], base, cwd))
        else:
            out.append(arg)
    return out


def digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _digest_fields(fields: Sequence[str]) -> str:
    # Each field with its length first: no two lists of fields give the same bytes.
    return digest_bytes("".join(f"{len(f)}:{f}" for f in fields).encode("utf-8", "surrogateescape"))


def primary_key(
    glslc_identity: str,
    inv: Invocation,
    base: str | os.PathLike[str],
    cwd: str | os.PathLike[str],
    input_digest: str,
) -> str:
    """What picks the manifest: glslc, the arguments and the input (path and content), never the folder."""
    args = key_args(inv, base, cwd)
    return _digest_fields(
        [FORMAT, glslc_identity, str(len(args)), *args, portable(inv.input, base, cwd), input_digest]
    )


def result_key(primary: str, includes: Sequence[tuple[str, str]]) -> str:
    """The result's key: the primary key and every included file (portable path, content digest)."""
    return _digest_fields([primary, *(field for pair in includes for field in pair)])


def parse_depfile(text: str) -> list[str]:
    """The prerequisites of a Make depfile glslc wrote (``out: in inc...``), unescaped."""
    joined = text.replace("\\\r\n", " ").replace("\\\n", " ")
    _, sep, rest = joined.partition(": ")
    if not sep:
        return []
    words: list[str] = []
    current = ""
    i = 0
    while i < len(rest):
        ch = rest[i]
        if ch == "\\" and i + 1 < len(rest) and rest[i + 1] in " \\#":
            current += rest[i + 1]
            i += 2
            continue
        if ch.isspace():
            if current:
                words.append(current)
            current = ""
        else:
            current += ch
        i += 1
    if current:
        words.append(current)
    return words


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def file_digest(path: str | os.PathLike[str]) -> str | None:
    try:
        return digest_bytes(_read(os.fspath(path)))
    except OSError:
        return None


def _temp_name(path: str) -> str:
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")


def _atomic_write(path: str, data: bytes) -> None:
    """``data`` to a temp name beside ``path``, renamed over it: a reader sees the old file or the new one."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = _temp_name(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class Cache:
    """The cache folder: ``manifests/<k[:2]>/<k>`` and ``results/<k[:2]>/<k>/{output,includes,stderr}``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)

    def manifest_path(self, primary: str) -> str:
        return os.path.join(self.root, "manifests", primary[:2], primary)

    def result_dir(self, key: str) -> str:
        return os.path.join(self.root, "results", key[:2], key)

    def manifest(self, primary: str) -> list[tuple[str, list[tuple[str, str]]]]:
        """(result key, includes) per entry, newest first; an unreadable manifest holds none."""
        try:
            text = _read(self.manifest_path(primary)).decode("utf-8", "surrogateescape")
        except OSError:
            return []
        entries = []
        for line in text.splitlines():
            key, *fields = line.split("\t")
            if len(fields) % 2 == 0 and len(key) == 64:
                entries.append((key, list(zip(fields[::2], fields[1::2], strict=True))))
        return entries

    def lookup(self, primary: str, digest_of: Callable[[str], str | None]) -> str | None:
        """The result key of the first manifest entry whose includes all still have their digest, if stored."""
        for key, includes in self.manifest(primary):
            unchanged = all(digest_of(path) == digest for path, digest in includes)
            if unchanged and os.path.isdir(self.result_dir(key)):
                return key
        return None

    def store(self, primary: str, includes: Sequence[tuple[str, str]], output: bytes, stderr: bytes) -> str:
        """Keep one result (whole, or not at all) and note it first in the primary key's manifest."""
        key = result_key(primary, includes)
        final = self.result_dir(key)
        if not os.path.isfile(os.path.join(final, DIGESTS)):
            os.makedirs(os.path.dirname(final), exist_ok=True)
            staging = _temp_name(final)
            os.mkdir(staging)
            try:
                files = dict(
                    zip(
                        RESULT_FILES,
                        (output, _lines(includes).encode("utf-8", "surrogateescape"), stderr),
                        strict=True,
                    )
                )
                files[DIGESTS] = _digest_lines(files)
                for name, data in files.items():
                    with open(os.path.join(staging, name), "wb") as fh:
                        fh.write(data)
                try:
                    os.rename(staging, final)
                except OSError:
                    # Another call stored the same result meanwhile (its copy is the same bytes), or a bad copy is
                    # in the way: it is removed and this one takes its place.
                    if os.path.isfile(os.path.join(final, DIGESTS)) and self.read_result(key) is not None:
                        pass
                    else:
                        _discard(final)
                        os.rename(staging, final)
            finally:
                if os.path.isdir(staging):
                    for name in os.listdir(staging):
                        os.unlink(os.path.join(staging, name))
                    os.rmdir(staging)
        kept = [(k, inc) for k, inc in self.manifest(primary) if k != key]
        lines = [
            "\t".join([k, *(f for pair in inc for f in pair)]) + "\n"
            for k, inc in [(key, list(includes)), *kept]
        ]
        _atomic_write(
            self.manifest_path(primary), "".join(lines[:MANIFEST_ENTRIES]).encode("utf-8", "surrogateescape")
        )
        return key

    def includes(self, key: str) -> list[tuple[str, str]]:
        """The stored result's includes (portable path, digest), in the order glslc named them."""
        return _includes(_read(os.path.join(self.result_dir(key), "includes")))

    def read_result(self, key: str) -> dict[str, bytes] | None:
        """The stored result's files, each checked against the digests stored with it; None when one is missing,
        unreadable or not what was stored (the entry is then removed, best effort: the next store replaces it)."""
        folder = self.result_dir(key)
        try:
            files = {name: _read(os.path.join(folder, name)) for name in (*RESULT_FILES, DIGESTS)}
        except OSError:
            files = {}
        if files and _digest_lines({name: files[name] for name in RESULT_FILES}) == files[DIGESTS]:
            return files
        _discard(folder)
        return None


def _digest_lines(files: dict[str, bytes]) -> bytes:
    return "".join(f"{name}\t{digest_bytes(data)}\n" for name, data in files.items()).encode()


def _includes(data: bytes) -> list[tuple[str, str]]:
    text = data.decode("utf-8", "surrogateescape")
    return [(path, digest) for path, _, digest in (line.partition("\t") for line in text.splitlines())]


def _discard(folder: str) -> None:
    """Remove a bad result's folder; a read-only cache keeps it (and misses on it again)."""
    try:
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    except OSError:
        pass


def _lines(includes: Sequence[tuple[str, str]]) -> str:
    return "".join(f"{path}\t{digest}\n" for path, digest in includes)


def storable(path: str) -> bool:
    """A path the tab-separated files can hold."""
    return "\t" not in path and "\n" not in path and "\r" not in path


def read_settings(path: str) -> dict[str, str]:
    """The launcher's settings file: ``key<TAB>value`` lines (pipeline.ccache.glslc_session writes it)."""
    text = _read(path).decode("utf-8", "surrogateescape")
    return {key: value for key, _, value in (line.partition("\t") for line in text.splitlines())}


def settings_text(settings: dict[str, str]) -> str:
    if not all(storable(k) and storable(v) and "\t" not in k for k, v in settings.items()):
        raise ValueError(f"a setting with a tab or a newline cannot be written: {settings}")
    return "".join(f"{key}\t{value}\n" for key, value in settings.items())


def depfile_text(output: str, deps: Sequence[str | os.PathLike[str]]) -> str:
    """A depfile as glslc writes it: the output, then the input and each include."""

    def escape(path: str) -> str:
        return path.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#")

    return f"{escape(output)}: {' '.join(escape(os.fspath(d)) for d in deps)}\n"


def _count(stats: str, outcome: str) -> None:
    # One short append per call: O_APPEND writes this small do not interleave.
    fd = os.open(stats, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{outcome}\n".encode())
    finally:
        os.close(fd)


class Reply:
    """What one call comes to: glslc's exit code and what it printed, or, with ``exec_glslc``, a call to hand
    to glslc itself, unchanged (its output streams straight to the caller's)."""

    __slots__ = ("code", "exec_glslc", "stderr", "stdout")

    def __init__(
        self, code: int = 0, stdout: bytes = b"", stderr: bytes = b"", exec_glslc: str | None = None
    ) -> None:
        self.code, self.stdout, self.stderr, self.exec_glslc = code, stdout, stderr, exec_glslc

    def __repr__(self) -> str:
        return (
            f"Reply(code={self.code!r}, stdout={self.stdout!r}, stderr={self.stderr!r}, "
            f"exec_glslc={self.exec_glslc!r})"
        )


def handle(config: dict[str, str], argv: Sequence[str], cwd: str, env: dict[str, str] | None = None) -> Reply:
    """One glslc call through the cache, in the folder ``cwd`` (absolute), counted in the stats file.

    A hit writes the output and the depfile itself; a miss runs glslc (in ``cwd``, with ``env``: None is this
    process's) and keeps its result. What glslc prints comes back in the reply, for the caller to write: the
    launcher (:func:`run`) and the cache server (:mod:`pipeline.ccache.glslc_server`) both answer through it.
    """
    glslc = str(config["glslc"])
    stats = str(config["stats"])
    inv = parse_invocation(argv)
    if inv is None:
        _count(stats, "uncacheable")
        return Reply(exec_glslc=glslc)
    base = str(config["base_dir"])
    cache = Cache(str(config["cache_dir"]))
    input_path = os.path.join(cwd, inv.input)
    input_digest = file_digest(input_path)
    if input_digest is None:
        _count(stats, "uncacheable")
        return Reply(exec_glslc=glslc)
    primary = primary_key(str(config["identity"]), inv, base, cwd, input_digest)
    key = cache.lookup(primary, lambda p: file_digest(local(p, base)))
    if key is None:
        return _miss(glslc, argv, inv, cache, primary, base, cwd, stats, env)
    files = cache.read_result(key)
    if files is None:
        # A stored result that is not what was stored (a flipped byte, a cut SPIR-V, a lost file) is never served:
        # counted, and compiled again (the store replaces it).
        _count(stats, "corrupt")
        return _miss(glslc, argv, inv, cache, primary, base, cwd, stats, env)
    _atomic_write(os.path.join(cwd, inv.output), files["output"])
    if inv.depfile is not None:
        deps = [input_path, *(local(p, base) for p, _ in _includes(files["includes"]))]
        _atomic_write(
            os.path.join(cwd, inv.depfile), depfile_text(inv.output, deps).encode("utf-8", "surrogateescape")
        )
    _count(stats, "hit")
    return Reply(stderr=files["stderr"])


def run(config: dict[str, str], argv: Sequence[str], cwd: str) -> int:
    """One glslc call through the cache, in this process (the launcher's fallback); glslc's exit code."""
    reply = handle(config, argv, cwd)
    if reply.exec_glslc is not None:
        sys.stdout.flush()
        os.execv(reply.exec_glslc, [reply.exec_glslc, *argv])
    sys.stdout.buffer.write(reply.stdout)
    sys.stdout.flush()
    sys.stderr.buffer.write(reply.stderr)
    sys.stderr.flush()
    return reply.code


def _miss(
    glslc: str,
    argv: Sequence[str],
    inv: Invocation,
    cache: Cache,
    primary: str,
    base: str,
    cwd: str,
    stats: str,
    env: dict[str, str] | None,
) -> Reply:
    """Run glslc (with a depfile, to learn the includes) and keep what it wrote when it succeeded."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="glslc-cache-") as tmp:
        extra = [] if inv.depfile is not None else ["-MD", "-MF", os.path.join(tmp, "deps.d")]
        depfile = os.path.join(cwd, inv.depfile) if inv.depfile is not None else os.path.join(tmp, "deps.d")
        proc = subprocess.run(
            [glslc, *argv, *extra],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
        _count(stats, "miss")
        # A signal's death as a shell reports it: what the caller would have seen of glslc itself.
        reply = Reply(
            proc.returncode if proc.returncode >= 0 else 128 - proc.returncode, proc.stdout, proc.stderr
        )
        if proc.returncode != 0:
            return reply
        try:
            deps = parse_depfile(_read(depfile).decode("utf-8"))
            output = _read(os.path.join(cwd, inv.output))
        except (OSError, UnicodeDecodeError):
            return reply
        input_abs = _abs(inv.input, cwd)
        includes: list[tuple[str, str]] = []
        for dep in deps:
            if _abs(dep, cwd) == input_abs:
                continue
            digest = file_digest(_abs(dep, cwd))
            if digest is None or not storable(dep):
                return reply
            includes.append((portable(dep, base, cwd), digest))
        try:
            cache.store(primary, includes, output, proc.stderr)
        except OSError:
            # A full or read-only cache never fails the build: the compile itself succeeded.
            return reply
    return reply


def main(argv: Sequence[str] | None = None) -> int:
    """``SETTINGS GLSLC-ARGS...``, as the launcher script runs it."""
    args = list(sys.argv[1:] if argv is None else argv)
    config = read_settings(args[0])
    return run(config, args[1:], os.getcwd())


if __name__ == "__main__":
    sys.exit(main())
