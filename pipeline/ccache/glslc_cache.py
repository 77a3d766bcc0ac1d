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

It runs once per shader variant (about 1,500 for llama.cpp), so it imports
the standard library only, and nothing else of the pipeline.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Bumped when what a key covers or how an entry is laid out changes: old entries are then never read.
FORMAT = "glslc-cache-1"
# Options whose value is the next argument.
VALUE_OPTIONS = frozenset({"-o", "-MF", "-I", "-x", "-MT", "-MQ"})
# Options that change what is written or where (preprocess or dependencies only, several outputs, a query):
# such a call runs glslc unchanged.
UNCACHEABLE = frozenset({"-E", "-S", "-M", "-MM", "-c", "-MT", "-MQ", "--show-limits", "--version", "-h",
                         "--help", "-save-temps"})
# Manifest entries kept per primary key: one per combination of include contents seen lately.
MANIFEST_ENTRIES = 8
OUTCOMES = ("hit", "miss", "uncacheable")


@dataclass(frozen=True)
class Invocation:
    """One glslc call as this cache reads it: one input, one output file, maybe a depfile."""

    input: str
    output: str
    # Where the caller wants glslc's depfile; None when it asked for none.
    depfile: str | None
    # Every other argument, in order, as given.
    args: tuple[str, ...]


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


def portable(path: str, base: Path, cwd: Path) -> str:
    """``path`` as the key holds it: relative to ``base`` (``./...``) when under it, else absolute."""
    absolute = Path(os.path.normpath(cwd / path))
    try:
        return "./" + absolute.relative_to(base).as_posix()
    except ValueError:
        return absolute.as_posix()


def local(path: str, base: Path) -> Path:
    """A :func:`portable` path back in this folder."""
    return base / path[2:] if path.startswith("./") else Path(path)


def key_args(inv: Invocation, base: Path, cwd: Path) -> list[str]:
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


def _digest_json(obj: Any) -> str:
    return digest_bytes(json.dumps(obj, separators=(",", ":")).encode("utf-8"))


def primary_key(glslc_identity: str, inv: Invocation, base: Path, cwd: Path, input_digest: str) -> str:
    """What picks the manifest: glslc, the arguments and the input (path and content), never the folder."""
    return _digest_json([FORMAT, glslc_identity, key_args(inv, base, cwd), portable(inv.input, base, cwd),
                         input_digest])


def result_key(primary: str, includes: Sequence[tuple[str, str]]) -> str:
    """The result's key: the primary key and every included file (portable path, content digest)."""
    return _digest_json([primary, [list(pair) for pair in includes]])


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


def file_digest(path: Path) -> str | None:
    try:
        return digest_bytes(path.read_bytes())
    except OSError:
        return None


