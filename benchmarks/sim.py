"""Simulator speed: loading autoland-day.yaml, playing it, and listTaskGroup pages over HTTP.

Prints figures (targets: load <= 10 s; >= 20 pages of 1,000 tasks per second); never fails
on timing.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import httpx

from sheriff.sim.scenario import Scenario, load_scenario
from sheriff.sim.server import SimServer
from sheriff.sim.world import World

SCENARIO = Path("autoland-day")  # a file, or a bundled scenario by name
TOKEN = re.compile(rb'"continuationToken":"([^"]+)"')


def main(path: Path = SCENARIO) -> None:
    started, cpu = time.perf_counter(), time.process_time()
    scenario = load_scenario(path)
    world = World(scenario)
    loaded, loaded_cpu = time.perf_counter() - started, time.process_time() - cpu
    day = scenario.pushes * scenario.push_interval_minutes + 12 * 60
    started, cpu = time.perf_counter(), time.process_time()
    world.advance(day)
    played, played_cpu = time.perf_counter() - started, time.process_time() - cpu
    tests = sum(1 for t in world.tasks.values() if t.kind == "test")
    print(f"scenario {scenario.name}: {scenario.pushes} pushes, {tests} test tasks")
    # CPU seconds beside wall seconds: on a shared machine the wall clock also counts others.
    print(f"load (parse + world): {loaded:.2f} s, CPU {loaded_cpu:.2f} s   (target <= 10 s)")
    print(
        f"play {day / 60:.0f} virtual hours ({len(world.jobs)} jobs): {played:.2f} s, "
        f"CPU {played_cpu:.2f} s; load + play {loaded + played:.2f} s"
    )
    _list_task_group(scenario)


def _list_task_group(scenario: Scenario) -> None:
    # A push bigger than any autoland push: every platform twice, nothing optimised away.
    twins = [p.model_copy(update={"collection": p.collection + "-fis"}) for p in scenario.platforms]
    wide = scenario.model_copy(
        update={"pushes": 3, "schedule_fraction": 1.0, "platforms": scenario.platforms + twins}
    )
    with SimServer(wide) as sim, httpx.Client(base_url=sim.root_url) as client:
        sim.advance(30)
        group = sim.world.pushes[0].decision_task_id
        size = len(sim.world.groups[group])
        url = f"/api/queue/v1/task-group/{group}/list"
        client.get(url, params={"limit": 1000})  # the first request renders definitions once
        print(
            f"listTaskGroup over HTTP, limit 1000, a group of {size} tasks (target >= 20 pages/s):"
        )
        for label, stale, parse in (
            ("group unchanged (cached page), client reads the bytes", False, False),
            ("group changed before every page (page re-rendered)", True, False),
            ("group unchanged, client parses every page as JSON", False, True),
        ):
            pages, elapsed = _first_pages(sim, client, url, stale, parse)
            print(
                f"  {label}: {pages / elapsed:.1f} pages/s ({1000 * pages / elapsed:,.0f} tasks/s)"
            )


def _first_pages(
    sim: SimServer, client: httpx.Client, url: str, stale: bool, parse: bool
) -> tuple[int, float]:
    """Fetch the group's first page (1,000 tasks) again and again for 3 s."""
    group = url.split("/")[-2]
    pages = 0
    started = time.perf_counter()
    while time.perf_counter() - started < 3:
        if stale:
            with sim.world.lock:  # as if a task of the group had changed state
                sim.world.group_versions[group] = sim.world.group_versions.get(group, 0) + 1
        body = client.get(url, params={"limit": 1000}).content
        tasks = len(json.loads(body)["tasks"]) if parse else body.count(b'{"status":')
        assert tasks == 1000 and TOKEN.search(body[-200:])
        pages += 1
    return pages, time.perf_counter() - started


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else SCENARIO)
