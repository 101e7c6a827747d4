"""A family of worlds: scenario files drawn from wide, documented priors (`sheriff sim worlds`).

Nothing in sheriff may be tuned to the three shared scenario files; a world drawn here is
one the project has never seen. Every world is a plain, valid scenario file, sized
between `small.yaml` and about a third of `autoland-day.yaml` (so that one plays in a
minute or so). The priors, per world (docs/scenarios.md, "A family of worlds"):

- shape: 30-70 pushes every 8-15 minutes; 2-5 platforms from Firefox CI's pools; 2-4
  suites of 1-6 chunks; schedule_fraction 0.6-1 (a third of worlds 1.0); dynamic
  chunking in a third of worlds;
- flakiness: a flaky fraction log-uniform in 0.3-5 %; flake rates Beta(m·c, (1-m)·c)
  with mean m log-uniform in 2-30 % and concentration c in 4-40; open intermittent
  bugs for 20-90 % of flaky tests; a person classified 0-15 % of failures;
- infrastructure: 0-2 % of runs fail on their own; 0-2 storms (a worker pool failing
  30-90 % of the runs scheduled in 45-90 minutes), each with or without errorsummaries;
- Treeherder: ingest 0.5-2 minutes plus 0-6, parse 1-3 plus 1-15, parse failures 0-5 %;
- regressions (2-6, culprits at least 3 pushes from either end): failing 10-100 % of
  runs (a third of them 100 %), 1-20 tests (mostly 1-3), on all platforms or a few,
  backed out 2-15 pushes later or never; of these, by kind:
  `plain`; `flaky-bug` (a flaky test with an open intermittent bug regresses, with its
  own failure line or a new one); `worse` (a flaky test gets much worse at a push:
  fail_rate 0.3-0.6 over its flake rate); `neighbour` (another regression on the push
  next to an earlier one); `crash` / `timeout` (the line names no test).
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import yaml

from sheriff.sim import draws
from sheriff.sim.catalog import Catalog
from sheriff.sim.scenario import Scenario, parse_scenario

# (platform, collection, task queue, tier): a sample of Firefox CI's test pools.
PLATFORMS = (
    ("linux1804-64-qr", "opt", "gecko-t/t-linux-large-gcp", 1),
    ("linux1804-64-qr", "debug", "gecko-t/t-linux-large-gcp", 1),
    ("linux1804-64-asan-qr", "asan", "gecko-t/t-linux-xlarge-gcp", 1),
    ("linux2404-64", "opt", "gecko-t/t-linux-2404-gcp", 1),
    ("windows11-64-24h2", "opt", "gecko-t/win11-64-24h2", 1),
    ("windows11-64-24h2", "debug", "gecko-t/win11-64-24h2", 1),
    ("macosx1470-64", "debug", "releng-hardware/gecko-t-osx-1400-r8", 2),
    ("android-em-14-x86_64", "opt", "gecko-t/t-linux-kvm-gcp", 1),
)
# (name, group symbol, group name, symbol, minutes per run)
SUITES = (
    ("mochitest-browser-chrome", "M", "Mochitests", "bc", (20, 45)),
    ("mochitest-plain", "M", "Mochitests", "", (15, 35)),
    ("xpcshell", "X", "Xpcshell tests", "X", (10, 25)),
    ("web-platform-tests", "W", "Web platform tests", "wpt", (20, 50)),
    ("reftest", "R", "Reftests", "R", (15, 40)),
    ("mochitest-devtools-chrome", "M", "Mochitests", "dt", (20, 40)),
)
KINDS = ("plain", "plain", "flaky-bug", "worse", "neighbour", "crash", "timeout")


def world_seed(seed: int, index: int) -> int:
    """The scenario seed of the family's world `index`."""
    return int(draws.unit(seed, "world", index) * 2**31)


