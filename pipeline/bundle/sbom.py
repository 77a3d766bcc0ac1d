"""A bundle's software bill of materials: CycloneDX 1.6 JSON, made from its manifest (pure).

What it lists:

- the bundle itself (``metadata.component``) and the llama.cpp component it
  was built from: tag, commit, MIT license, repository;
- every file of the bundle (programs, libraries, licenses, the manifest) as
  a ``file`` component with its sha256, named by its bundle path; a symlink
  names its target instead;
- every third-party file (copied from the toolchain) as a ``library``
  component, with where it came from: the toolchain archive or wheel and its
  sha256, the version when the toolchain states it, and its license (the
  declared one, else the license files the bundle carries for it).

Every component that stands for a bundle file carries the property
``llama-pipeline:path``: ``verify`` compares a bundle against exactly those.
The SBOM is the same for the same manifest: its serial number is derived
from the manifest's sha256, and it carries no timestamp. It travels inside
the bundle (``sbom.cdx.json``, beside ``manifest.json``; it does not list
itself) and beside it on the release (``<bundle>`` + :data:`pipeline.names.SBOM_SUFFIX`).
"""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cyclonedx.model import ExternalReference, ExternalReferenceType, HashAlgorithm, HashType, Property, XsUri
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.model.license import DisjunctiveLicense, LicenseExpression
from cyclonedx.output.json import JsonV1Dot6

from pipeline.errors import BundleError
from pipeline.names import SBOM_NAME as SBOM_NAME
from pipeline.util import json_text

PATH_PROPERTY = "llama-pipeline:path"
SYMLINK_PROPERTY = "llama-pipeline:symlink"
# A signed program or library: the common name of its Authenticode signature's certificate.
SIGNED_BY_PROPERTY = "llama-pipeline:signed-by"
# llama.cpp's own license (its LICENSE file): the MIT license.
LLAMA_CPP_LICENSE = "MIT"
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "llama-pipeline:sbom")


@dataclass(frozen=True, kw_only=True)
class SbomFile:
    """One bundle file as an SBOM lists it: its sha256, or its symlink target."""

    path: str
    sha256: str | None = None
    link: str | None = None


def _hash(digest: str) -> list[HashType]:
    return [HashType(alg=HashAlgorithm.SHA_256, content=digest)]


def _llama_cpp(manifest: Mapping[str, Any]) -> Component:
    source = manifest.get("source") or {}
    tag = str(manifest.get("tag") or "")
    props = (
        [Property(name="llama-pipeline:commit", value=str(source["commit"]))] if source.get("commit") else []
    )
    # One pull request merged onto the tag: owner/name#number@sha (the same text whatever order the
    # record or the manifest kept its keys in: a reproduced bundle's SBOM is the same bytes).
    props += [Property(name="llama-pipeline:mix", value=_mix_text(pr)) for pr in source.get("mix") or []]
    refs = (
        [ExternalReference(type=ExternalReferenceType.VCS, url=XsUri(str(source["repo"])))]
        if source.get("repo")
        else []
    )
    return Component(
        name="llama.cpp", version=tag or None, type=ComponentType.LIBRARY, bom_ref="llama.cpp",
        licenses=[LicenseExpression(LLAMA_CPP_LICENSE)], properties=props, external_references=refs,
    )  # fmt: skip


def _third_party(entry: Mapping[str, Any], file: Mapping[str, Any]) -> Component:
    path = str(entry["path"])
    props = [Property(name=PATH_PROPERTY, value=path)]
    for key in ("archive", "archive_sha256", "package"):
        if entry.get(key):
            props.append(Property(name=f"llama-pipeline:{key.replace('_', '-')}", value=str(entry[key])))
    props += [Property(name="llama-pipeline:from-toolchain", value=str(file.get("from_toolchain")))]
    props += _signed_by(file)
    props += [Property(name="llama-pipeline:license-file", value=str(f)) for f in entry.get("licenses") or []]
    declared = entry.get("declared_license")
    names = [str(declared)] if declared else [str(f) for f in entry.get("licenses") or []]
    return Component(
        name=path.rsplit("/", 1)[-1], version=str(entry["version"]) if entry.get("version") else None,
        group=str(entry["package"]) if entry.get("package") else None,
        type=ComponentType.LIBRARY, bom_ref=f"file:{path}", hashes=_hash(str(file["sha256"])),
        licenses=[DisjunctiveLicense(name=f"see {n}" if n.startswith("licenses/") else n) for n in names],
        properties=props,
    )  # fmt: skip


def _signed_by(file: Mapping[str, Any]) -> list[Property]:
    """A signed file's Authenticode signer (the manifest's ``signed_by``): the SBOM says who signed it."""
    return [Property(name=SIGNED_BY_PROPERTY, value=str(file["signed_by"]))] if file.get("signed_by") else []


