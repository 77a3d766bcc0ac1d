"""Authenticode signatures on a Windows bundle's programs and libraries: signed and verified with osslsigncode.

osslsigncode (Debian's ``osslsigncode``) is the one tool both ways on Linux
and macOS: ``sign`` with a PKCS#12 file (the local signer of docs/signing.md)
and ``verify``, which checks the file's digest against the signature, the
certificate chain against the trusted roots (the system's, or the PEM file a
setting names) and an RFC 3161 timestamp when the file carries one: an
expired certificate verifies only with a timestamp from its days of
validity. On Windows (the runners that pack a signed leg) the verifier is
Windows' own, PowerShell's ``Get-AuthenticodeSignature``, against the
machine's trust store. Python's Authenticode library (signify) was the first choice; its
oscrypto cannot load OpenSSL 3.0.10 and later (Debian 12 has 3.0.22), so it
would fail on the runners this project names. Nothing here parses ASN.1.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import BundleError, ToolchainError
from pipeline.processes.groups import run_child

TOOL = "osslsigncode"
# The files Authenticode signs in a bundle: its programs and libraries.
PE_SUFFIXES = (".exe", ".dll")

_SUBJECT = re.compile(r"Signer's certificate:\s*-+\s*Signer #0:\s*Subject: (?P<subject>[^\n]*)")
_CN = re.compile(r"(?:^|/)CN=(?P<cn>[^/]*)")
_TIMESTAMP = re.compile(r"Timestamp time: (?P<when>[^\n]*)")
_ERROR = re.compile(r"^\s*Error: (?P<why>[^\n]*)", re.MULTILINE)


@dataclass(frozen=True, kw_only=True)
class PeSignature:
    """What osslsigncode says of one file's signature."""

    file: str
    signed: bool
    verified: bool
    # The signing certificate's subject (``/CN=.../O=...``) and its common name, when the file is signed.
    subject: str | None = None
    publisher: str | None = None
    # When the signature carries an RFC 3161 timestamp: its time, as osslsigncode prints it.
    timestamp: str | None = None
    # Why it did not verify, in a few words.
    reason: str | None = None

    def problem(self, publisher: str | None) -> str | None:
        """The one phrase refusing this file, or None: unsigned, not verified, or signed by someone other than
        ``publisher`` (None: any verified signer)."""
        if not self.signed:
            return "not signed"
        if not self.verified:
            return f"its signature does not verify: {self.reason or 'osslsigncode verify failed'}"
        if publisher is not None and self.publisher != publisher:
            return f"signed by {self.publisher!r}, not by the release's publisher {publisher!r}"
        return None

    def line(self) -> str:
        """How verify reports it: the signer, and whether it verified."""
        if not self.signed:
            return f"{self.file}: not signed"
        stamp = f", timestamped {self.timestamp}" if self.timestamp else ""
        state = "verified" if self.verified else f"NOT verified ({self.reason})"
        return f"{self.file}: signed by {self.publisher or self.subject}{stamp}: {state}"


def is_pe_name(name: str) -> bool:
    return name.lower().endswith(PE_SUFFIXES)


def find_osslsigncode(environ: Mapping[str, str]) -> Path:
    found = shutil.which(TOOL, path=environ.get("PATH"))
    if found is None:
        raise ToolchainError(
            f"{TOOL} not found on PATH: it signs and verifies the Windows bundles' Authenticode "
            "signatures (Debian: apt install osslsigncode; Windows: MSYS2's osslsigncode)"
        )
    return Path(found)


def _reason(output: str) -> str:
    if "MISMATCH" in output:
        return "the file changed after it was signed (its digest is not the signed one)"
    errors = [m.group("why").strip() for m in _ERROR.finditer(output)]
    if any("not found in local repository" in e or "unable to get local issuer" in e for e in errors):
        return "its certificate does not chain to a trusted root"
    return errors[0] if errors else "osslsigncode verify failed"


def verify_pe(path: Path, *, name: str, trusted: Path | None, environ: Mapping[str, str]) -> PeSignature:
    """``osslsigncode verify`` on one file; ``trusted``: a PEM file of the roots to trust (else the system's),
    for the signer's chain and the timestamp authority's alike. On Windows, Windows' own check."""
    if sys.platform == "win32":
        return _verify_on_windows(path, name=name, environ=environ)
    command = [str(find_osslsigncode(environ)), "verify"]
    if trusted is not None:
        command += ["-CAfile", str(trusted), "-TSA-CAfile", str(trusted)]
    proc = run_child(
        [*command, "-in", str(path)], env=dict(environ), capture_output=True, text=True, timeout=300
    )
    output = proc.stdout + proc.stderr
    if "No signature found" in output:
        return PeSignature(file=name, signed=False, verified=False)
    subject = match.group("subject").strip() if (match := _SUBJECT.search(output)) else None
    cn = found.group("cn") if subject and (found := _CN.search(subject)) else None
    stamp = match.group("when").strip() if (match := _TIMESTAMP.search(output)) else None
    verified = proc.returncode == 0 and "Signature verification: ok" in output
    return PeSignature(
        file=name,
        signed=True,
        verified=verified,
        subject=subject,
        publisher=cn,
        timestamp=stamp,
        reason=None if verified else _reason(output),
    )


