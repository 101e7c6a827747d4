"""The protocol, step by step, on the real actions.json and task of reference-data."""

from __future__ import annotations

import json

import pytest

from sheriff.actions import errors
from sheriff.actions.protocol import ActionsProtocol
from sheriff.actions.strategies import REGISTRY, strategy
from sheriff.ci.artifacts import ArtifactUnreadable
from tests.actions.conftest import DECISION, ORIGINAL, REPO, REVISION, FakeTaskcluster


def test_decision_task_from_the_index(protocol: ActionsProtocol) -> None:
    assert protocol.decision_task(REPO, REVISION) == DECISION
    with pytest.raises(errors.NoDecisionTask, match=r"gecko\.v2\.autoland\.revision\.beef"):
        protocol.decision_task(REPO, "beef")


def test_push_of_a_task_from_its_treeherder_route(protocol: ActionsProtocol) -> None:
    assert protocol.push_of_task(ORIGINAL) == (REPO, REVISION)


def test_retrigger_renders_the_real_hook_payload(protocol: ActionsProtocol) -> None:
    prepared = protocol.prepare(
        "retrigger", decision_task_id=DECISION, task_id=ORIGINAL, input={"times": 5}
    )
    assert prepared.hook == "project-gecko/in-tree-action-3-generic/9353e8f146"
    assert prepared.callback == "retrigger"
    assert prepared.payload["user"] == {
        "input": {"times": 5},
        "taskGroupId": DECISION,
        "taskId": ORIGINAL,
    }
    assert prepared.payload["decision"]["push"]["revision"] == REVISION


@pytest.mark.parametrize(
    ("name", "params", "cb_name"),
    [
        ("retrigger", {"times": 3}, "retrigger"),
        ("retrigger-multiple", {"labels": ["a", "b", "c"], "times": 5}, "retrigger-multiple"),
        ("backfill", {"depth": 4}, "backfill"),
        ("confirm-failures", {"times": 2}, "confirm-failures"),
        ("add-new-jobs", {"labels": ["test-x"]}, "add-new-jobs"),
    ],
)
def test_each_strategy_prepares_against_the_real_actions(
    protocol: ActionsProtocol, name: str, params: dict, cb_name: str
) -> None:
    chosen = strategy(name)
    task_id = None if chosen.push_level else ORIGINAL
    input = chosen.build_input(**params)
    prepared = protocol.prepare(
        chosen.action, decision_task_id=DECISION, task_id=task_id, input=input
    )
    assert prepared.callback == cb_name
    assert prepared.payload["user"]["input"] == input
    assert prepared.payload["user"]["taskId"] == task_id


def test_every_registered_strategy_is_tested_somewhere() -> None:
    assert set(REGISTRY) == {
        "retrigger",
        "retrigger-multiple",
        "backfill",
        "backfill-task",
        "confirm-failures",
        "add-new-jobs",
        "dry-run",
    }


def test_retrigger_multiple_batches_labels_by_times() -> None:
    chosen = strategy("retrigger-multiple")
    input = chosen.build_input(labels={"b": 5, "a": 5, "c": 2})
    assert input == {"requests": [{"tasks": ["c"], "times": 2}, {"tasks": ["a", "b"], "times": 5}]}
    assert chosen.runs(input, []) == {"a": 5, "b": 5, "c": 2}


def test_invalid_input_names_the_field(protocol: ActionsProtocol) -> None:
    with pytest.raises(errors.InvalidActionInput, match=r"times.*101 is greater than"):
        protocol.prepare(
            "retrigger", decision_task_id=DECISION, task_id=ORIGINAL, input={"times": 101}
        )
    with pytest.raises(errors.InvalidActionInput, match="Additional properties"):
        protocol.prepare("backfill", decision_task_id=DECISION, task_id=ORIGINAL, input={"x": 1})


def test_no_matching_action_lists_what_is_available(protocol: ActionsProtocol) -> None:
    with pytest.raises(
        errors.NoMatchingAction, match=r"no action 'retrigger-multiple'.*available: .*backfill"
    ):
        protocol.prepare(
            "retrigger-multiple", decision_task_id=DECISION, task_id=ORIGINAL, input={}
        )
    with pytest.raises(errors.NoMatchingAction, match="does not exist"):
        protocol.prepare("retrigger", decision_task_id=DECISION, task_id="NOPE", input={})


def _replace_actions(world: FakeTaskcluster, edit) -> None:
    data = json.loads(world.artifacts[(DECISION, "public/actions.json")])
    edit(data)
    world.artifacts[(DECISION, "public/actions.json")] = json.dumps(data).encode()


def test_missing_actions_json(world: FakeTaskcluster, protocol: ActionsProtocol) -> None:
    del world.artifacts[(DECISION, "public/actions.json")]
    with pytest.raises(errors.ActionsJsonMissing, match=r"has no public/actions\.json"):
        protocol.prepare("retrigger", decision_task_id=DECISION, task_id=ORIGINAL, input={})


