"""Taskcluster's actions protocol, step by step (SPEC §4).

decision task (Index) → `public/actions.json` (version 1) → the target task's definition →
first action of the name whose context matches the task's tags → input checked against
the action's schema → `hookPayload` rendered with JSON-e → the decision task's expanded
scopes must satisfy `in-tree:hook-action:<hookGroupId>/<hookId>` → `triggerHook` → the
action task id. Each failure raises its own `ActionError` subclass.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import jsone
import jsonschema

from sheriff.actions.errors import (
    ActionsJsonMalformed,
    ActionsJsonMissing,
    HookFailed,
    InvalidActionInput,
    NoDecisionTask,
    NoMatchingAction,
    ScopesNotSatisfied,
    UnsupportedActionKind,
    UnsupportedActionsVersion,
)
from sheriff.ci.artifacts import artifact_json, read_whole
from sheriff.ci.taskcluster import (
    TaskclusterClients,
    TaskclusterError,
    TaskclusterNotFound,
    TaskclusterUnavailable,
    paginate,
)
from sheriff.model import actions as model

ACTIONS_ARTIFACT = "public/actions.json"


def decision_index_path(repository: str, revision: str) -> str:
    return f"gecko.v2.{repository}.revision.{revision}.taskgraph.decision"


def pushlog_index_path(repository: str, pushlog_id: int) -> str:
    return f"gecko.v2.{repository}.pushlog-id.{pushlog_id}.decision"


@dataclass(frozen=True)
class PreparedAction:
    """Everything `triggerHook` needs, checked and rendered, plus where it came from."""

    name: str
    decision_task_id: str
    task_id: str | None
    input: Any
    hook_group_id: str
    hook_id: str
    payload: Any
    callback: str | None  # hookPayload.decision.action.cb_name, when the payload has one

    @property
    def hook(self) -> str:
        return f"{self.hook_group_id}/{self.hook_id}"


@dataclass(frozen=True)
class ActionTask:
    """A task in a push's task group that an action created."""

    task_id: str
    signature: model.ActionTaskSignature
    state: str


