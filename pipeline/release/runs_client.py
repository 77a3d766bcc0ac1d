"""A workflow run's jobs and their annotations, and re-running its failed jobs: the I/O edge of ``retry``.

``GET /repos/{o}/{r}/actions/runs/{id}`` (its attempt and conclusion),
``GET .../runs/{id}/jobs?filter=latest`` (paged; each job is also a check
run, whose annotations carry GitHub's own messages such as "The hosted
runner lost communication with the server"), ``GET
/repos/{o}/{r}/check-runs/{job_id}/annotations`` and ``POST
.../runs/{id}/rerun-failed-jobs``.
"""

from __future__ import annotations

from typing import Any

from pipeline.errors import GitHubError
from pipeline.github.limits import GITHUB_PER_PAGE as PER_PAGE
from pipeline.github.rest import RestClient, _json_body
from pipeline.release.rerun_decision import JobSeen


class RunsClient(RestClient):
    """The Actions runs of one repository, as far as one retry needs them."""

    permission = "actions: write"
    user_agent = "llama-pipeline-retry"

    def run(self, run_id: int) -> dict[str, Any]:
        """The run: ``run_attempt``, ``conclusion``, ``name``, ``html_url``."""
        url = f"{self.repo_url}/actions/runs/{run_id}"
        data = _json_body(self._request("GET", url), f"GET {self._path(url)}")
        if not isinstance(data, dict) or not isinstance(data.get("run_attempt"), int):
            raise GitHubError(f"GET {self._path(url)}: malformed run: no integer 'run_attempt'")
        return data

    def jobs(self, run_id: int) -> list[tuple[int, JobSeen]]:
        """(check run id, job) for every job of the run's latest attempt."""
        found: list[tuple[int, JobSeen]] = []
        for item in self._items(
            f"{self.repo_url}/actions/runs/{run_id}/jobs?filter=latest&per_page={PER_PAGE}", key="jobs"
        ):
            if not isinstance(item, dict) or not isinstance(item.get("id"), int):
                raise GitHubError(f"GET jobs of run {run_id}: malformed job: no integer 'id'")
            raw_steps = item.get("steps") or []
            if not isinstance(raw_steps, list):
                raise GitHubError(
                    f"GET jobs of run {run_id}: malformed job {item['id']}: 'steps' is not a list"
                )
            steps = tuple((str(s.get("name", "?")), _conclusion(s, f"step of job {item['id']}", run_id))
                          for s in raw_steps if isinstance(s, dict))  # fmt: skip
            found.append(
                (
                    item["id"],
                    JobSeen(
                        name=str(item.get("name", item["id"])),
                        conclusion=_conclusion(item, f"job {item['id']}", run_id),
                        steps=steps,
                    ),
                )
            )
        return found

    def annotations(self, check_run_id: int) -> tuple[str, ...]:
        """The messages GitHub and the steps wrote on one job (its check run)."""
        url = f"{self.repo_url}/check-runs/{check_run_id}/annotations?per_page={PER_PAGE}"
        return tuple(str(a.get("message", "")) for a in self._items(url) if isinstance(a, dict))

    def rerun_failed_jobs(self, run_id: int, *, attempt: int) -> None:
        """Re-run the failed jobs of run ``run_id``, seen at ``attempt``: once, even when an answer is lost.

        A re-run that went through makes the run's ``run_attempt`` grow: that is what is looked
        for before the POST is sent again.
        """

        def rerun_started() -> bool | None:
            return True if int(self.run(run_id)["run_attempt"]) > attempt else None

        self._create("POST", f"{self.repo_url}/actions/runs/{run_id}/rerun-failed-jobs", json={},
                     answer=lambda resp: True, made=rerun_started)  # fmt: skip


def _conclusion(item: dict[str, Any], what: str, run_id: int) -> str | None:
    """A job's or step's ``conclusion``: a string, or null while it runs; anything else is a malformed answer."""
    value = item.get("conclusion")
    if value is not None and not isinstance(value, str):
        raise GitHubError(f"GET jobs of run {run_id}: malformed {what}: 'conclusion' is not a string")
    return value
