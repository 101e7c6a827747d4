"""Several repositories at once: one world per repository behind one root URL.

A multi-repository scenario file (docs/scenarios.md, "Several repositories") lists
repositories, each a scenario (a file or a bundled name) with fields to override:

    name: three-repositories
    repositories:
      - {scenario: autoland-day, repository: autoland}
      - {scenario: autoland-day, repository: mozilla-central, seed: 8, pushes: 60}

Each repository is its own `World` (its own seed, so its own task ids and revisions), with
Treeherder ids offset so that push and job ids are unique across all of them, as they are
in one Treeherder. `MultiApp` answers every request from the world it concerns: by the
repository in the path (`/api/project/<repo>/…`, Index paths), by the task id (Queue,
artifacts), by the push or task a `/api/jobs/` query names, by the task group an action
hook's payload names; the admin endpoints move every world's clock together.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sheriff.sim.scenario import Scenario, ScenarioError, load_scenario, parse_scenario
from sheriff.sim.world import World

# Treeherder ids of repository k: push ids 1,500,000 + k·ID_STRIDE + i; job ids k·JOB_STRIDE + n.
PUSH_STRIDE = 100_000
JOB_STRIDE = 100_000_000


class _Entry(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    scenario: str = Field(min_length=1)
    repository: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")


class MultiScenario(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    repositories: list[_Entry] = Field(min_length=1)


def is_multi(path: Path) -> bool:
    """Whether a scenario file lists repositories (else it is one scenario)."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and "repositories" in data and "pushes" not in data


def load_multi(path: str | Path) -> tuple[str, list[Scenario]]:
    """The name and the scenarios of a multi-repository file; one `ScenarioError` line."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
        multi = MultiScenario.model_validate(data)
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{path}: cannot read scenario: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ScenarioError(f"{path}: {where}: {first['msg']}") from None
    scenarios = []
    for k, entry in enumerate(multi.repositories):
        base_path = Path(entry.scenario)
        if not base_path.is_absolute() and (path.parent / base_path).exists():
            base_path = path.parent / base_path
        base = load_scenario(base_path)
        overrides = dict(entry.model_extra or {})
        data = {**base.model_dump(mode="json"), **overrides, "repository": entry.repository}
        if "seed" not in overrides:
            data["seed"] = base.seed + k  # the same base twice must not repeat its task ids
        scenarios.append(parse_scenario(data, f"{path}: repositories[{k}]"))
    names = [s.repository for s in scenarios]
    if len(set(names)) != len(names):
        raise ScenarioError(f"{path}: a repository is listed twice")
    return multi.name, scenarios


def worlds_of(scenarios: list[Scenario], listeners: list[Any] | None = None) -> list[World]:
    worlds = [
        World(s, listeners=listeners, push_id_offset=k * PUSH_STRIDE, job_id_offset=k * JOB_STRIDE)
        for k, s in enumerate(scenarios)
    ]
    starts = {w.scenario.start for w in worlds}
    if len(starts) != 1:
        raise ScenarioError("the repositories of one scenario must start at the same time")
    return worlds


class MultiApp:
    """An ASGI app over one sub-app per world (`sheriff.sim.app.create_app`)."""

    def __init__(self, name: str, worlds: list[World], apps: list[Any]) -> None:
        self.name = name
        self.worlds = worlds
        self.apps = apps
        self._by_repo = {w.scenario.repository: i for i, w in enumerate(worlds)}

    def world_of_task(self, task_id: str) -> int:
        for i, world in enumerate(self.worlds):
            if task_id in world.tasks:
                return i
        return 0  # unknown everywhere: any world answers 404 the same way

    def _world_of_push_id(self, push_id: str) -> int:
        try:
            return max(0, min(len(self.worlds) - 1, (int(push_id) - 1_500_000) // PUSH_STRIDE))
        except ValueError:
            return 0

    def _route(self, path: str, query: dict[str, list[str]], body: bytes) -> int:
        parts = path.strip("/").split("/")
        if path.startswith("/api/project/") and len(parts) > 2:
            return self._by_repo.get(parts[2], 0)
        if path.startswith("/api/index/v1/task/") and len(parts) > 4:
            namespace = parts[4].split(".")
            if len(namespace) > 2:
                return self._by_repo.get(namespace[2], 0)
        if path.startswith(("/api/queue/v1/task/", "/api/queue/v1/task-group/")) and len(parts) > 4:
            return self.world_of_task(parts[4])
        if path.startswith("/__sim__/artifacts/") and len(parts) > 2:
            return self.world_of_task(parts[2])
        if path.startswith("/api/jobs/"):
            if "task_id" in query:
                return self.world_of_task(query["task_id"][0])
            for key in ("push_id", "result_set_id", "push_id__in"):
                if key in query:
                    # `push_id__in`: pushes of one repository (sheriff's passes are per
                    # repository); its first push names the world.
                    return self._world_of_push_id(query[key][0].split(",")[0])
        if path.startswith("/api/hooks/"):
            try:
                payload = json.loads(body or b"{}")
                group = payload["decision"]["action"]["taskGroupId"]
            except (ValueError, KeyError, TypeError):
                return 0
            return self.world_of_task(str(group))
        return 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.apps[0](scope, receive, send)
            return
        path = scope["path"]
        if path.startswith("/__sim__/") and not path.startswith("/__sim__/artifacts/"):
            await self._admin(scope, receive, send)
            return
        body = b""
        if path.startswith("/api/hooks/"):
            more = True
            while more:
                message = await receive()
                body += message.get("body", b"")
                more = message.get("more_body", False)
            sent = False

            async def replay() -> dict[str, Any]:
                nonlocal sent
                if sent:
                    return {"type": "http.disconnect"}
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}

            receive = replay
        query = parse_qs(scope.get("query_string", b"").decode())
        await self.apps[self._route(path, query, body)](scope, receive, send)

    # -- admin: every world together --------------------------------------------------

    async def _admin(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope["path"]
        query = parse_qs(scope.get("query_string", b"").decode())
        status, answer = 200, None
        first = self.worlds[0]
        if path == "/__sim__/advance" and scope["method"] == "POST":
            try:
                minutes = float(query.get("minutes", ["0"])[0])
            except ValueError:
                minutes = -1
            if minutes < 0:
                status, answer = 400, {"detail": "minutes must be >= 0"}
            else:
                for world in self.worlds:
                    world.advance(minutes)
        if answer is None and path in ("/__sim__/advance", "/__sim__/clock"):
            answer = {
                "now": first.iso(first.minutes),
                "minutes": first.minutes,
                "finished": all(w.finished for w in self.worlds),
            }
        elif answer is None and path == "/__sim__/truth":
            answer = self.truth()
        elif answer is None and path == "/__sim__/stats":
            answer = self.stats()
        elif answer is None:
            status, answer = 404, {"detail": "Not Found"}
        raw = json.dumps(answer).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": raw})

    def truth(self) -> dict[str, Any]:
        merged: dict[str, Any] = {"scenario": self.name, "cases": {}}
        for world in self.worlds:
            played = world.played_truth()
            merged["cases"].update(played.get("cases", {}))
            for key, value in played.items():
                if isinstance(value, list):
                    merged.setdefault(key, []).extend(value)
        return merged

    def stats(self) -> dict[str, Any]:
        from sheriff.sim.app import stats_of

        counters: Counter[str] = Counter()
        faults: Counter[str] = Counter()
        endpoints: Counter[str] = Counter()
        for app in self.apps:
            counters.update(app.state.counters)
            faults.update(app.state.fault_counts)
            endpoints.update(app.state.endpoints)
        return stats_of(counters, faults, endpoints)