# Get-AuthenticodeSignature's Status for a file that carries no signature.
_WINDOWS_UNSIGNED = "NotSigned"


def _verify_on_windows(path: Path, *, name: str, environ: Mapping[str, str]) -> PeSignature:
    """PowerShell's ``Get-AuthenticodeSignature``: Status ``Valid`` or why not, and the signer's subject. Not run
    here (no Windows): the Windows runner's check of a signed leg."""
    script = (
        "$s = Get-AuthenticodeSignature -LiteralPath $env:PE_FILE; "
        '[pscustomobject]@{Status = "$($s.Status)"; Message = $s.StatusMessage; '
        "Subject = $s.SignerCertificate.Subject; Stamped = [bool]$s.TimeStamperCertificate} | ConvertTo-Json"
    )
    proc = run_child(
        ["powershell", "-NoProfile", "-NonInteractive", "-Command", script],
        env={**environ, "PE_FILE": str(path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise BundleError(
            f"{name}: Get-AuthenticodeSignature gave no answer: {proc.stderr.strip()[-200:]}"
        ) from None
    status, subject = str(data.get("Status")), data.get("Subject") or None
    if status == _WINDOWS_UNSIGNED:
        return PeSignature(file=name, signed=False, verified=False)
    cn = next((part.strip()[3:] for part in str(subject).split(",") if part.strip().startswith("CN=")), None)
    return PeSignature(
        file=name,
        signed=True,
        verified=status == "Valid",
        subject=subject,
        publisher=cn,
        timestamp="yes" if data.get("Stamped") else None,
        reason=None if status == "Valid" else f"{status}: {data.get('Message')}",
    )


def verify_tree(root: Path, *, trusted: Path | None, environ: Mapping[str, str]) -> list[PeSignature]:
    """Every program and library under ``root`` (an unpacked bundle), by its path in the bundle."""
    return [
        verify_pe(path, name=path.relative_to(root).as_posix(), trusted=trusted, environ=environ)
        for path in pe_files(root)
    ]


def pe_files(root: Path) -> list[Path]:
    """The programs and libraries under ``root``, sorted; links are not followed (a bundle's are not PE files)."""
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and is_pe_name(p.name))


@dataclass(frozen=True, kw_only=True)
class LocalSigner:
    """The local signer: a PKCS#12 file (certificate and key) and its password, osslsigncode ``sign``."""

    pfx: Path
    password: str
    description: str
    # An RFC 3161 timestamp authority: signatures that outlive their certificate.
    timestamp_url: str | None = None


def sign_files(files: Sequence[Path], signer: LocalSigner, *, environ: Mapping[str, str]) -> None:
    """Sign each file in place (a signed copy replaces it only once osslsigncode succeeded)."""
    tool = str(find_osslsigncode(environ))
    if not signer.pfx.is_file():
        raise BundleError(f"signing: {signer.pfx}: no such PKCS#12 file")
    with tempfile.TemporaryDirectory(prefix="sign-") as scratch:
        # The password goes in a file of this process's own folder, never on a command line.
        secret = Path(scratch) / "password"
        secret.touch(mode=0o600)
        secret.write_text(signer.password, encoding="utf-8")
        for path in files:
            signed = path.with_name(path.name + ".signed")
            command = [
                tool,
                "sign",
                "-pkcs12",
                str(signer.pfx),
                "-readpass",
                str(secret),
                "-h",
                "sha256",
                "-n",
                signer.description,
                "-in",
                str(path),
                "-out",
                str(signed),
            ]
            if signer.timestamp_url:
                command += ["-ts", signer.timestamp_url]
            proc = run_child(command, env=dict(environ), capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                signed.unlink(missing_ok=True)
                detail = (proc.stderr or proc.stdout).strip().splitlines()
                raise BundleError(
                    f"signing {path.name}: osslsigncode failed: {detail[-1] if detail else proc.returncode}"
                )
            signed.replace(path)
