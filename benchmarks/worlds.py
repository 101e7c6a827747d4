"""The family of worlds (`sheriff sim worlds`): every world played with `seed` and `history`.

Usage:

    .venv/bin/python benchmarks/worlds.py --count 30 --seed S [--jobs 1] [--dir DIR]
        [--linear] [--json OUT]

draws worlds 0..count-1 of family S (sheriff/sim/family.py), plays each with the seed
rule and with `history` (flake-aware backfills; `--backfill` to change; with `--linear`
also history with linear backfills, for the runs relative to `linear`), and prints one
row per world as it finishes, then how many worlds meet each per-world target, the worst
row and the pooled figures (with the true regressions counted by why they got the
culprit they got, or none). Each play's
metrics are kept in DIR (default `.worlds/<S>/`): a rerun reuses them, so an interrupted
run resumes where it stopped and 10 worlds extend to 30 cheaply. `--jobs N` plays N
worlds at once in worker processes (each play also starts a simulator process: keep N
at 1 on a shared machine).

Targets for `history`, on every world: precision >= 0.98, recall >= the seed rule's - 0.02;
over all worlds: <= 2.0 retriggers per eligible case, expected calibration error (10
bins, pooled) <= 0.05; culprits: the right push for >= 97.5 % of regressions in scope, no
push named for >= 99 % of ranges without a true culprit, <= 10 backfill runs per
regression on average.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from sheriff.sim.family import write_family
from sheriff.triage.simrun import expected_calibration_error, play

# Pushes counted as the start of a world: sheriff has no history of any test there yet.
EARLY_PUSHES = 5
HEADER = (
    f"{'world':<14} {'pushes':>6} {'elig':>5} {'seed R':>6} {'prec':>6} {'recall':>6} "
    f"{'retr/c':>6} {'ECE':>5} {'reg':>3} {'scope':>5} {'found':>5} {'right':>5} {'wrong':>5} "
    f"{'false':>5} {'bf runs':>7} {'lin runs':>8} {'wall s':>6}"
)


def play_world(path: str, policy: str, backfill: str | None, cache: str) -> dict[str, Any]:
    """One play, or its kept metrics."""
    kept = Path(cache)
    if kept.exists():
        return json.loads(kept.read_text())
    metrics = play(path, policy=policy, backfill=backfill)
    metrics["pushes"] = _pushes(path)
    kept.write_text(json.dumps(metrics))
    return metrics


def _pushes(path: str) -> int:
    from sheriff.sim.scenario import load_scenario

    return load_scenario(path).pushes


def row(world: str, seed: dict[str, Any], hist: dict[str, Any], linear: dict | None) -> str:
    c = hist["culprits"]
    bins = hist["calibration"].get("bins") or []
    wall = seed["wall_seconds"] + hist["wall_seconds"]
    lin = "-" if linear is None else str(linear["culprits"]["backfill_runs"])
    return (
        f"{world:<14} {hist.get('pushes', 0):>6} {hist['eligible']:>5} {seed['recall']:>6.3f} "
        f"{hist['precision']:>6.3f} {hist['recall']:>6.3f} "
        f"{hist['retriggers_per_eligible_case']:>6.2f} {expected_calibration_error(bins):>5.3f} "
        f"{c['regressions']:>3} {c['in_scope']:>5} {c['found']:>5} {c['correct']:>5} "
        f"{len(c.get('wrong', [])):>5} {len(c.get('false_culprits', [])):>5} "
        f"{c['backfill_runs']:>7} {lin:>8} {wall:>6.0f}"
    )


def summary(rows: list[tuple[str, dict, dict, dict | None]]) -> list[str]:
    """The worst row, the pooled figures and the targets, as lines."""
    hists = [h for _, _, h, _ in rows]
    worst_p = min(rows, key=lambda r: r[2]["precision"])
    worst_r = min(rows, key=lambda r: r[2]["recall"] - r[1]["recall"])
    worst_t = max(rows, key=lambda r: r[2]["retriggers_per_eligible_case"])
    eligible = sum(h["eligible"] for h in hists)
    retriggers = sum(h["retriggers"] for h in hists)
    pooled = [[0, 0.0, 0] for _ in range(10)]
    for h in hists:
        for i, b in enumerate(h["calibration"].get("bins") or []):
            pooled[i] = [pooled[i][0] + b[0], pooled[i][1] + b[1], pooled[i][2] + b[2]]
    ece = expected_calibration_error(pooled)
    in_scope = sum(h["culprits"]["in_scope"] for h in hists)
    correct = sum(h["culprits"]["correct"] for h in hists)
    found = sum(h["culprits"]["found"] for h in hists)
    empty = sum(h["culprits"].get("reports_without_true_culprit", 0) for h in hists)
    false = sum(len(h["culprits"].get("false_culprits", [])) for h in hists)
    runs = sum(h["culprits"]["backfill_runs"] for h in hists)
    reports = sum(h["culprits"].get("reports", 0) for h in hists)
    precise = sum(1 for _, _, h, _ in rows if h["precision"] >= 0.98)
    recalled = sum(1 for _, seed, h, _ in rows if h["recall"] >= seed["recall"] - 0.02)
    lines = [
        f"worlds meeting precision >= 0.98: {precise} of {len(rows)}; "
        f"recall >= seed's - 0.02: {recalled} of {len(rows)}",
        f"worst precision: {worst_p[0]} {worst_p[2]['precision']:.3f}",
        f"worst recall - seed's: {worst_r[0]} {worst_r[2]['recall']:.3f} vs "
        f"{worst_r[1]['recall']:.3f} ({worst_r[2]['recall'] - worst_r[1]['recall']:+.3f})",
        f"worst retriggers per eligible case: {worst_t[0]} "
        f"{worst_t[2]['retriggers_per_eligible_case']:.2f}",
        f"pooled: {len(rows)} worlds, {eligible} eligible cases, "
        f"{retriggers / eligible if eligible else 0:.3f} retriggers per eligible case, "
        f"ECE {ece:.4f}",
        f"culprits: {correct} right of {in_scope} in scope ({_pct(correct, in_scope)}), "
        f"{found} found; {false} pushes named of {empty} ranges without a true culprit "
        f"({_pct(empty - false, empty)} named none); {runs} backfill runs "
        f"({runs / in_scope if in_scope else 0:.1f} per regression in scope; {reports} reports, "
        f"{runs / reports if reports else 0:.1f} runs per report)",
    ]
    linear = [(h, lin) for _, _, h, lin in rows if lin is not None]
    if linear:
        ours = sum(h["culprits"]["backfill_runs"] for h, _ in linear)
        theirs = sum(lin["culprits"]["backfill_runs"] for _, lin in linear)
        right = sum(lin["culprits"]["correct"] for _, lin in linear)
        scope = sum(lin["culprits"]["in_scope"] for _, lin in linear)
        lines.append(
            f"runs relative to linear: {ours} vs {theirs} ({ours / theirs if theirs else 0:.2f}x); "
            f"linear right for {right} of {scope}"
        )
    lines += _pooled(
        "culprits by outcome (every true regression):",
        [h["culprits"].get("outcomes", {}).get("counts", {}) for h in hists],
    )
    lines += _pooled(
        "missed regression cases by kind (the regression's line, test, when):",
        [h.get("missed_by_kind", {}) for h in hists],
    )
    lines.append("reliability (P bin: cases, mean P, share regressions):")
    for i, (n, total_p, hits) in enumerate(pooled):
        if n:
            lines.append(
                f"  {i / 10:.1f}-{(i + 1) / 10:.1f}: {n:>5} {total_p / n:.3f} {hits / n:.3f}"
            )
    checks = [
        ("precision >= 0.98 on every world", worst_p[2]["precision"] >= 0.98),
        (
            "recall >= seed's - 0.02 on every world",
            worst_r[2]["recall"] >= worst_r[1]["recall"] - 0.02,
        ),
        ("<= 2.0 retriggers per eligible case", eligible and retriggers / eligible <= 2.0),
        ("ECE <= 0.05", ece <= 0.05),
        ("right culprit >= 97.5 % in scope", in_scope and correct / in_scope >= 0.975),
        ("no culprit for >= 99 % of empty ranges", not empty or (empty - false) / empty >= 0.99),
        ("<= 10 backfill runs per regression", in_scope and runs / in_scope <= 10),
    ]
    lines += [f"target {name}: {'met' if ok else 'MISSED'}" for name, ok in checks]
    for world, seed, h, _ in rows:
        wrong = h.get("wrong_verdicts")
        if wrong is None:
            continue  # kept metrics of an older play
        false = [w for w in wrong if w["verdict"] == "regression"]
        missed = [w for w in wrong if w["verdict"] != "regression"]
        early = sum(1 for w in false if (w["push_index"] or 0) < EARLY_PUSHES)
        lines.append(
            f"wrong verdicts: {world} {len(false)} false regressions ({early} on the first "
            f"{EARLY_PUSHES} pushes), {len(missed)} missed; seed: "
            f"{sum(w['verdict'] == 'regression' for w in seed.get('wrong_verdicts', []))} false"
        )
    for _, _, h, _ in rows:
        for w in h["culprits"].get("wrong", []):
            lines.append(
                f"wrong culprit: {h['scenario']} regression {w['regression']} report "
                f"{w['report']} {w['label']} named {w['named'][:12]}, true {w['true'][:12]}"
            )
        for f in h["culprits"].get("false_culprits", []):
            lines.append(
                f"culprit without a regression: {h['scenario']} report {f['report']} "
                f"{f['label']} named {f['named'][:12]}"
            )
    return lines


def _pooled(title: str, counts: list[dict[str, int]]) -> list[str]:
    """`title`, then the worlds' counts summed per key, most first."""
    total: Counter[str] = Counter()
    for each in counts:
        total.update(each)
    return [title] + [f"  {n:>4} {key}" for key, n in total.most_common()]


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} %" if b else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--first", type=int, default=0, help="first world index")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--dir", type=Path, help="where worlds and kept metrics go")
    parser.add_argument("--linear", action="store_true", help="also play history + linear")
    parser.add_argument(
        "--backfill", default="flake-aware", help="history's backfill strategy (flake-aware)"
    )
    parser.add_argument("--json", type=Path, help="write every metrics object here")
    args = parser.parse_args(argv)
    if args.count < 1 or args.jobs < 1:
        print("--count and --jobs must be at least 1", file=sys.stderr)
        return 2
    folder = args.dir or Path(".worlds") / str(args.seed)
    paths = write_family(args.seed, args.first + args.count, folder)[args.first :]
    plays = [("seed", "off"), ("history", args.backfill)] + ([("history", "linear")] * args.linear)
    print(HEADER, flush=True)
    rows = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {
            (path.stem, policy, backfill): pool.submit(
                play_world,
                str(path),
                policy,
                backfill,
                str(folder / f"{path.stem}.{policy}.{backfill or 'setting'}.json"),
            )
            for path in paths
            for policy, backfill in plays
        }
        for path in paths:
            got = [futures[(path.stem, p, b)].result() for p, b in plays]
            rows.append((path.stem, got[0], got[1], got[2] if args.linear else None))
            print(row(*rows[-1]), flush=True)
    for line in summary(rows):
        print(line)
    if args.json:
        args.json.write_text(json.dumps([list(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
