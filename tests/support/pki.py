"""A throwaway public-key infrastructure for the signing tests, made with the openssl command line.

One root CA (valid 2024 to 2040) issues: the release's code-signing
certificate, an expired one of the same subject (valid in 2025 only), one of
another publisher, and a timestamp authority's (valid 2025 to 2035). A second,
unrelated root issues a certificate of the release's subject: a signature
from it names the right publisher and still must not verify. Each code-signing
certificate comes as a PKCS#12 file with its chain, as a signer holds it.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

PASSWORD = "test-pfx-password-0123"
PUBLISHER = "Llama Test Publisher"
OTHER_PUBLISHER = "Someone Else"

_EXTENSIONS = """\
[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[codesign]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = codeSigning
[tsa]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = critical,timeStamping
"""


@dataclass(frozen=True)
class Pki:
    root: Path
    # The release's root (PEM): what --signing-ca names.
    ca: Path
    publisher_pfx: Path
    expired_pfx: Path
    other_publisher_pfx: Path
    # The release's subject, issued by the unrelated root.
    foreign_pfx: Path
    # The timestamp authority: its certificate chain (PEM) and key, for osslsigncode's -TSA-* options.
    tsa_chain: Path
    tsa_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, text=True)


class _Ca:
    """One certificate authority, signing with ``openssl ca`` (the only command that takes explicit dates)."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        folder.mkdir(parents=True)
        (folder / "index.txt").write_text("")
        (folder / "serial").write_text("1000\n")
        (folder / "ext.cnf").write_text(_EXTENSIONS)
        (folder / "ca.cnf").write_text(
            f"[ca]\ndefault_ca = this\n[this]\ndir = {folder}\ndatabase = $dir/index.txt\nserial = $dir/serial\n"
            "new_certs_dir = $dir\ndefault_md = sha256\npolicy = any\ncopy_extensions = none\nunique_subject = no\n"
            "[any]\ncommonName = supplied\norganizationName = optional\n"
        )
        self.key, self.cert = folder / "ca.key", folder / "ca.pem"
        self._request("ca", f"/CN={name}")
        self._issue("ca", "ca", self.cert, "20240101000000Z", "20400101000000Z", self_sign=True)

    def _request(self, name: str, subject: str) -> Path:
        _openssl(
            "req",
            "-new",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            subject,
            "-config",
            "ext.cnf",
            cwd=self.folder,
        )
        return self.folder / f"{name}.csr"

    def _issue(
        self, name: str, extensions: str, out: Path, start: str, end: str, *, self_sign: bool = False
    ) -> None:
        signer = ["-selfsign"] if self_sign else ["-cert", str(self.cert)]
        _openssl(
            "ca",
            "-batch",
            "-config",
            "ca.cnf",
            *signer,
            "-keyfile",
            str(self.key),
            "-in",
            f"{name}.csr",
            "-out",
            str(out),
            "-startdate",
            start,
            "-enddate",
            end,
            "-extfile",
            "ext.cnf",
            "-extensions",
            extensions,
            cwd=self.folder,
        )

    def code_signing(
        self, name: str, subject: str, start: str = "20240101000000Z", end: str = "20390101000000Z"
    ) -> Path:
        """A code-signing certificate as a PKCS#12 file with the CA's certificate in its chain."""
        self._request(name, subject)
        cert = self.folder / f"{name}.pem"
        self._issue(name, "codesign", cert, start, end)
        pfx = self.folder / f"{name}.pfx"
        _openssl(
            "pkcs12",
            "-export",
            "-out",
            str(pfx),
            "-inkey",
            f"{name}.key",
            "-in",
            str(cert),
            "-certfile",
            str(self.cert),
            "-passout",
            f"pass:{PASSWORD}",
            cwd=self.folder,
        )
        return pfx

    def timestamp_authority(self) -> tuple[Path, Path]:
        self._request("tsa", "/CN=Llama Test Timestamps")
        cert = self.folder / "tsa.pem"
        self._issue("tsa", "tsa", cert, "20250101000000Z", "20350101000000Z")
        chain = self.folder / "tsa-chain.pem"
        chain.write_bytes(cert.read_bytes() + self.cert.read_bytes())
        return chain, self.folder / "tsa.key"


def make_pki(root: Path) -> Pki:
    release = _Ca(root / "release-ca", "Llama Test Root")
    other = _Ca(root / "other-ca", "Other Root")
    tsa_chain, tsa_key = release.timestamp_authority()
    return Pki(
        root=root,
        ca=release.cert,
        publisher_pfx=release.code_signing("publisher", f"/CN={PUBLISHER}/O=Llama Tests"),
        expired_pfx=release.code_signing(
            "expired", f"/CN={PUBLISHER}/O=Llama Tests", "20250101000000Z", "20251231000000Z"
        ),
        other_publisher_pfx=release.code_signing("other-publisher", f"/CN={OTHER_PUBLISHER}"),
        foreign_pfx=other.code_signing("foreign", f"/CN={PUBLISHER}/O=Llama Tests"),
        tsa_chain=tsa_chain,
        tsa_key=tsa_key,
    )


def sign(path: Path, pfx: Path, *, tsa: tuple[Path, Path, int] | None = None) -> None:
    """Sign ``path`` in place with osslsigncode, as a signer outside the pipeline would (the workflow's step);
    ``tsa``: (chain, key, unix time) of an RFC 3161 timestamp made offline at that time."""
    password = pfx.with_suffix(".password")
    password.write_text(PASSWORD)
    signed = path.with_name(path.name + ".signed")
    stamp = ["-TSA-certs", str(tsa[0]), "-TSA-key", str(tsa[1]), "-TSA-time", str(tsa[2])] if tsa else []
    subprocess.run(
        [
            "osslsigncode",
            "sign",
            "-pkcs12",
            str(pfx),
            "-readpass",
            str(password),
            "-h",
            "sha256",
            "-n",
            "llama.cpp",
            *stamp,
            "-in",
            str(path),
            "-out",
            str(signed),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    signed.replace(path)