def _file(file: Mapping[str, Any]) -> Component:
    path = str(file["path"])
    props = [Property(name=PATH_PROPERTY, value=path)]
    if "symlink" in file:
        props.append(Property(name=SYMLINK_PROPERTY, value=str(file["symlink"])))
    props += _signed_by(file)
    return Component(
        name=path, type=ComponentType.FILE, bom_ref=f"file:{path}",
        hashes=_hash(str(file["sha256"])) if "sha256" in file else None, properties=props,
    )  # fmt: skip


def sbom_json(
    manifest: Mapping[str, Any], *, manifest_sha256: str, manifest_name: str = "manifest.json"
) -> bytes:
    """The CycloneDX 1.6 JSON SBOM of the bundle ``manifest`` describes (its own file list, plus the manifest)."""
    bom = Bom(serial_number=uuid.uuid5(_NAMESPACE, manifest_sha256))
    name = str(manifest.get("name") or "bundle")
    leg = manifest.get("leg") or {}
    bundle = Component(
        name=name, version=str(manifest.get("tag") or "") or None, type=ComponentType.APPLICATION, bom_ref="bundle",
        properties=[Property(name=f"llama-pipeline:{k}", value=str(leg[k])) for k in ("name", "backend", "os", "arch") if leg.get(k)],
    )  # fmt: skip
    bom.metadata.component = bundle
    llama = _llama_cpp(manifest)
    bom.components.add(llama)
    third = {str(e.get("path")): e for e in manifest.get("third_party") or [] if isinstance(e, Mapping)}
    parts: list[Component] = [llama]
    for f in manifest.get("files") or []:
        component = _third_party(third[f["path"]], f) if f["path"] in third and "sha256" in f else _file(f)
        bom.components.add(component)
        parts.append(component)
    own = _file({"path": manifest_name, "sha256": manifest_sha256})
    bom.components.add(own)
    parts.append(own)
    bom.register_dependency(bundle, parts)
    with warnings.catch_warnings():
        # The library warns about components with no dependencies of their own: files have none.
        warnings.simplefilter("ignore")
        text = JsonV1Dot6(bom).output_as_string(indent=2)
    data = json.loads(text)
    # No time in it: the same manifest gives the same bytes (a bundle is reproducible).
    data.get("metadata", {}).pop("timestamp", None)
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")


def validation_error(raw: bytes) -> str | None:
    """What the CycloneDX 1.6 JSON schema says is wrong with ``raw`` (the library's own validator), or None."""
    # Here, not at the top: the validator loads jsonschema and its format checkers (seconds), which only
    # a check of an SBOM needs, not every command that imports this module.
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(raw.decode("utf-8", "replace"))
    return None if error is None else str(error)


def sbom_files(raw: bytes, where: str) -> dict[str, SbomFile]:
    """The bundle files an SBOM lists, by bundle path; BundleError naming ``where`` when it is not one of ours."""
    try:
        data = json_text.loads(raw, where=where, what="the SBOM", error=BundleError)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{where}: not a JSON SBOM: {exc}") from None
    if not isinstance(data, dict) or data.get("bomFormat") != "CycloneDX":
        raise BundleError(f"{where}: not a CycloneDX SBOM")
    try:
        error = validation_error(raw)
    except RecursionError:
        # The schema's validator walks nesting the parser still took.
        raise BundleError(f"{where}: the SBOM is nested too deep to read") from None
    if error:
        raise BundleError(f"{where}: not a valid CycloneDX 1.6 SBOM: {error.splitlines()[0]}")
    found: dict[str, SbomFile] = {}
    for component in data.get("components") or []:
        props = {
            p.get("name"): p.get("value") for p in component.get("properties") or [] if isinstance(p, dict)
        }
        path = props.get(PATH_PROPERTY)
        if not isinstance(path, str):
            continue
        digest = next(
            (h.get("content") for h in component.get("hashes") or [] if h.get("alg") == "SHA-256"), None
        )
        link = props.get(SYMLINK_PROPERTY)
        if path in found:
            # One of ours lists each file once; with two entries, either could be the one checked.
            raise BundleError(f"{where}: the SBOM lists {path} twice")
        found[path] = SbomFile(path=path, sha256=digest, link=link if isinstance(link, str) else None)
    if not found:
        raise BundleError(f"{where}: the SBOM lists no bundle files ({PATH_PROPERTY} properties)")
    return found


def _mix_text(pr: Any) -> str:
    if isinstance(pr, Mapping):
        return f"{pr.get('repo')}#{pr.get('number')}@{pr.get('sha')}"
    return str(pr)
