"""A sheriff-like client over HTTP only: the ground truth is recoverable by retriggering."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import jsone
import taskcluster

from sheriff.sim.scenario import Scenario
from sheriff.sim.server import SimServer

_VARYING = re.compile(r"0x[0-9a-f]+|/tmp/\S+|\d+")


def _normalise(line: str) -> str:
    return _VARYING.sub("N", line)


def _lines(th: httpx.Client, task_id: str) -> set[str]:
    body = th.get("/api/jobs/", params={"task_id": task_id}).json()
    jobs = [dict(zip(body["job_property_names"], row, strict=True)) for row in body["results"]]
    job = max(jobs, key=lambda j: j["retry_id"])
    suggestions = th.get(f"/api/project/autoland/jobs/{job['id']}/bug_suggestions/").json()
    return {
        _normalise(s["search"]) for s in suggestions if s["search"].startswith("TEST-UNEXPECTED-")
    }


def test_retriggers_reproduce_regressions_and_not_intermittents(tiny: Scenario) -> None:
    options: dict[str, Any] = {
        "credentials": {"clientId": "sheriff-dev", "accessToken": "sheriff-dev-token"}
    }
    with SimServer(tiny) as sim, httpx.Client(base_url=sim.root_url) as th:
        options["rootUrl"] = sim.root_url
        queue, index = taskcluster.Queue(options), taskcluster.Index(options)
        hooks = taskcluster.Hooks(options)
        sim.advance(120)
        cases: dict[str, tuple[str, set[str]]] = {}
        pushes = th.get("/api/project/autoland/push/", params={"count": 50}).json()["results"]
        for push in pushes:
            path = f"gecko.v2.autoland.revision.{push['revision']}.taskgraph.decision"
            decision = index.findTask(path)["taskId"]
            tasks = queue.listTaskGroup(decision)["tasks"]
            failed = [
                t
                for t in tasks
                if t["status"]["state"] == "failed"
                and t["task"]["tags"]["kind"] == "test"
                and any(
                    a["name"].endswith("_errorsummary.log")
                    for a in queue.listLatestArtifacts(t["status"]["taskId"])["artifacts"]
                )
            ]
            if not failed:
                continue
            actions = th.get(queue.getLatestArtifact(decision, "public/actions.json")["url"]).json()
            action = next(a for a in actions["actions"] if a["name"] == "retrigger-multiple")
            labels = sorted({t["task"]["metadata"]["name"] for t in failed})
            context = {
                "taskGroupId": decision,
                "taskId": None,
                "input": {"requests": [{"tasks": labels, "times": 5}]},
            }
            hooks.triggerHook(
                action["hookGroupId"],
                action["hookId"],
                jsone.render(action["hookPayload"], context),
            )
            for t in failed:
                cases[t["status"]["taskId"]] = (t["task"]["metadata"]["name"], set())
        sim.advance(6 * 60)  # every retrigger has run and been parsed
        for group in {t.push.decision_task_id for t in sim.world.tasks.values()}:
            for entry in queue.listTaskGroup(group)["tasks"]:
                task = entry["task"]
                if (
                    task["tags"].get("action") == "retrigger-multiple-task"
                    and entry["status"]["state"] != "pending"
                ):
                    for case_id, (label, seen) in cases.items():
                        same_push = sim.world.tasks[case_id].push.decision_task_id == group
                        if label == task["metadata"]["name"] and same_push:
                            seen.add(entry["status"]["taskId"])
        truth = httpx.get(f"{sim.root_url}/__sim__/truth").json()["cases"]
        verdicts: dict[str, str] = {}
        for case_id, (_, retriggers) in cases.items():
            assert len(retriggers) == 5
            original = _lines(th, case_id)
            reproduced = sum(1 for r in retriggers if original & _lines(th, r))
            verdicts[case_id] = "regression" if reproduced >= 2 else "intermittent"
        assert verdicts
        for case_id, verdict in verdicts.items():
            if truth[case_id]["truth"] == "regression":
                assert verdict == "regression"  # fail_rate 1.0: every retrigger fails the same way
        wrong = [
            c
            for c, v in verdicts.items()
            if v == "regression" and truth[c]["truth"] != "regression"
        ]
        assert len(wrong) <= len(verdicts) // 4  # flaky tests with high rates may reproduce
        assert json.loads(json.dumps(sim.stats()))["taskcluster"] > 0
