"""Taskcluster actions: the actions.json protocol, strategies and the request log.

The rest of sheriff calls:

- `log.enqueue(conn, key, strategy, *, repository, revision, task_id, input, labels=())`
  inside its own transaction, so a plan and its request commit together;
- `log.dispatch(engine, ActionsProtocol(clients), dry_run=...)` to send what is requested;
- `log.runs_requested(conn, repository, revision, exclude_action_tasks=...)`.

See docs/actions.md.
"""
