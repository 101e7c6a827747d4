"""Ground truth of a world: what each failed original run really was, and each culprit."""

from __future__ import annotations

from typing import Any

from sheriff.sim import draws
from sheriff.sim.entities import Task
from sheriff.sim.world import World


def case_truth(task: Task) -> str:
    """`regression`, `intermittent` or `infra` for a task whose last run failed."""
    run = task.runs[-1]
    if run.outcome.infra or run.state == "exception":
        return "infra"
    if any(f.regression is not None for f in run.outcome.failures):
        return "regression"
    return "intermittent"


def ground_truth(world: World) -> dict[str, Any]:
    """Every failed original test run (a case, keyed by task id) and every regression."""
    cases: dict[str, Any] = {}
    for task in world.tasks.values():
        if task.kind != "test" or task.action is not None:
            continue
        if task.state not in ("failed", "exception"):
            continue
        run = task.runs[-1]
        cases[task.task_id] = {
            "truth": case_truth(task),
            "push": task.push.revision,
            "push_index": task.push.index,
            "label": task.label,
            "state": task.state,
            "run_id": run.run_id,
            "infra": run.outcome.infra or ("exception" if run.state == "exception" else None),
            "classified": task.classified,
            "failures": [
                {
                    "test": f.test,
                    "cause": "intermittent" if f.regression is None else "regression",
                    "regression": f.regression,
                }
                for f in run.outcome.failures
            ],
        }
    regressions = []
    for i, regression in enumerate(world.scenario.regressions):
        regressions.append(
            {
                "index": i,
                "culprit_push": regression.push,
                "culprit_revision": draws.revision(world.seed, "push", regression.push),
                "fixed_at": regression.fixed_at,
                "tests": sorted(t for ts in world.catalog.regressed[i].values() for t in ts),
                "platforms": regression.platforms,
                "fail_rate": regression.fail_rate,
                "failure": regression.failure,
                # Regressed tests that were flaky before it (a flaky test got worse).
                "flaky_tests": sorted(
                    t
                    for ts in world.catalog.regressed[i].values()
                    for t in ts
                    if t in world.catalog.flaky_tests
                ),
            }
        )
    storms = [storm.model_dump() for storm in world.scenario.storms]
    return {
        "scenario": world.scenario.name,
        "cases": cases,
        "regressions": regressions,
        "storms": storms,
    }