class ActionsProtocol:
    """Runs the protocol against one Taskcluster deployment; caches what cannot change."""

    def __init__(self, clients: TaskclusterClients, *, hook_retries: int | None = None) -> None:
        self.clients = clients
        self._hook_retries = clients.transport.retries if hook_retries is None else hook_retries
        self._tasks: dict[str, Mapping[str, Any]] = {}
        self._actions: dict[str, Mapping[str, Any]] = {}
        self._scopes: dict[tuple[str, ...], list[str]] = {}  # by the scopes sent
        self._decisions: dict[tuple[str, str], str] = {}
        self._validators: dict[str, Any] = {}

    # -- reading -----------------------------------------------------------------------

    def decision_task(self, repository: str, revision: str) -> str:
        """The push's decision task id, from the Index (cached: a push has one)."""
        if (repository, revision) in self._decisions:
            return self._decisions[(repository, revision)]
        path = decision_index_path(repository, revision)
        try:
            found = str(self.clients.index.findTask(path)["taskId"])
        except TaskclusterNotFound as exc:
            raise NoDecisionTask(
                f"no decision task for {repository} {revision[:12]}: index path {path} not found"
            ) from exc
        self._decisions[(repository, revision)] = found
        return found

    def decision_task_by_pushlog_id(self, repository: str, pushlog_id: int) -> str | None:
        """The decision task of push `pushlog_id`, or None when the Index has none."""
        try:
            found = self.clients.index.findTask(pushlog_index_path(repository, pushlog_id))
        except TaskclusterNotFound:
            return None
        return str(found["taskId"])

    def remember_task(self, task_id: str, definition: Mapping[str, Any]) -> None:
        """A task's definition read elsewhere (a listing of its group): not asked again."""
        self._tasks.setdefault(task_id, definition)

    def task(self, task_id: str) -> Mapping[str, Any]:
        """A task's definition (cached: definitions never change)."""
        if task_id not in self._tasks:
            try:
                self._tasks[task_id] = self.clients.queue.task(task_id)
            except TaskclusterNotFound as exc:
                raise NoMatchingAction(f"task {task_id} does not exist") from exc
        return self._tasks[task_id]

    def push_of_task(self, task_id: str) -> tuple[str, str]:
        """(repository, revision) a task ran for, from its Treeherder route or environment."""
        definition = self.task(task_id)
        found = model.treeherder_route_push(definition.get("routes", []))
        if found:
            return found
        env = (definition.get("payload") or {}).get("env") or {}
        revision = env.get("GECKO_HEAD_REV")
        project = (env.get("GECKO_HEAD_REPOSITORY") or "").rstrip("/").rsplit("/", 1)[-1]
        if revision and project:
            return project, revision
        raise NoDecisionTask(f"task {task_id} names no push (no tc-treeherder route)")

    def actions_json(self, decision_task_id: str) -> Mapping[str, Any]:
        """The decision task's actions.json, checked to be a usable version 1 file."""
        if decision_task_id not in self._actions:
            self._actions[decision_task_id] = self._load_actions(decision_task_id)
        return self._actions[decision_task_id]

    def _load_actions(self, decision_task_id: str) -> Mapping[str, Any]:
        where = f"{ACTIONS_ARTIFACT} of {decision_task_id}"
        try:
            # Bytes that are not JSON are a failed download (ArtifactUnreadable, an
            # outage: read again, then the request waits for the next pass), not a
            # malformed actions.json.
            data = read_whole(
                lambda: self.clients.latest_artifact(decision_task_id, ACTIONS_ARTIFACT),
                lambda raw: artifact_json(raw, where),
            )
        except TaskclusterNotFound as exc:
            raise ActionsJsonMissing(
                f"decision task {decision_task_id} has no {ACTIONS_ARTIFACT}"
            ) from exc
        if not isinstance(data, dict):
            raise ActionsJsonMalformed(f"{where} is not a JSON object")
        if data.get("version") != model.SUPPORTED_VERSION:
            raise UnsupportedActionsVersion(
                f"{where} has version {data.get('version')!r}; sheriff reads version 1"
            )
        actions = data.get("actions")
        if not isinstance(actions, list) or not all(
            isinstance(a, dict) and isinstance(a.get("name"), str) for a in actions
        ):
            raise ActionsJsonMalformed(f"{where}: `actions` is not a list of named actions")
        for action in actions:
            context = action.get("context", [])
            if not isinstance(context, list) or not all(isinstance(t, dict) for t in context):
                raise ActionsJsonMalformed(
                    f"{where}: action {action['name']!r} has a context that is not "
                    "a list of tag-sets"
                )
        if not isinstance(data.get("variables", {}), dict):
            raise ActionsJsonMalformed(f"{where}: `variables` is not an object")
        return data

    def available(self, decision_task_id: str, task_id: str | None) -> list[Mapping[str, Any]]:
        """The actions a user could run on the task (or the push, for None)."""
        tags = self._tags(task_id)
        return model.available_actions(self.actions_json(decision_task_id)["actions"], tags)

    def _tags(self, task_id: str | None) -> Mapping[str, str] | None:
        if task_id is None:
            return None
        return self.task(task_id).get("tags") or {}

    def expanded_scopes(self, decision_task_id: str) -> list[str]:
        """The decision task's scopes with every role expanded (Auth `expandScopes`).

        Only the scopes that can assume a role are sent, and their expansion is kept by
        that set: the decision tasks of a repository share their role (`assume:repo:…`)
        and differ in scopes that expand to themselves (the author's notify route), so
        one call serves every push. Expansion is a union over the scopes, so the result
        satisfies what the whole set's expansion satisfies."""
        scopes = [str(s) for s in self.task(decision_task_id).get("scopes") or []]
        assuming = tuple(sorted({s for s in scopes if model.may_assume_role(s)}))
        if assuming not in self._scopes:
            expanded = (
                self.clients.auth.expandScopes({"scopes": list(assuming)}) if assuming else {}
            )
            self._scopes[assuming] = list(expanded.get("scopes", []))
        return sorted(set(self._scopes[assuming]) | set(scopes))

    # -- preparing and sending ---------------------------------------------------------

    def prepare(
        self, name: str, *, decision_task_id: str, task_id: str | None, input: Any
    ) -> PreparedAction:
        """Select, validate, render and authorise one action; raises the step's error."""
        data = self.actions_json(decision_task_id)
        tags = self._tags(task_id)
        action = model.select_action(data["actions"], name, tags)
        target = f"task {task_id}" if task_id else f"the push of {decision_task_id}"
        if action is None:
            names = sorted({a["name"] for a in model.available_actions(data["actions"], tags)})
            raise NoMatchingAction(
                f"no action {name!r} applies to {target}; available: {', '.join(names) or 'none'}"
            )
        if action.get("kind") != model.SUPPORTED_KIND:
            raise UnsupportedActionKind(
                f"action {name!r} has kind {action.get('kind')!r}; sheriff sends only hook actions"
            )
        for field in ("hookGroupId", "hookId", "hookPayload"):
            if field not in action:
                raise ActionsJsonMalformed(f"hook action {name!r} has no {field}")
        schema = action.get("schema")
        if schema is not None:
            error = jsonschema.exceptions.best_match(
                self._validator(name, schema).iter_errors(input)
            )
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path) or "input"
                raise InvalidActionInput(
                    f"input for {name!r} on {target} is invalid at {where}: {error.message}"
                )
        context = model.render_context(
            task_group_id=decision_task_id,
            task_id=task_id,
            input=input,
            variables=data.get("variables", {}),
        )
        try:
            payload = jsone.render(action["hookPayload"], context)
        except jsone.JSONTemplateError as exc:
            raise ActionsJsonMalformed(f"hookPayload of {name!r} does not render: {exc}") from exc
        required = model.hook_scope(action["hookGroupId"], action["hookId"])
        if not model.scope_satisfied(self.expanded_scopes(decision_task_id), required):
            raise ScopesNotSatisfied(
                f"decision task {decision_task_id} lacks scope {required}: "
                "its actions.json may not trigger that hook"
            )
        callback = None
        if isinstance(payload, dict):
            callback = ((payload.get("decision") or {}).get("action") or {}).get("cb_name")
        return PreparedAction(
            name=name,
            decision_task_id=decision_task_id,
            task_id=task_id,
            input=input,
            hook_group_id=action["hookGroupId"],
            hook_id=action["hookId"],
            payload=payload,
            callback=callback,
        )

    def _validator(self, name: str, schema: Any) -> Any:
        """A checked validator per distinct schema: checking a schema costs more than using it."""
        key = model.canonical_json([name, schema])
        if key not in self._validators:
            repaired = model.widen_schema(name, model.repair_schema(schema))
            cls = jsonschema.validators.validator_for(repaired)
            try:
                cls.check_schema(repaired)
            except jsonschema.SchemaError as exc:
                raise ActionsJsonMalformed(f"action {name!r} has an invalid schema") from exc
            self._validators[key] = cls(repaired)
        return self._validators[key]

    def trigger(
        self,
        prepared: PreparedAction,
        *,
        known_action_tasks: Callable[[], Collection[str]] = frozenset,
    ) -> str:
        """Trigger the hook once; returns the action task id.

        A 5xx may come after the hook created its task, so before each retry the task
        group is searched for an action task matching this request that is not one of
        `known_action_tasks()` (those other requests already own): found means sent.
        """
        hooks = self.clients.hooks_once
        policy = self.clients.transport
        for attempt in range(self._hook_retries + 1):
            if attempt:
                policy.sleep(policy.backoff(attempt))
                found = self.find_action_task(prepared, exclude=known_action_tasks())
                if found:
                    return found
            try:
                answer = hooks.triggerHook(
                    prepared.hook_group_id, prepared.hook_id, prepared.payload
                )
            except TaskclusterUnavailable as exc:
                if attempt < self._hook_retries:
                    continue
                raise HookFailed(f"triggerHook {prepared.hook} failed: {exc}") from exc
            except TaskclusterError as exc:
                raise HookFailed(f"triggerHook {prepared.hook} refused: {exc}") from exc
            task_id = (answer or {}).get("status", {}).get("taskId") or (answer or {}).get("taskId")
            if not task_id:
                raise HookFailed(f"triggerHook {prepared.hook} answered without a task id")
            return str(task_id)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def action_tasks(self, decision_task_id: str) -> list[ActionTask]:
        """Every action task in the push's task group (always fresh: it is what changes)."""
        found = []
        for item in paginate(self.clients.queue.listTaskGroup, decision_task_id, key="tasks"):
            signature = model.action_task_signature(item.get("task") or {})
            if signature is not None:
                status = item.get("status") or {}
                found.append(
                    ActionTask(status.get("taskId", ""), signature, status.get("state", ""))
                )
        return found

    def find_action_task(
        self, prepared: PreparedAction, *, exclude: Collection[str] = ()
    ) -> str | None:
        """The action task this request created, if the task group shows one."""
        names = {prepared.name} | ({prepared.callback} if prepared.callback else set())
        for task in self.action_tasks(prepared.decision_task_id):
            if task.task_id in exclude:
                continue
            if any(task.signature.matches(n, prepared.task_id, prepared.input) for n in names):
                return task.task_id
        return None
