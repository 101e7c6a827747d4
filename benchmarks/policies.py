"""Triage policies side by side on every bundled scenario: precision, recall, cost, calibration.

Usage: .venv/bin/python benchmarks/policies.py [--scenarios small,autoland-day]
[--policies seed,history] [--json OUT]. Each play runs the scenario end to end against the
in-process simulator (minutes for the larger ones); a row is printed as soon as it is done.
Targets for `history`: precision >= 0.98, recall >= seed's, <= 2.0 retriggers per
eligible case.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sheriff.sim.scenario import BUNDLED
from sheriff.triage.simrun import play

SCENARIOS = BUNDLED
POLICIES = ("seed", "seed-early", "seed-staged", "history")
HEADER = (
    f"{'scenario':<14} {'policy':<12} {'elig':>5} {'prec':>6} {'recall':>6} {'retr/case':>9} "
    f"{'ttv p50':>7} {'ttv p95':>7} {'p>=0.9 (reg%)':>14} {'p<=0.1 (reg%)':>14} {'wall s':>7}"
)


def row(m: dict) -> str:
    cal = m.get("calibration") or {}

    def bucket(name: str) -> str:
        b = cal.get(name) or {}
        if not b.get("cases"):
            return "-"
        return f"{b['cases']} ({100 * b['regression_share']:.0f}%)"

    ttv = m["time_to_verdict_minutes"]
    return (
        f"{m['scenario']:<14} {m['policy']:<12} {m['eligible']:>5} {m['precision']:>6.3f} "
        f"{m['recall']:>6.3f} {m['retriggers_per_eligible_case']:>9.2f} {ttv['p50']:>7.1f} "
        f"{ttv['p95']:>7.1f} {bucket('high'):>14} {bucket('low'):>14} {m['wall_seconds']:>7.1f}"
    )


def targets(results: list[dict]) -> list[str]:
    """Lines saying whether `history` met its targets on each scenario."""
    out = []
    by = {(m["scenario"], m["policy"]): m for m in results}
    for (scenario, policy), m in by.items():
        if policy != "history":
            continue
        seed = by.get((scenario, "seed"))
        checks = [
            ("precision >= 0.98", m["precision"] >= 0.98),
            ("retriggers/case <= 2.0", m["retriggers_per_eligible_case"] <= 2.0),
        ]
        if seed is not None:
            checks.append((f"recall >= seed's {seed['recall']:.3f}", m["recall"] >= seed["recall"]))
        said = ", ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in checks)
        out.append(f"{scenario}: history {said}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", help="comma-separated scenario names (default: all)")
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma-separated")
    parser.add_argument("--dir", type=Path, default=SCENARIOS, help="scenario folder")
    parser.add_argument("--json", type=Path, help="write every metrics object here")
    args = parser.parse_args(argv)
    files = sorted(args.dir.glob("*.yaml"))
    if args.scenarios:
        wanted = set(args.scenarios.split(","))
        files = [f for f in files if f.stem in wanted]
    if not files:
        print(f"no scenario found in {args.dir}", file=sys.stderr)
        return 2
    policies = [p for p in args.policies.split(",") if p]
    print(HEADER, flush=True)
    results = []
    for path in files:
        for policy in policies:
            metrics = play(path, policy=policy)
            metrics["scenario"] = path.stem
            results.append(metrics)
            print(row(metrics), flush=True)
    for line in targets(results):
        print(line)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
