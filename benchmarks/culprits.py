"""Culprit search compared: linear, linear by label (no same manifests), and bisect.

Plays a scenario (default ../shared/scenarios/autoland-day.yaml, dynamic chunking) end to
end through `sheriff.triage.simrun.play` once per backfill configuration and prints, side
by side, the regressions, the culprits named and how many were right, and the backfilled
runs spent. Target: bisect names >= 90 % of culprits correctly with fewer runs than
linear. Prints figures; never fails on them.

    .venv/bin/python benchmarks/culprits.py [SCENARIO] [--policy seed] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

SCENARIO = Path(__file__).resolve().parents[2] / "shared" / "scenarios" / "autoland-day.yaml"

CONFIGURATIONS = (
    ("linear", "linear", True),
    ("linear by label", "linear", False),
    ("bisect", "bisect", True),
)


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", type=Path, default=SCENARIO)
    parser.add_argument("--policy", default="seed")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()

    from sheriff.triage.simrun import play

    rows: list[dict[str, Any]] = []
    for name, backfill, same_manifests in CONFIGURATIONS:
        started = time.perf_counter()
        metrics = play(
            args.scenario, policy=args.policy, backfill=backfill, same_manifests=same_manifests
        )
        culprits = metrics["culprits"]
        rows.append(
            {
                "configuration": name,
                "regressions": culprits["regressions"],
                "found": culprits["found"],
                "correct": culprits["correct"],
                "accuracy": _ratio(culprits["correct"], culprits["regressions"]),
                "precision": _ratio(culprits["correct"], culprits["found"]),
                "backfill_runs": culprits["backfill_runs"],
                "wall_seconds": time.perf_counter() - started,
            }
        )
        print(f"played {args.scenario.name} with {name}: {rows[-1]['wall_seconds']:.1f} s")

    header = (
        f"{'backfill':<16} {'regr.':>5} {'found':>5} {'correct':>7} {'accuracy':>8} {'runs':>6}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['configuration']:<16} {row['regressions']:>5} {row['found']:>5} "
            f"{row['correct']:>7} {row['accuracy']:>8.2f} {row['backfill_runs']:>6}"
        )
    linear = next(r for r in rows if r["configuration"] == "linear")
    bisect = next(r for r in rows if r["configuration"] == "bisect")
    print(
        f"bisect: accuracy {bisect['accuracy']:.2f} (target >= 0.90), "
        f"{bisect['backfill_runs']} runs vs linear {linear['backfill_runs']} "
        f"({_ratio(bisect['backfill_runs'], linear['backfill_runs']):.2f}x; target < 1)"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
