"""`sheriff actions`, `sheriff retrigger` and backfill requests: Taskcluster actions by hand.

Every request goes through the request log (sheriff.actions.log): it is recorded before it
is sent, and the same request again (the same idempotency key) sends nothing. Without
`--live` nothing is sent: sheriff prints what it would trigger. The root URL and the
credentials come from TASKCLUSTER_ROOT_URL, TASKCLUSTER_CLIENT_ID, TASKCLUSTER_ACCESS_TOKEN.
"""

from __future__ import annotations

import json
from typing import Any

import typer

from sheriff.cli._ids import task_id as checked_task_id
from sheriff.cli.app import app

LIVE_HELP = "Really send (needs TASKCLUSTER_CLIENT_ID and TASKCLUSTER_ACCESS_TOKEN)."
KEY_HELP = "Idempotency key (default: derived from action, task and input)."


@app.command("actions")
def list_actions(
    task_id: str = typer.Argument(
        ..., help="Task id to list the actions of.", callback=checked_task_id
    ),
    push: bool = typer.Option(False, "--push", help="List the push-level actions instead."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the actions the task's decision task offers for it (first match per name)."""
    from rich.table import Table

    from sheriff.cli._progress import table_console

    protocol = _protocol()
    repository, revision = protocol.push_of_task(task_id)
    decision_task_id = protocol.decision_task(repository, revision)
    found = protocol.available(decision_task_id, None if push else task_id)
    rows = [
        {
            "name": action["name"],
            "title": action.get("title", ""),
            "kind": action.get("kind", ""),
            "callback": ((action.get("hookPayload") or {}).get("decision") or {})
            .get("action", {})
            .get("cb_name"),
            "hook": f"{action.get('hookGroupId')}/{action.get('hookId')}",
            "context": action.get("context", []),
            "input": sorted((action.get("schema") or {}).get("properties", {})),
        }
        for action in found
    ]
    if as_json:
        typer.echo(json.dumps({"decisionTaskId": decision_task_id, "actions": rows}, indent=2))
        return
    table = Table(title=f"{'push' if push else task_id} · decision task {decision_task_id}")
    for column in ("name", "title", "kind", "callback", "input"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            row["name"], row["title"], row["kind"], row["callback"] or "", ", ".join(row["input"])
        )
    table_console().print(table)


@app.command("retrigger")
def retrigger(
    task_id: str = typer.Argument(..., help="Task to retrigger.", callback=checked_task_id),
    times: int = typer.Option(1, "--times", min=1, help="How many new runs."),
    force: bool = typer.Option(
        False,
        "--force",
        help='Clone a task whose label should not be retriggered (no `retrigger: "true"` '
        "tag); Gecko's retrigger refuses it otherwise.",
    ),
    live: bool = typer.Option(False, "--live", help=LIVE_HELP),
    key: str | None = typer.Option(None, "--key", help=KEY_HELP),
) -> None:
    """Retrigger a task TIMES times through its `retrigger` action."""
    from sheriff.actions.strategies import strategy

    protocol = _protocol(live)
    label = str(protocol.task(task_id).get("metadata", {}).get("name", ""))
    input = strategy("retrigger").build_input(times=times, force=force)
    _request(protocol, "retrigger", task_id, input, [label], live=live, key=key)


# Not a command of its own: `sheriff backfill TASK_ID` (cli/backfill.py) calls it for a task
# sheriff has not ingested, where no backfill report can follow the request.
def backfill_request(
    task_id: str = typer.Argument(..., help="Task whose label to run on earlier pushes."),
    depth: int = typer.Option(9, "--depth", min=1, max=25, help="How many earlier pushes."),
    times: int = typer.Option(1, "--times", min=1, help="Runs per push."),
    same_manifests: bool = typer.Option(
        False,
        "--same-manifests",
        help="Send `backfill-task` to each earlier push with the task's own manifests, so the "
        "backfilled runs test exactly what the original did.",
    ),
    live: bool = typer.Option(False, "--live", help=LIVE_HELP),
    key: str | None = typer.Option(
        None, "--key", help=KEY_HELP + " With --same-manifests, a prefix."
    ),
) -> None:
    """Backfill a task: its `backfill` action, or `backfill-task` per push with --same-manifests."""
    protocol = _protocol(live)
    if not same_manifests:
        _request(
            protocol, "backfill", task_id, {"depth": depth, "times": times}, [], live=live, key=key
        )
        return
    _backfill_same_manifests(protocol, task_id, depth=depth, times=times, live=live, key=key)


def _backfill_same_manifests(
    protocol: Any, task_id: str, *, depth: int, times: int, live: bool, key: str | None
) -> None:
    from rich.progress import track

    from sheriff.actions.strategies import strategy
    from sheriff.errors import InputError
    from sheriff.model.actions import treeherder_route_pushlog_id
    from sheriff.model.job import mozharness_test_paths

    definition = protocol.task(task_id)
    label = str(definition.get("metadata", {}).get("name", ""))
    manifests = mozharness_test_paths(definition)
    if not manifests:
        raise InputError(
            f"task {task_id} names no manifests (no MOZHARNESS_TEST_PATHS): "
            "backfill it without --same-manifests"
        )
    repository, revision = protocol.push_of_task(task_id)
    pushlog_id = treeherder_route_pushlog_id(definition.get("routes", []))
    if pushlog_id is None:
        raise InputError(f"task {task_id} has no tc-treeherder route with a pushlog id")
    chosen = strategy("backfill-task")
    input = chosen.build_input(
        label=label, revision=revision, test_manifests=manifests, times=times
    )
    sent = 0
    for earlier in track(
        range(pushlog_id - 1, max(pushlog_id - depth, 1) - 1, -1),
        description="backfilling",
        transient=True,
    ):
        decision_task_id = protocol.decision_task_by_pushlog_id(repository, earlier)
        if decision_task_id is None:
            typer.echo(f"push {earlier}: no decision task, skipped", err=True)
            continue
        _, earlier_revision = protocol.push_of_task(decision_task_id)
        push_key = f"{key}:{earlier}" if key else None
        _request(
            protocol,
            "backfill-task",
            None,
            input,
            [label],
            live=live,
            key=push_key,
            push=(repository, earlier_revision, decision_task_id),
        )
        sent += 1
    if not sent:
        raise InputError(
            f"no earlier push of {repository} within depth {depth} has a decision task"
        )


def _protocol(live: bool = False) -> Any:
    from sheriff.actions.protocol import ActionsProtocol
    from sheriff.ci.taskcluster import clients_from_settings
    from sheriff.config import settings
    from sheriff.errors import ConfigError

    current = settings()
    if live and not current.has_taskcluster_credentials:
        raise ConfigError(
            "--live needs Taskcluster credentials: set TASKCLUSTER_CLIENT_ID and "
            "TASKCLUSTER_ACCESS_TOKEN"
        )
    return ActionsProtocol(clients_from_settings(current))


def _request(
    protocol: Any,
    strategy_name: str,
    task_id: str | None,
    input: dict[str, Any],
    labels: list[str],
    *,
    live: bool,
    key: str | None,
    push: tuple[str, str, str] | None = None,
) -> None:
    """Check the request fully, record it, send it (or not) and say what happened."""
    from sheriff.actions import log
    from sheriff.actions.errors import ActionError
    from sheriff.actions.strategies import strategy
    from sheriff.config import settings
    from sheriff.model.actions import request_key
    from sheriff.store.db import open_database

    chosen = strategy(strategy_name)
    if push is None:
        assert task_id is not None
        repository, revision = protocol.push_of_task(task_id)
        decision_task_id = protocol.decision_task(repository, revision)
    else:
        repository, revision, decision_task_id = push
    # Every protocol check before anything is written: bad input leaves no row behind.
    prepared = protocol.prepare(
        chosen.action, decision_task_id=decision_task_id, task_id=task_id, input=input
    )
    if prepared.callback == "retrigger-disabled" and not input.get("force"):
        raise ActionError(
            f'task {task_id}\'s label should not be retriggered (it has no `retrigger: "true"` '
            "tag): Gecko's retrigger would refuse it; pass --force to clone it anyway"
        )
    key = key or request_key(chosen.action, decision_task_id, task_id, input)
    engine = open_database(settings().database_url)
    try:
        with engine.begin() as conn:
            previous = log.get(conn, key)
            if previous is not None and previous.state == log.FAILED:
                # Failed means never sent: asking again by hand is safe, and meant.
                log.requeue(conn, key)
            row = log.enqueue(
                conn,
                key,
                strategy_name,
                repository=repository,
                revision=revision,
                task_id=task_id,
                input=input,
                labels=labels,
                decision_task_id=decision_task_id,
            )
        target = task_id or f"push {revision[:12]}"
        if row.state == log.SENT:
            typer.echo(
                f"{strategy_name} {target}: already sent as action task {row.action_task_id} "
                f"(key {key}); nothing sent"
            )
            return
        lease = log.lease_of(settings())
        results = log.dispatch(engine, protocol, dry_run=not live, keys=[key], lease=lease)
        with engine.connect() as conn:
            row = log.get(conn, key) or row
    finally:
        engine.dispose()
    if row.state == log.DRY_RUN:
        typer.echo(
            f"dry run: would trigger hook {prepared.hook} for {strategy_name} on {target} "
            f"with input {json.dumps(input, sort_keys=True)} (key {key}); add --live to send"
        )
    elif row.state == log.SENT:
        typer.echo(f"{strategy_name} {target}: sent, action task {row.action_task_id} (key {key})")
    elif row.state == log.FAILED:
        raise ActionError(f"{strategy_name} {target}: {row.reason}")
    elif row.state == log.SENDING and not results:
        raise ActionError(
            f"{strategy_name} {target}: request {key} is being sent by another process, or one "
            "that stopped; it is reconciled with the task group once its lease "
            f"({settings().actions_lease_minutes:g} min) ends"
        )
    else:
        raise ActionError(f"{strategy_name} {target}: not sent yet: {row.reason}")
