"""The load left for people, counted on the simulator's side (what Treeherder holds).

Every failed test job (result `testfailed`), originals and the runs actions created, is
scored by the classification it shows at the end against what really failed it:

- `none`: no automation at all: a job counts as left for people unless a person
  classified it.
- `treeherder`: Treeherder's own automatic marking (8, `intermittents.py`) and mozci's
  7 count as classified: the baseline classifier.
- with a sheriff writing back, its notes count too (the same view as `treeherder`).

Alerts are the Matrix messages the simulator's room received, matched to the true
regressions whose culprit revision or failing tests they name.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sheriff.sim.entities import Job
from sheriff.sim.world import World

UNCLASSIFIED = (1, 6)
INTERMITTENT = (4, 7, 8)


def job_truth(job: Job) -> str:
    run = job.task.runs[job.run_id]
    if run.outcome.infra:
        return "infra"
    if any(f.regression is not None for f in run.outcome.failures):
        return "regression"
    return "intermittent"


def _failed_test_jobs(world: World) -> list[Job]:
    out = []
    for job in world.jobs.values():
        task = job.task
        if task.kind != "test" or job.state != "completed":
            continue
        if task.runs[job.run_id].state != "failed":
            continue
        out.append(job)
    return out


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def load_left(
    world: World,
    alerts: list[dict[str, Any]] | None = None,
    queue_prefixes: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The figures of docs/simulator.md's "load left for people"; with `queue_prefixes`,
    `views.in_scope` is Treeherder's view of the jobs on those queues only (what a
    sheriff configured to triage them answers for)."""
    from sheriff.sim.tasks import task_queue_id

    with world.lock:
        jobs = _failed_test_jobs(world)
        in_scope = {
            j.job_id for j in jobs if task_queue_id(world, j.task).startswith(queue_prefixes)
        }
        pushes = max(1, len(world.pushes))
        truths = {j.job_id: job_truth(j) for j in jobs}
        by_action = {j.job_id: j.task.action is not None for j in jobs}
        views: dict[str, Any] = {}
        for view in ("none", "treeherder", "in_scope_none", "in_scope"):
            scoped = view.startswith("in_scope")
            if scoped and not queue_prefixes:
                continue
            scope = [j for j in jobs if not scoped or j.job_id in in_scope]
            if view.endswith("none"):
                left = [j for j in scope if j.classified_by != "person"]
                auto: list[Job] = []
            else:
                left = [j for j in scope if j.classification in UNCLASSIFIED]
                auto = [j for j in scope if j.classified_by not in (None, "person")]
            intermittent = [j for j in scope if truths[j.job_id] == "intermittent"]
            regression = [j for j in scope if truths[j.job_id] == "regression"]
            auto_ids = {j.job_id for j in auto}
            views[view] = {
                "failed_jobs": len(scope),
                "unclassified": len(left),
                "unclassified_per_push": round(len(left) / pushes, 2),
                "unclassified_from_actions": sum(by_action[j.job_id] for j in left),
                "intermittent_classified_automatically": _ratio(
                    sum(
                        j.job_id in auto_ids and j.classification in INTERMITTENT
                        for j in intermittent
                    ),
                    len(intermittent),
                ),
                "regression_jobs_classified_intermittent": sum(
                    j.job_id in auto_ids and j.classification in INTERMITTENT for j in regression
                ),
                "regression_jobs_classified_intermittent_share": _ratio(
                    sum(
                        j.job_id in auto_ids and j.classification in INTERMITTENT
                        for j in regression
                    ),
                    len(regression),
                ),
            }
        wrong = Counter(
            f"{j.classified_by}:{'action' if by_action[j.job_id] else 'original'}"
            for j in jobs
            if truths[j.job_id] == "regression" and j.classification in INTERMITTENT
        )
        left_by = Counter(
            f"{truths[j.job_id]}:{'action' if by_action[j.job_id] else 'original'}"
            for j in jobs
            if j.classification in UNCLASSIFIED
        )
        written = [j for j in jobs if j.api_notes]
        written_counts: Counter[str] = Counter()
        for j in written:
            written_counts[f"{truths[j.job_id]}->{j.api_notes[-1][3]}"] += 1
        out = {
            "failed_jobs": len(jobs),
            "failed_jobs_from_actions": sum(by_action.values()),
            "truth": dict(Counter(truths.values())),
            "views": views,
            "written_back": {"jobs": len(written), "truth_to_classification": dict(written_counts)},
            "regression_as_intermittent_by": dict(wrong),
            "unclassified_sample": [
                {
                    "job_id": j.job_id,
                    "label": j.task.label,
                    "push": j.task.push.index,
                    "action": j.task.action,
                    "truth": truths[j.job_id],
                    "classification": j.classification,
                }
                for j in jobs
                if j.classification in UNCLASSIFIED
            ][:20],
            "unclassified_by_truth": dict(left_by),
            "overwritten_person": sum(
                1 for j in jobs if j.note is not None and j.api_notes and _after(j)
            ),
        }
    out["alerts"] = score_alerts(world, alerts or [])
    return out


def _after(job: Job) -> bool:
    """A note written through the API after a person's classification (overwriting it)."""
    assert job.note is not None
    return any(when > job.note[2] for _, _, when, _ in job.api_notes)


def score_alerts(world: World, alerts: list[dict[str, Any]]) -> dict[str, Any]:
    """Alerts (Matrix messages with sheriff's `regression_id` and `event`) per true
    regression: matched by the culprit revision or a failing test they name."""
    from sheriff.sim.truth import ground_truth

    truth = ground_truth(world)["regressions"]
    confirmed: dict[Any, set[int]] = {}
    unmatched = 0
    for alert in alerts:
        content = alert.get("content", {})
        body = str(content.get("body", ""))
        if content.get("sheriff_event") != "confirmed":
            continue
        hits = {
            r["index"]
            for r in truth
            if r["culprit_revision"][:12] in body or any(t in body for t in r["tests"])
        }
        key = content.get("sheriff_regression")
        if not hits:
            unmatched += 1
        confirmed.setdefault(key, set()).update(hits)
    per_truth: Counter[int] = Counter()
    for hits in confirmed.values():
        for index in hits:
            per_truth[index] += 1
    found = [r["index"] for r in truth if per_truth[r["index"]]]
    return {
        "messages": len(alerts),
        "regressions_alerted": len(confirmed),
        "true_regressions_alerted": len(found),
        "alerts_per_true_regression": {str(i): per_truth[i] for i in found},
        "alerts_for_no_true_regression": unmatched,
    }
