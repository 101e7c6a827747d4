"""sheriff under a misbehaving CI: the bundled `small` scenario with the simulator's faults.

Plays two faulty versions of a scenario (default: the bundled `small`) end to end, each
against the same world without faults (`sheriff.triage.simrun.play` does both plays):

- `every fault, 20 %`: a fifth of all requests to every service fail (equal shares of
  5xx, 429 with Retry-After, dropped connections, slow answers, and lost answers to
  writes), a fifth of artifact downloads come back corrupt or cut short, a fifth more of
  the logs cannot be parsed by Treeherder, and Treeherder is down for 30 minutes;
- `Treeherder down 30 min`: nothing else.

Prints one row per play: whether every case was decided, cases lost, cases left open,
verdicts different from the clean play, actions sent twice, tracebacks, failed passes and
the faults the simulator played. Targets: all decided, and 0 in every other column.
Prints figures; never fails on them.

    .venv/bin/python benchmarks/faults.py [SCENARIO] [--rate 0.2] [--policy P] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from sheriff.sim.scenario import load_scenario
from sheriff.triage.simrun import play

OUTAGE = {"start_minutes": 150, "minutes": 30}  # while pushes still arrive and cases open


def every_fault(rate: float) -> dict[str, Any]:
    share = rate / 5
    kinds = ("error", "throttle", "reset", "slow", "lost_write")
    return {
        "requests": dict.fromkeys(kinds, share),
        "retry_after_seconds": [1, 5],
        "slow_seconds": [0.2, 1.5],
        "corrupt_artifacts": rate / 2,
        "truncated_artifacts": rate / 2,
        "log_parse_failures": rate,
        "treeherder_outages": [OUTAGE],
        "pulse": {"drop": rate / 2, "duplicate": rate / 2},
    }


def row(name: str, m: dict[str, Any]) -> str:
    f = m["faults"]
    decided = m["verdicts"]["pending"] == 0 and f["cases_left_open"] == 0
    played = ", ".join(f"{k} {v}" for k, v in sorted(f["played"].items())) or "none"
    return (
        f"{name:<24} {'yes' if decided else 'NO':>7} {f['cases_lost']:>5} "
        f"{f['cases_left_open']:>5} {f['verdicts_changed']:>8} {f['actions_sent_twice']:>7} "
        f"{f['tracebacks']:>6} {f['failed_passes']:>7} {m['wall_seconds']:>7.0f}  {played}"
    )


HEADER = (
    f"{'play':<24} {'decided':>7} {'lost':>5} {'open':>5} {'changed':>8} {'twice':>7} "
    f"{'trace':>6} {'failed':>7} {'wall s':>7}  faults played"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default="small", help="file or bundled name")
    parser.add_argument("--rate", type=float, default=0.2, help="share of each fault kind")
    parser.add_argument("--policy", help="verdict policy (default: the setting)")
    parser.add_argument("--json", type=Path, help="write every metrics object here")
    args = parser.parse_args(argv)
    base = load_scenario(args.scenario).model_dump(mode="json")
    plays = {
        f"every fault, {args.rate:.0%}": every_fault(args.rate),
        "Treeherder down 30 min": {"treeherder_outages": [OUTAGE]},
    }
    print(HEADER, flush=True)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, faults in plays.items():
            path = Path(tmp) / f"{base['name']}-{len(results)}.json"
            path.write_text(json.dumps({**base, "faults": faults}))
            metrics = play(path, policy=args.policy)
            results[name] = metrics
            print(row(name, metrics), flush=True)
            for line in metrics["faults"]["traceback_lines"]:
                print(f"    traceback: {line}")
            for change in metrics["faults"]["changed"][:5]:
                print(
                    f"    changed: {change['task_id']} {change['without_faults']} "
                    f"-> {change['with_faults']}"
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
