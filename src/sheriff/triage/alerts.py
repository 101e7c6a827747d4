"""One alert per regression and event: confirmed (once its search settled, with the
culprit if found), culprit (found after the first alert went out), stopped failing, and
failing again (a stopped regression reopened: `model.regressions.merged_stop`).

Each is one `alert` effect per configured channel in the request log, keyed
`alert:<regression>:<event>:<channel>`: written once, sent once. A regression that stops
and fails again more than once has its later alerts numbered (`stopped-2`,
`failing-again-2`). Without a channel the alerts are recorded as dry runs (channel
`log`), so what would have gone out is seen.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from sheriff.actions.effects import enqueue_effect
from sheriff.config import settings as current_settings
from sheriff.notify import ALERT, channels_from_settings
from sheriff.store.regressions import alert_key, get_regression
from sheriff.store.schema import action_request, push
from sheriff.triage.regressions import search_settled, with_searches

# A regression whose search has not settled by then is announced without its culprit.
CONFIRM_AFTER = timedelta(hours=3)


def message(r: dict[str, Any], event: str, public_url: str) -> tuple[str, str]:
    """Subject and body of an alert about regression `r` (as `store.regressions` reads it)."""
    tests = r["tests"] or r["failure_lines"]
    culprit = r["culprit"]
    what = {
        "confirmed": "confirmed",
        "culprit": "culprit found",
        "stopped": "stopped failing",
        "failing-again": "failing again",
    }[_base(event)]
    subject = f"[sheriff] {r['repository']} regression {r['id']} {what}: {len(tests)} failing"
    lines = [f"Regression {r['id']} on {r['repository']}: {what}.", "", "Failing tests:"]
    lines += [f"  {t}" for t in tests]
    lines += ["", "Configurations: " + ", ".join(r["configurations"])]
    first = r["first_push"] or {}
    lines.append(f"First failing push: {first.get('revision', '?')[:12]}")
    if culprit:
        message_line = (culprit.get("message") or "").splitlines()[:1]
        lines += [
            f"Culprit push: {culprit['revision']} by {culprit.get('author') or 'unknown'}",
            f"  {message_line[0] if message_line else ''}",
            f"Suggested action: back out {culprit['revision'][:12]}.",
        ]
    else:
        lines.append("Culprit: not found yet; suggested action: look at the first failing push.")
    if r["stopped_push"]:
        lines.append(f"Stopped failing at push {r['stopped_push']['revision'][:12]}.")
    elif _base(event) == "failing-again":
        last = (r["last_push"] or {}).get("revision", "?")[:12]
        lines.append(f"It had stopped failing, and failed again up to push {last}.")
    lines += ["", f"Evidence: {public_url}/api/regressions/{r['id']}", f"Cases: {len(r['cases'])}"]
    return subject, "\n".join(lines)


def plan_alerts(
    conn: sa.Connection,
    repo: str,
    *,
    public_url: str,
    live: bool,
    now: datetime,
    settings: Any = None,
) -> int:
    """Enqueue the alerts the regressions of `repo` are due; how many new."""
    names = sorted(channels_from_settings(settings or current_settings())) or ["log"]
    sent = set(
        conn.execute(
            sa.select(action_request.c.idempotency_key).where(action_request.c.strategy == ALERT)
        ).scalars()
    )
    rows = with_searches(conn, repo)
    added = 0
    orders = _push_orders(conn, [r.first_push_id for r in rows] + [r.last_push_id for r in rows])
    searching = [r for r in rows if not search_settled(r)]
    for r in rows:
        due = []
        confirmed_key = alert_key(r.id, "confirmed", names[0])
        # Announced once its search settled and no search still running could make it
        # part of another regression (the same culprit found twice merges them).
        alone = not any(_may_merge(r, other, orders) for other in searching if other.id != r.id)
        # Past CONFIRM_AFTER it is announced before its search settles, unless it may yet
        # be part of any other regression, which its own search will tell.
        isolated = not any(_may_merge(r, other, orders) for other in rows if other.id != r.id)
        late = now - r.opened_at >= CONFIRM_AFTER and isolated
        if (search_settled(r) and alone) or late:
            due.append("confirmed")
        if r.culprit_revision is not None and confirmed_key in sent:
            first = conn.execute(
                sa.select(action_request.c.input).where(
                    action_request.c.idempotency_key == confirmed_key
                )
            ).scalar()
            if first is not None and not first.get("culprit"):
                due.append("culprit")
        # Stopped, then failing again (`merged_stop` reopens a record that a later one
        # joined by its culprit): each turn is said once, the first stop as "stopped".
        stops = _sent_turns(sent, r.id, "stopped", names[0])
        agains = _sent_turns(sent, r.id, "failing-again", names[0])
        if r.stopped_push_id is not None and "confirmed" in due and stops == agains:
            due.append(_numbered("stopped", stops + 1))
        if r.stopped_push_id is None and stops > agains:
            due.append(_numbered("failing-again", agains + 1))
        for event in due:
            for name in names:
                key = alert_key(r.id, event, name)
                if key in sent:
                    continue
                found = get_regression(conn, r.id)
                assert found is not None
                subject, body = message(found, event, public_url)
                enqueue_effect(
                    conn,
                    key,
                    ALERT,
                    repository=repo,
                    revision=(found["first_push"] or {}).get("revision", ""),
                    input={
                        "channel": name,
                        "event": event,
                        "regression_id": r.id,
                        "culprit": (found["culprit"] or {}).get("revision"),
                        "subject": subject,
                        "body": body,
                    },
                    live=live and name != "log",
                    now=now,
                )
                sent.add(key)
                added += 1
    return added


def _numbered(event: str, turn: int) -> str:
    """The event of a regression's `turn`th stop or reopening: `stopped`, `stopped-2`."""
    return event if turn == 1 else f"{event}-{turn}"


def _base(event: str) -> str:
    """`stopped-2` -> `stopped`."""
    head, _, turn = event.rpartition("-")
    return head if turn.isdigit() else event


def _sent_turns(sent: set[str], regression_id: int, event: str, channel: str) -> int:
    """How many of a regression's stops (or reopenings) were already alerted."""
    turns = 0
    while alert_key(regression_id, _numbered(event, turns + 1), channel) in sent:
        turns += 1
    return turns


def _push_orders(conn: sa.Connection, push_ids: list[int]) -> dict[int, Any]:
    found = conn.execute(
        sa.select(push.c.id, push.c.push_time).where(push.c.id.in_(sorted(set(push_ids))))
    ).all()
    return {row.id: row.push_time for row in found}


def _may_merge(r: Any, other: Any, times: dict[int, Any]) -> bool:
    """Whether two regressions fail on overlapping pushes of a shared configuration."""
    if not set(r.configurations) & set(other.configurations):
        return False
    return (
        times[r.first_push_id] <= times[other.last_push_id]
        and times[other.first_push_id] <= times[r.last_push_id]
    )