def draw_world(seed: int, index: int) -> dict[str, Any]:
    """World `index` of the family `seed`, as scenario data (valid: `parse_scenario`)."""
    own = world_seed(seed, index)
    rng = random.Random(own)
    pushes = rng.randint(30, 70)
    interval = rng.choice((8, 10, 12, 15))
    chosen = sorted(rng.sample(range(len(PLATFORMS)), rng.randint(2, 5)))
    platforms = [
        {
            "platform": PLATFORMS[i][0],
            "collection": PLATFORMS[i][1],
            "task_queue_id": PLATFORMS[i][2],
            "tier": PLATFORMS[i][3],
        }
        for i in chosen
    ]
    suites = []
    for i in sorted(rng.sample(range(len(SUITES)), rng.randint(2, 4))):
        name, group_symbol, group_name, symbol, minutes = SUITES[i]
        chunks = rng.randint(1, 6)
        suites.append(
            {
                "name": name,
                "group_symbol": group_symbol,
                "group_name": group_name,
                "symbol": symbol,
                "chunks": chunks,
                "manifests": chunks * rng.randint(3, 8),
                "tests_per_manifest": rng.randint(8, 25),
                "duration_minutes": list(minutes),
            }
        )
    mean = _log_uniform(rng, 0.02, 0.30)
    concentration = rng.uniform(4, 40)
    data: dict[str, Any] = {
        "name": f"world-{seed}-{index}",
        "seed": own,
        "repository": "autoland",
        "start": "2026-11-02T08:00:00Z",
        "pushes": pushes,
        "push_interval_minutes": interval,
        "schedule_fraction": 1.0 if rng.random() < 1 / 3 else round(rng.uniform(0.6, 1.0), 3),
        "dynamic_chunking": rng.random() < 1 / 3,
        "platforms": platforms,
        "suites": suites,
        "flakiness": {
            "fraction_flaky": round(_log_uniform(rng, 0.003, 0.05), 5),
            "rate": {
                "a": round(mean * concentration, 4),
                "b": round((1 - mean) * concentration, 4),
            },
            "known_bug_fraction": round(rng.uniform(0.2, 0.9), 3),
        },
        "infra_failure_rate": round(rng.uniform(0.0, 0.02), 4),
        "classified_fraction": round(rng.uniform(0.0, 0.15), 4),
        "treeherder": {
            "ingest_delay_minutes": _delays(rng, (0.5, 2.0), 6.0),
            "parse_delay_minutes": _delays(rng, (1.0, 3.0), 15.0),
            "parse_failure_rate": round(rng.uniform(0.0, 0.05), 4),
        },
        "storms": _storms(rng, pushes * interval, platforms),
    }
    catalog = Catalog(parse_scenario({**data, "regressions": []}, data["name"]))
    data["regressions"] = _regressions(rng, pushes, platforms, catalog)
    return data


def draw_family(seed: int, count: int) -> list[Scenario]:
    """The first `count` worlds of family `seed`, validated."""
    return [parse_scenario(draw_world(seed, i), f"world {i}") for i in range(count)]


def write_family(seed: int, count: int, out: Path) -> list[Path]:
    """Write worlds 0..count-1 of family `seed` to `out` as YAML files; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        data = draw_world(seed, i)
        parse_scenario(data, data["name"])  # never write a file `sim run` would refuse
        path = out / f"{data['name']}.yaml"
        header = f"# drawn by `sheriff sim worlds --seed {seed}` (world {i}); see sim/family.py\n"
        path.write_text(header + yaml.safe_dump(data, sort_keys=False))
        paths.append(path)
    return paths


def _log_uniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def _delays(rng: random.Random, first: tuple[float, float], spread: float) -> list[float]:
    low = round(rng.uniform(*first), 2)
    return [low, round(low + rng.uniform(0.0, spread), 2)]


def _storms(
    rng: random.Random, minutes: float, platforms: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    storms = []
    for _ in range(rng.choice((0, 0, 1, 1, 2))):
        storms.append(
            {
                "start_minutes": round(rng.uniform(0.1, 0.8) * minutes, 1),
                "minutes": rng.choice((45, 60, 60, 90)),
                "task_queue_id": rng.choice(platforms)["task_queue_id"],
                "failure_rate": round(rng.uniform(0.3, 0.9), 3),
                "errorsummary": rng.random() < 0.5,
            }
        )
    return storms


def _fail_rate(rng: random.Random) -> float:
    return 1.0 if rng.random() < 1 / 3 else round(rng.uniform(0.1, 1.0), 3)


def _regressions(
    rng: random.Random, pushes: int, platforms: list[dict[str, Any]], catalog: Catalog
) -> list[dict[str, Any]]:
    names = sorted({p["platform"] for p in platforms})
    flaky = sorted(catalog.flaky_tests)
    with_bug = sorted(catalog.known_bug)
    out: list[dict[str, Any]] = []
    for _ in range(rng.randint(2, 6)):
        kind = rng.choice(KINDS)
        if kind == "neighbour" and out:
            neighbour = rng.choice(out)["push"]
            push = neighbour + 1 if neighbour + 1 < pushes - 3 else neighbour - 1
        else:
            kind = "plain" if kind == "neighbour" else kind
            push = rng.randint(3, pushes - 4)
        tests: int | list[str] = rng.choice((1, 1, 1, 2, 3, rng.randint(4, 20)))
        fail_rate = _fail_rate(rng)
        failure = "same"
        if kind == "flaky-bug" and with_bug:
            tests = [rng.choice(with_bug)]
            failure = rng.choice(("same", "new"))
        elif kind == "worse" and flaky:
            tests = [rng.choice(flaky)]
            fail_rate = round(rng.uniform(0.3, 0.6), 3)
        elif kind in ("crash", "timeout"):
            tests, failure = 1, kind
        regression: dict[str, Any] = {
            "push": push,
            "tests": tests,
            "platforms": "all"
            if rng.random() < 0.5 or len(names) == 1
            else sorted(rng.sample(names, rng.randint(1, len(names) - 1))),
            "fail_rate": fail_rate,
            "failure": failure,
        }
        if rng.random() < 0.7:
            regression["fixed_at"] = min(pushes - 1, push + rng.randint(2, 15))
            if regression["fixed_at"] <= push:
                del regression["fixed_at"]
        out.append(regression)
    return out
