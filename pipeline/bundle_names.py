"""Bundle names like upstream llama.cpp's release assets: pure rules, standard library only.

Upstream names its assets ``llama-<tag>-bin-<os>-<variant>-<arch>``:
``ubuntu-x64`` (CPU), ``ubuntu-vulkan-x64``, ``win-cuda-...-x64``,
``win-hip-radeon-x64``. A leg may set its own template (``bundle_name`` in
matrix.toml); the default keeps the ROCm family in ROCm names, since one
bundle per GPU family is built.
"""

from __future__ import annotations

import re
import string

DEFAULT_TEMPLATE = "llama-{tag}-bin-{os_label}{variant}-x64"
FIELDS = ("tag", "os_label", "variant", "backend", "family", "leg")
OS_LABELS = {"linux": "ubuntu", "windows": "win"}
_SAFE = re.compile(r"^[A-Za-z0-9._+-]+$")


def variant_of(backend: str, os_name: str, family: str | None) -> str:
    """The backend part of the name, with its leading '-': '' for cpu, '-vulkan', '-cuda', '-rocm-<family>'."""
    if backend == "cpu":
        return ""
    if backend == "rocm":
        # Upstream's Windows ROCm assets say "hip"; the family keeps one bundle per GPU family apart.
        word = "hip" if os_name == "windows" else "rocm"
        return f"-{word}-{family}" if family else f"-{word}"
    return f"-{backend}"


def template_problem(template: str) -> str | None:
    """Why ``template`` is not a usable name template, or None (the check matrix.toml runs)."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        return f"a name template with {{fields}} ({exc})"
    unknown = [f for f in fields if f not in FIELDS]
    if unknown:
        return f"a name template using only {', '.join('{' + f + '}' for f in FIELDS)} (not {{{unknown[0]}}})"
    if "tag" not in fields:
        return "a name template containing {tag} (each run's bundle needs its own name)"
    probe = template.format(tag="b1", os_label="ubuntu", variant="-cpu", backend="cpu", family="gfx1100", leg="leg")
    if not _SAFE.match(probe):
        return "a name template that gives a file name of letters, digits, '.', '_', '+' and '-'"
    return None


def render_name(
    template: str | None, *, tag: str, leg: str, backend: str, os_name: str, family: str | None
) -> str:
    """The bundle's file name: the template filled in, plus ``.zip`` (Windows) or ``.tar.gz``."""
    stem = (template or DEFAULT_TEMPLATE).format(
        tag=tag,
        os_label=OS_LABELS.get(os_name, os_name),
        variant=variant_of(backend, os_name, family),
        backend=backend,
        family=family or "",
        leg=leg,
    )
    return f"{stem}.{'zip' if os_name == 'windows' else 'tar.gz'}"


def glibc_problem(value: str) -> str | None:
    """Why ``value`` is not a glibc version like '2.35', or None."""
    return None if re.match(r"^2\.\d+$", value) else "a glibc version like '2.35'"
