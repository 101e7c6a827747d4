"""The load left for people: no sheriff, Treeherder's own marking, `seed` and `history`
with write-back, side by side on the bundled scenarios.

Usage: .venv/bin/python benchmarks/load.py [--scenarios small,autoland-day]
[--policies seed,history] [--every-queue | --no-every-queue] [--json OUT]. Every figure
is counted on the simulator's side (what its Treeherder holds at the end, what its Matrix
room received), over every failed test job, the originals and the runs actions created:

- unclassified: failed jobs still at 1 or 6 (for `none`: not classified by a person);
  per push; and those created by retriggers and backfills;
- intermittent classified: share of truly intermittent failed jobs that automation
  (sheriff's write-back, Treeherder's 8, mozci's 7) classified 4, 7 or 8;
- regression as intermittent: truly regression failed jobs classified 4, 7 or 8;
- alerts: "confirmed" messages per true regression alerted, and for none.

Targets for `history` with write-back: >= 90 % intermittent classified, <= 0.5 %
regression jobs as intermittent, >= 5x fewer unclassified than no sheriff, exactly one
alert per true regression found, none for a non-regression.

sheriff triages only the queues of `queue_prefixes` (SPEC rule 5; default
`gecko-t/t-linux-`): failures elsewhere get no verdict, so no write-back. The targets are
checked twice: on the queues the default triages ("in scope"), and over every failed job
with `history` triaging every test queue (`--every-queue`, on by default: the row
`history*`, played with EVERY_QUEUE), which is what a deployment that wants the whole load
taken off configures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sheriff.config import load_settings
from sheriff.triage.simrun import play, play_without_sheriff

# Every test worker pool of Firefox CI (and of the simulator): Linux, Windows and Android
# under gecko-t/, macOS hardware under releng-hardware/.
EVERY_QUEUE = ["gecko-t/", "releng-hardware/"]

HEADER = (
    f"{'scenario':<13} {'who':<11} {'failed':>6} {'unclass':>7} {'/push':>6} {'actions':>7} "
    f"{'interm cl':>9} {'reg→int':>8} {'alerts/reg':>10} {'false al':>8}"
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def row(scenario: str, who: str, f: dict, alerts: dict | None = None) -> str:
    per = "-"
    false = "-"
    if alerts is not None:
        counts = list(alerts["alerts_per_true_regression"].values())
        per = f"{sum(counts)}/{alerts['true_regressions_alerted']}" if counts else "0/0"
        false = str(alerts["alerts_for_no_true_regression"])
    share = f.get("regression_jobs_classified_intermittent_share")
    return (
        f"{scenario:<13} {who:<11} {f['failed_jobs']:>6} {f['unclassified']:>7} "
        f"{f['unclassified_per_push']:>6.2f} {f['unclassified_from_actions']:>7} "
        f"{_pct(f['intermittent_classified_automatically']):>9} {_pct(share):>8} "
        f"{per:>10} {false:>8}"
    )


def targets(scenario: str, none: dict, history: dict, who: str = "history") -> str:
    alerts = history["alerts"]
    per = list(alerts["alerts_per_true_regression"].values())
    fewer = none["unclassified"] / max(1, history["unclassified"])
    checks = [
        (
            "intermittent classified >= 90%",
            (history["intermittent_classified_automatically"] or 0) >= 0.9,
        ),
        (
            "regression as intermittent <= 0.5%",
            (history["regression_jobs_classified_intermittent_share"] or 0) <= 0.005,
        ),
        (f">= 5x fewer unclassified ({fewer:.1f}x)", fewer >= 5),
        ("one alert per true regression found", bool(per) and all(n == 1 for n in per)),
        ("no alert for a non-regression", alerts["alerts_for_no_true_regression"] == 0),
    ]
    said = ", ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in checks)
    return f"{scenario}: {who} {said}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="small,autoland-day")
    parser.add_argument("--policies", default="seed,history")
    parser.add_argument(
        "--every-queue",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also play history triaging every test queue (row history*)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    prefixes = load_settings().queue_prefixes
    results: dict[str, dict] = {}
    print(HEADER, flush=True)
    for scenario in args.scenarios.split(","):
        found: dict[str, dict] = {}
        baseline = play_without_sheriff(scenario, prefixes)
        found["none"] = baseline["none"]
        found["treeherder"] = baseline["treeherder"]
        found["none (in scope)"] = baseline["in_scope_none"]
        found["treeherder (in scope)"] = baseline["in_scope"]
        for who in ("none", "treeherder"):
            print(row(scenario, who, found[who]), flush=True)
        for policy in args.policies.split(","):
            metrics = play(scenario, policy=policy)
            found[policy] = metrics["load"]
            found[f"{policy} (in scope)"] = metrics["load"]["in_scope"]
            print(row(scenario, policy, metrics["load"], metrics["load"]["alerts"]), flush=True)
        if args.every_queue:
            metrics = play(scenario, policy="history", queue_prefixes=EVERY_QUEUE)
            found["history*"] = metrics["load"]
            print(row(scenario, "history*", metrics["load"], metrics["load"]["alerts"]), flush=True)
        results[scenario] = found
    print(f"\nOn the queues sheriff triages ({', '.join(prefixes)}):")
    print(HEADER)
    for scenario, found in results.items():
        for who, figures in found.items():
            if who.endswith("(in scope)"):
                print(row(scenario, who.removesuffix(" (in scope)"), figures))
    print()
    for scenario, found in results.items():
        if "history" in found:
            print(targets(scenario, found["none"], found["history"]))
            scoped = {**found["history (in scope)"], "alerts": found["history"]["alerts"]}
            print("  in scope: " + targets(scenario, found["none (in scope)"], scoped))
        if "history*" in found:
            every = targets(scenario, found["none"], found["history*"], "history*")
            print("  every queue triaged: " + every)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
