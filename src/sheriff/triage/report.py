"""A readable report of a scenario play: verdicts against ground truth, cost, what next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

COMPARE = {"seed": "the exact rule of SPEC §3", "history": "the history-aware policy"}


def render_report(metrics: dict[str, Any], database: Path) -> str:
    v, t = metrics["verdicts"], metrics["truth"]
    decided = v["regression"] + v["intermittent"]
    lines = [
        "",
        f"sheriff demo — scenario {metrics['scenario']!r}, policy {metrics['policy']!r}",
        f"  {metrics['virtual_hours']:.1f} virtual hours of CI played in "
        f"{metrics['wall_seconds']:.0f} s",
        "",
        f"Failed test runs (cases): {metrics['cases']}",
        f"  ground truth: {t['regression']} regression, {t['intermittent']} intermittent, "
        f"{t['infra']} infra",
        f"  sheriff said: {v['regression']} regression, {v['intermittent']} intermittent, "
        f"{v['infra']} infra, {v['not-eligible']} not eligible (queue or tier), "
        f"{v['classified']} already classified, {v['pending']} still pending",
        "",
        f"Of the {decided} eligible cases sheriff decided:",
        f"  precision {metrics['precision']:.2f}  (regression verdicts that were real)",
        f"  recall    {metrics['recall']:.2f}  (real regressions it called regression)",
        f"  time to verdict: p50 {metrics['time_to_verdict_minutes']['p50']:.0f} min, "
        f"p95 {metrics['time_to_verdict_minutes']['p95']:.0f} min after the run failed",
        *_missed(metrics.get("missed_by_kind") or {}),
        "",
        "Cost:",
        f"  {metrics['retriggers']} retriggers "
        f"({metrics['retriggers_per_eligible_case']:.1f} per eligible case), "
        f"{metrics['excess_retriggers']} asked twice",
        f"  {metrics['http_requests']['taskcluster']} Taskcluster and "
        f"{metrics['http_requests']['treeherder']} Treeherder requests",
    ]
    culprits = metrics.get("culprits") or {}
    if culprits.get("regressions"):
        lines.append(
            f"  culprits: {culprits.get('found', 0)} of {culprits['regressions']} regressions "
            f"named, {culprits.get('correct', 0)} correctly, with "
            f"{culprits.get('backfill_runs', 0)} backfill runs"
        )
    records = metrics.get("regression_records") or []
    if records:
        lines += ["", f"Regressions ({len(records)}, from {v['regression']} regression cases):"]
        for r in records:
            culprit = (
                f"culprit {r['culprit'][:12]} by {r['culprit_author']}"
                if r["culprit"]
                else "no culprit yet"
            )
            stopped = f", stopped at {r['stopped_push'][:12]}" if r["stopped_push"] else ""
            lines.append(
                f"  #{r['id']} {', '.join(r['tests'][:3])}{' …' if len(r['tests']) > 3 else ''}"
            )
            lines.append(
                f"      {culprit}{stopped}; {r['cases']} cases on {', '.join(r['configurations'])}"
            )
    load = metrics.get("load")
    if load:
        alerts = load["alerts"]
        share = load["intermittent_classified_automatically"]
        lines += [
            "",
            "Load left for people (counted in the simulator's Treeherder):",
            f"  {load['failed_jobs']} failed jobs ({load['failed_jobs_from_actions']} from "
            f"retriggers and backfills); {load['unclassified']} left unclassified "
            f"({load['unclassified_per_push']:.2f} per push; without any automation "
            f"{load['unclassified_without_automation']})",
            f"  intermittent failed jobs classified automatically: "
            f"{'-' if share is None else f'{100 * share:.0f} %'}; regression jobs classified "
            f"intermittent: {load['regression_jobs_classified_intermittent']}",
            f"  alerts: {alerts['regressions_alerted']} regressions announced for "
            f"{alerts['true_regressions_alerted']} true ones, "
            f"{alerts['alerts_for_no_true_regression']} for none ({alerts['messages']} messages)",
        ]
    other = "seed" if metrics["policy"] != "seed" else "history"
    lines += [
        "",
        "What to run next:",
        f"  SHERIFF_DATABASE_URL=sqlite:///{database} .venv/bin/sheriff serve   "
        "# browse these verdicts at http://127.0.0.1:8000/",
        f"  SHERIFF_DATABASE_URL=sqlite:///{database} .venv/bin/sheriff regressions   "
        "# the regressions, one row each",
        f"  .venv/bin/sheriff demo --policy {other}   # {COMPARE[other]}, for comparison",
        "  .venv/bin/sheriff sim run --scenario autoland-day  # a busier day, as JSON metrics",
        "  .venv/bin/sheriff triage --repo autoland --since 6h   "
        "# a dry run against Firefox CI itself",
        "",
    ]
    return "\n".join(lines)


def _missed(kinds: dict[str, int]) -> list[str]:
    """The missed regression cases by their regression's kind (`simrun.missed_by_kind`)."""
    if not kinds:
        return []
    return [f"  missed regression cases: {sum(kinds.values())}, by kind:"] + [
        f"    {n:>4} {kind}" for kind, n in kinds.items()
    ]