def test_actions_json_that_is_not_json_is_a_failed_download(
    world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    # Bytes that are not JSON are no actions.json: an outage to wait out, not a verdict.
    for broken in (b"{not json", b"\x1f\x8b\x08\x00cut", b"\xff\xfe garbage"):
        world.artifacts[(DECISION, "public/actions.json")] = broken
        with pytest.raises(ArtifactUnreadable, match=r"public/actions\.json of .*: not "):
            protocol.actions_json(DECISION)
    world.artifacts[(DECISION, "public/actions.json")] = b"[1, 2]"
    with pytest.raises(errors.ActionsJsonMalformed, match="is not a JSON object"):
        protocol.actions_json(DECISION)


def test_actions_json_without_actions(world: FakeTaskcluster, protocol: ActionsProtocol) -> None:
    _replace_actions(world, lambda d: d.pop("actions"))
    with pytest.raises(errors.ActionsJsonMalformed, match="not a list of named actions"):
        protocol.actions_json(DECISION)


def test_wrong_version(world: FakeTaskcluster, protocol: ActionsProtocol) -> None:
    _replace_actions(world, lambda d: d.update(version=2))
    with pytest.raises(errors.UnsupportedActionsVersion, match="version 2"):
        protocol.actions_json(DECISION)


def test_task_kind_actions_are_refused(world: FakeTaskcluster, protocol: ActionsProtocol) -> None:
    def make_task_kind(data: dict) -> None:
        for action in data["actions"]:
            if action["name"] == "confirm-failures":
                action["kind"] = "task"

    _replace_actions(world, make_task_kind)
    with pytest.raises(errors.UnsupportedActionKind, match="kind 'task'"):
        protocol.prepare("confirm-failures", decision_task_id=DECISION, task_id=ORIGINAL, input={})


def test_scopes_not_satisfied(world: FakeTaskcluster, protocol: ActionsProtocol) -> None:
    world.roles.clear()
    with pytest.raises(
        errors.ScopesNotSatisfied, match="lacks scope in-tree:hook-action:project-gecko"
    ):
        protocol.prepare("retrigger", decision_task_id=DECISION, task_id=ORIGINAL, input={})


def test_decision_tasks_sharing_a_role_expand_it_once(
    world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    # Decision tasks of one repository differ in the author's notify route, a scope that
    # expands to itself: Auth is asked about the role once, and nothing else is sent.
    role = "assume:repo:hg.mozilla.org/integration/autoland:branch:default"
    for n, author in enumerate(("a@example.com", "b@example.com")):
        world.tasks[f"DECISION_{n}"] = {
            **world.tasks[DECISION],
            "scopes": [role, f"queue:route:notify.email.{author}.*"],
        }
    first = protocol.expanded_scopes("DECISION_0")
    second = protocol.expanded_scopes("DECISION_1")
    assert [c for c in world.calls if c[0] == "expandScopes"] == [("expandScopes", role)]
    assert "in-tree:hook-action:project-gecko/in-tree-action-3-*" in first
    assert "queue:route:notify.email.a@example.com.*" in first
    assert "queue:route:notify.email.b@example.com.*" in second
    assert "queue:route:notify.email.a@example.com.*" not in second


def test_a_definition_read_from_a_listing_is_not_asked_again(
    world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    protocol.remember_task(DECISION, world.tasks[DECISION])
    protocol.prepare("retrigger", decision_task_id=DECISION, task_id=ORIGINAL, input={})
    assert ("task", DECISION) not in world.calls


def test_only_scopes_that_can_assume_a_role_are_expanded() -> None:
    from sheriff.model.actions import may_assume_role

    assert may_assume_role("assume:repo:hg.mozilla.org/try:branch:default")
    assert may_assume_role("*") and may_assume_role("assu*") and may_assume_role("assume:*")
    assert not may_assume_role("queue:route:notify.email.a@example.com.*")
    assert not may_assume_role("assumes")


def test_trigger_returns_the_action_task(world: FakeTaskcluster, protocol: ActionsProtocol) -> None:
    prepared = protocol.prepare(
        "retrigger", decision_task_id=DECISION, task_id=ORIGINAL, input={"times": 2}
    )
    action_task = protocol.trigger(prepared)
    assert world.tasks[action_task]["taskGroupId"] == DECISION
    assert protocol.find_action_task(prepared) == action_task
    assert protocol.find_action_task(prepared, exclude={action_task}) is None


def test_hook_4xx_is_not_retried(world: FakeTaskcluster, protocol: ActionsProtocol) -> None:
    world.hook_failures = [400]
    prepared = protocol.prepare("retrigger", decision_task_id=DECISION, task_id=ORIGINAL, input={})
    with pytest.raises(errors.HookFailed, match=r"refused.*HTTP 400"):
        protocol.trigger(prepared)
    assert len(world.triggered) == 1


def test_hook_5xx_is_retried(world: FakeTaskcluster, protocol: ActionsProtocol) -> None:
    world.hook_failures = [503]
    prepared = protocol.prepare("retrigger", decision_task_id=DECISION, task_id=ORIGINAL, input={})
    assert protocol.trigger(prepared)
    assert len(world.triggered) == 2
    world.hook_failures = [503, 503, 503]
    other = protocol.prepare(
        "retrigger", decision_task_id=DECISION, task_id=ORIGINAL, input={"times": 9}
    )
    with pytest.raises(errors.HookFailed, match=r"failed.*HTTP 503"):
        protocol.trigger(other)
    assert len(world.triggered) == 5


def test_5xx_after_the_hook_created_its_task_is_not_sent_again(
    world: FakeTaskcluster, protocol: ActionsProtocol
) -> None:
    world.hook_failures = ["503-after-create"]
    prepared = protocol.prepare(
        "retrigger", decision_task_id=DECISION, task_id=ORIGINAL, input={"times": 3}
    )
    action_task = protocol.trigger(prepared)
    assert len(world.triggered) == 1
    assert world.action_task_count() == 1
    assert world.tasks[action_task]["extra"]["action"]["context"]["input"] == {"times": 3}