@dataclass(frozen=True)
class Cache:
    """The cache folder: ``manifests/<k[:2]>/<k>.json`` and ``results/<k[:2]>/<k>/{output,meta.json}``."""

    root: Path

    def manifest_path(self, primary: str) -> Path:
        return self.root / "manifests" / primary[:2] / f"{primary}.json"

    def result_dir(self, key: str) -> Path:
        return self.root / "results" / key[:2] / key

    def manifest(self, primary: str) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.manifest_path(primary).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []

    def lookup(self, primary: str, digest_of: Callable[[str], str | None]) -> str | None:
        """The result key of the first manifest entry whose includes all still have their digest, if stored."""
        for entry in self.manifest(primary):
            includes = entry.get("includes")
            key = entry.get("result")
            if not isinstance(includes, list) or not isinstance(key, str):
                continue
            unchanged = all(isinstance(p, list) and len(p) == 2 and digest_of(p[0]) == p[1] for p in includes)
            if unchanged and (self.result_dir(key) / "output").is_file():
                return key
        return None

    def store(self, primary: str, includes: Sequence[tuple[str, str]], output: bytes, stderr: bytes) -> str:
        """Keep one result (whole, or not at all) and note it first in the primary key's manifest."""
        key = result_key(primary, includes)
        final = self.result_dir(key)
        if not (final / "output").is_file():
            final.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{key[:12]}."))
            try:
                (staging / "output").write_bytes(output)
                meta = {"includes": [list(p) for p in includes], "stderr": stderr.decode("utf-8", "replace")}
                (staging / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
                try:
                    staging.rename(final)
                except OSError:
                    # Another call stored the same result meanwhile: its copy is the same bytes.
                    if not (final / "output").is_file():
                        raise
            finally:
                if staging.exists():
                    _remove(staging)
        entry = {"includes": [list(p) for p in includes], "result": key}
        kept = [e for e in self.manifest(primary) if e.get("result") != key]
        _atomic_write(self.manifest_path(primary), json.dumps([entry, *kept][:MANIFEST_ENTRIES]).encode("utf-8"))
        return key

    def stderr_of(self, key: str) -> str:
        try:
            meta = json.loads((self.result_dir(key) / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return ""
        stderr = meta.get("stderr") if isinstance(meta, dict) else None
        return stderr if isinstance(stderr, str) else ""


def _remove(folder: Path) -> None:
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def depfile_text(output: str, deps: Sequence[Path]) -> str:
    """A depfile as glslc writes it: the output, then the input and each include."""
    def escape(path: str) -> str:
        return path.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#")
    return f"{escape(output)}: {' '.join(escape(str(d)) for d in deps)}\n"


def _count(stats: str, outcome: str) -> None:
    # One short append per call: O_APPEND writes this small do not interleave.
    fd = os.open(stats, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{outcome}\n".encode())
    finally:
        os.close(fd)


def run(config: dict[str, Any], argv: Sequence[str], cwd: Path) -> int:
    """One glslc call through the cache; glslc's exit code."""
    glslc = str(config["glslc"])
    stats = str(config["stats"])
    inv = parse_invocation(argv)
    if inv is None:
        _count(stats, "uncacheable")
        sys.stdout.flush()
        os.execv(glslc, [glslc, *argv])
    base = Path(config["base_dir"])
    cache = Cache(Path(config["cache_dir"]))
    input_path = cwd / inv.input
    input_digest = file_digest(input_path)
    if input_digest is None:
        _count(stats, "uncacheable")
        os.execv(glslc, [glslc, *argv])
    primary = primary_key(str(config["identity"]), inv, base, cwd, input_digest)
    key = cache.lookup(primary, lambda p: file_digest(local(p, base)))
    if key is not None:
        result = cache.result_dir(key)
        _atomic_write(cwd / inv.output, (result / "output").read_bytes())
        if inv.depfile is not None:
            meta = json.loads((result / "meta.json").read_text(encoding="utf-8"))
            deps = [input_path, *(local(p, base) for p, _ in meta["includes"])]
            _atomic_write(cwd / inv.depfile, depfile_text(inv.output, deps).encode("utf-8"))
        sys.stderr.write(cache.stderr_of(key))
        _count(stats, "hit")
        return 0
    return _miss(glslc, argv, inv, cache, primary, base, cwd, stats)


def _miss(glslc: str, argv: Sequence[str], inv: Invocation, cache: Cache, primary: str, base: Path, cwd: Path,
          stats: str) -> int:
    """Run glslc (with a depfile, to learn the includes) and keep what it wrote when it succeeded."""
    import subprocess

    with tempfile.TemporaryDirectory(prefix="glslc-cache-") as tmp:
        extra = [] if inv.depfile is not None else ["-MD", "-MF", str(Path(tmp) / "deps.d")]
        depfile = cwd / inv.depfile if inv.depfile is not None else Path(tmp) / "deps.d"
        proc = subprocess.run([glslc, *argv, *extra], cwd=cwd, capture_output=True, check=False)
        sys.stdout.buffer.write(proc.stdout)
        sys.stdout.flush()
        sys.stderr.buffer.write(proc.stderr)
        sys.stderr.flush()
        _count(stats, "miss")
        if proc.returncode != 0:
            return proc.returncode
        try:
            deps = parse_depfile(depfile.read_text(encoding="utf-8"))
            output = (cwd / inv.output).read_bytes()
        except OSError:
            return 0
        input_abs = Path(os.path.normpath(cwd / inv.input))
        includes: list[tuple[str, str]] = []
        for dep in deps:
            absolute = Path(os.path.normpath(cwd / dep))
            if absolute == input_abs:
                continue
            digest = file_digest(absolute)
            if digest is None:
                return 0
            includes.append((portable(dep, base, cwd), digest))
        # A full or read-only cache never fails the build: the compile itself succeeded.
        with contextlib.suppress(OSError):
            cache.store(primary, includes, output, proc.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``CONFIG.json GLSLC-ARGS...``, as the launcher script runs it."""
    args = list(sys.argv[1:] if argv is None else argv)
    config = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    return run(config, args[1:], Path.cwd())


if __name__ == "__main__":
    sys.exit(main())
