"""The records of the last nights, from the nightly's Actions artifacts: the I/O edge of ``report --history``.

Every leg job uploads ``record-<leg>`` (its ``record.json`` and ccache's log)
as an artifact of its run. ``GET .../actions/workflows/{file}/runs`` lists
the nightly's runs newest first; ``GET .../actions/runs/{id}/artifacts`` a
run's artifacts; ``GET .../actions/artifacts/{id}/zip`` answers with a
redirect to the zip (``requests`` drops the token when it leaves the API's
host). What is read is bounded: an artifact past :data:`MAX_ARTIFACT_BYTES`, or
a record past :data:`MAX_RECORD_BYTES`, is refused, never loaded whole.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

from pipeline.errors import GitHubError
from pipeline.github.limits import GITHUB_PER_PAGE as PER_PAGE
from pipeline.github.rest import RestClient
from pipeline.report.history import Night
from pipeline.results.record import RECORD_NAME, LegRecord, record_problem
from pipeline.util import json_text

RECORD_ARTIFACT_PREFIX = "record-"
MAX_ARTIFACT_BYTES = 32 * 1024 * 1024
MAX_RECORD_BYTES = 4 * 1024 * 1024


class HistoryClient(RestClient):
    """A repository's workflow runs and their record artifacts, as far as a history needs them."""

    permission = "actions: read"
    user_agent = "llama-pipeline-report"

    def completed_runs(self, workflow: str) -> Iterator[dict[str, Any]]:
        """The workflow's finished runs, newest first (GitHub's order)."""
        url = f"{self.repo_url}/actions/workflows/{quote(workflow, safe='')}/runs?status=completed&per_page={PER_PAGE}"
        for run in self._items(url, key="workflow_runs"):
            if not isinstance(run, dict) or not isinstance(run.get("id"), int):
                raise GitHubError(f"GET runs of {workflow}: malformed run: no integer 'id'")
            yield run

    def record_artifacts(self, run_id: int) -> list[dict[str, Any]]:
        """The run's unexpired ``record-<leg>`` artifacts."""
        found = []
        for item in self._items(
            f"{self.repo_url}/actions/runs/{run_id}/artifacts?per_page={PER_PAGE}", key="artifacts"
        ):
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("id"), int)
                or not isinstance(item.get("name"), str)
            ):
                raise GitHubError(
                    f"GET artifacts of run {run_id}: malformed artifact: no integer 'id' and 'name'"
                )
            if item["name"].startswith(RECORD_ARTIFACT_PREFIX) and not item.get("expired"):
                found.append(item)
        return found

    def artifact_zip(self, artifact_id: int) -> bytes:
        """The artifact's zip, read up to :data:`MAX_ARTIFACT_BYTES`."""
        url = f"{self.repo_url}/actions/artifacts/{artifact_id}/zip"
        resp = self._request("GET", url, stream=True)
        data = bytearray()
        try:
            for chunk in resp.iter_content(chunk_size=1 << 16):
                data += chunk
                if len(data) > MAX_ARTIFACT_BYTES:
                    raise GitHubError(
                        f"GET {self._path(url)}: the artifact is over {MAX_ARTIFACT_BYTES >> 20} MiB: "
                        "not a leg record's"
                    )
        except OSError as exc:
            raise GitHubError(f"GET {self._path(url)}: reading the artifact failed: {exc}") from None
        finally:
            resp.close()
        return bytes(data)


def record_from_zip(data: bytes, where: str) -> LegRecord:
    """The ``record.json`` inside an artifact's zip; GitHubError naming ``where`` when it is not one."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = [i for i in archive.infolist() if i.filename.rsplit("/", 1)[-1] == RECORD_NAME]
            if not names:
                raise GitHubError(f"{where}: no {RECORD_NAME} in the artifact")
            # The size the zip states, before anything is inflated; the bytes themselves are held to it below.
            if message := json_text.too_big(names[0].file_size, where, RECORD_NAME, MAX_RECORD_BYTES):
                raise GitHubError(message)
            raw = archive.read(names[0])
    except (zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError, zlib.error, ValueError) as exc:
        # Every way a member fails to read is a broken artifact: encrypted (RuntimeError), a compression method
        # zipfile lacks (NotImplementedError), a corrupt deflate stream (zlib.error), a bad header (ValueError).
        raise GitHubError(f"{where}: not a readable zip of a record: {exc}") from None
    try:
        payload = json_text.loads(
            raw, where=where, what=RECORD_NAME, error=GitHubError, limit=MAX_RECORD_BYTES
        )
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GitHubError(f"{where}: {RECORD_NAME} is not JSON: {exc}") from None
    if not isinstance(payload, dict) or (problem := record_problem(payload)):
        raise GitHubError(
            f"{where}: not a leg record: {problem if isinstance(payload, dict) else 'not an object'}"
        )
    return LegRecord.from_json(payload)


def night_label(run: dict[str, Any]) -> str:
    """``2026-11-30 #412``: the run's start date and its number (or id)."""
    started = str(run.get("run_started_at") or run.get("created_at") or "")[:10] or "?"
    number = run.get("run_number") if isinstance(run.get("run_number"), int) else run["id"]
    return f"{started} #{number}"


def fetch_nights(
    client: HistoryClient, workflow: str, count: int, *, on_night: Callable[[str], None] = lambda line: None
) -> list[Night]:
    """The last ``count`` finished runs that left records, oldest first.

    A past night's record that cannot be read is left out and said (``on_night``): one broken
    artifact must not hide two weeks of history. A malformed API answer is an error.
    """
    nights: list[Night] = []
    for run in client.completed_runs(workflow):
        if len(nights) >= count:
            break
        records = []
        for artifact in client.record_artifacts(run["id"]):
            where = f"run {run['id']} artifact {artifact['name']}"
            try:
                records.append(record_from_zip(client.artifact_zip(artifact["id"]), where))
            except GitHubError as err:
                on_night(f"left out: {err}")
        if records:
            label = night_label(run)
            conclusion = run.get("conclusion") if isinstance(run.get("conclusion"), str) else None
            nights.append(Night(run_id=run["id"], label=label, conclusion=conclusion, records=tuple(records)))
            on_night(
                f"{label}: {len(records)} record{'' if len(records) == 1 else 's'} ({conclusion or 'no conclusion'})"
            )
    return nights[::-1]
