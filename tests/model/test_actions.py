"""Context matching, action selection and scope satisfaction, on the real reference data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sheriff.model import actions as model
from sheriff.model.task_shapes import TaskShapeError


def _load(reference: Path, name: str):
    return json.loads((reference / "treeherder" / "actions" / name).read_text())


@pytest.fixture
def actions(reference: Path) -> list[dict]:
    return _load(reference, "initialActions.json")["actions"]


def test_matching_tag_sets_match_the_task(reference: Path) -> None:
    tags = _load(reference, "matchingTaskTags.json")
    context = _load(reference, "matchingTagSetList.json")
    assert model.context_matches(context, tags)
    assert any(model.tag_set_matches(tag_set, tags) for tag_set in context)


def test_mismatching_tag_sets_do_not_match(reference: Path) -> None:
    tags = _load(reference, "mismatchingTaskTags.json")
    context = _load(reference, "mismatchingTagSetList.json")
    assert not model.context_matches(context, tags)
    assert not any(model.tag_set_matches(tag_set, tags) for tag_set in context)


def test_empty_tag_set_matches_every_task_and_push_level_needs_no_task() -> None:
    assert model.context_matches([{}], {"kind": "test"})
    assert not model.context_matches([{}], None)
    assert model.context_matches([], None)
    assert not model.context_matches([], {"kind": "test"})


def test_first_retrigger_whose_context_matches_is_chosen(reference: Path, actions) -> None:
    tags = _load(reference, "originalTask.json")["tags"]  # retrigger: "true"
    chosen = model.select_action(actions, "retrigger", tags)
    assert chosen is not None
    assert chosen["context"] == [{"retrigger": "true"}]
    assert chosen["hookPayload"]["decision"]["action"]["cb_name"] == "retrigger"


def test_decision_task_gets_the_decision_retrigger(actions) -> None:
    chosen = model.select_action(actions, "retrigger", {"kind": "decision-task"})
    assert chosen["hookPayload"]["decision"]["action"]["cb_name"] == "retrigger-decision"


def test_task_without_retrigger_tag_gets_the_disabled_retrigger(actions) -> None:
    chosen = model.select_action(actions, "retrigger", {"kind": "build"})
    assert chosen["hookPayload"]["decision"]["action"]["cb_name"] == "retrigger-disabled"


@pytest.mark.parametrize(
    ("name", "tags", "found"),
    [
        ("retrigger-multiple", None, True),
        ("add-new-jobs", None, True),
        ("retrigger-multiple", {"kind": "test"}, False),
        ("confirm-failures", {"kind": "test"}, True),
        ("confirm-failures", {"kind": "build"}, False),
        ("confirm-failures", None, False),
        ("backfill", {"kind": "test"}, True),
        ("backfill", None, False),
        ("no-such-action", {"kind": "test"}, False),
    ],
)
def test_selection_per_supported_action(actions, name, tags, found) -> None:
    chosen = model.select_action(actions, name, tags)
    assert (chosen is not None) is found
    if found:
        assert chosen["name"] == name


def test_available_actions_lists_each_name_once(reference: Path, actions) -> None:
    tags = _load(reference, "originalTask.json")["tags"]
    names = [a["name"] for a in model.available_actions(actions, tags)]
    assert len(names) == len(set(names))
    assert {"retrigger", "backfill", "confirm-failures", "geckoprofile"} <= set(names)
    assert "retrigger-multiple" not in names  # push-level
    push_names = {a["name"] for a in model.available_actions(actions, None)}
    assert {"retrigger-multiple", "add-new-jobs", "cancel-all"} <= push_names


def test_render_context_keeps_the_protocol_names_over_variables() -> None:
    context = model.render_context(
        task_group_id="G", task_id="T", input={"times": 2}, variables={"taskId": "x", "v": 1}
    )
    assert context == {"taskGroupId": "G", "taskId": "T", "input": {"times": 2}, "v": 1}


GECKO = "in-tree:hook-action:project-gecko/in-tree-action-"
HOOK_SCOPE = GECKO + "3-generic/9353e8f146"


@pytest.mark.parametrize(
    ("held", "required", "ok"),
    [
        ([GECKO + "3-*"], HOOK_SCOPE, True),
        ([HOOK_SCOPE], HOOK_SCOPE, True),
        (["*"], "in-tree:hook-action:a/b", True),
        ([GECKO + "1-*"], HOOK_SCOPE, False),
        # `*` is special only at the end.
        (["in-tree:*:project-gecko/x"], "in-tree:hook-action:project-gecko/x", False),
        (["in-tree:hook-action:a/b"], "in-tree:hook-action:a/bc", False),
        ([], "in-tree:hook-action:a/b", False),
    ],
)
def test_scope_satisfaction(held, required, ok) -> None:
    assert model.scope_satisfied(held, required) is ok


@given(st.text(min_size=0, max_size=20), st.text(min_size=0, max_size=20))
def test_a_trailing_star_matches_any_suffix(prefix: str, suffix: str) -> None:
    assert model.scope_satisfied([prefix + "*"], prefix + suffix)


def test_hook_scope() -> None:
    assert model.hook_scope("project-gecko", "in-tree-action-3-generic/abc") == (
        "in-tree:hook-action:project-gecko/in-tree-action-3-generic/abc"
    )


def test_request_key_is_stable_and_input_order_free() -> None:
    one = model.request_key("retrigger", "G", "T", {"times": 5, "downstream": False})
    two = model.request_key("retrigger", "G", "T", {"downstream": False, "times": 5})
    assert one == two
    assert one != model.request_key("retrigger", "G", "T", {"times": 4, "downstream": False})


def test_action_task_signature_from_extra_and_from_env() -> None:
    from_extra = {
        "tags": {"kind": "action-callback"},
        "extra": {
            "action": {"name": "retrigger", "context": {"taskId": "T", "input": {"times": 2}}}
        },
    }
    signature = model.action_task_signature(from_extra)
    assert signature.matches("retrigger", "T", {"times": 2})
    assert not signature.matches("retrigger", "T", {"times": 3})
    # As Gecko's .taskcluster.yml writes them: no tags.action, JSON-encoded environment.
    from_env = {
        "tags": {"kind": "action-callback"},
        "payload": {
            "env": {
                "ACTION_CALLBACK": "retrigger-multiple",
                "ACTION_INPUT": '{"requests": []}',
                "ACTION_TASK_ID": "null",
            }
        },
    }
    signature = model.action_task_signature(from_env)
    assert signature is not None and signature.name == "retrigger-multiple"
    assert signature.task_id is None and signature.callback == "retrigger-multiple"
    targeted = {**from_env, "payload": {"env": {**from_env["payload"]["env"]}}}
    targeted["payload"]["env"].update(ACTION_CALLBACK="retrigger", ACTION_TASK_ID='"T"')
    assert model.action_task_signature(targeted).task_id == "T"
    assert model.action_task_signature({"tags": {"kind": "test"}}) is None


def test_reference_action_tasks_decode_their_environment(reference: Path) -> None:
    """The real action tasks (reference taskcluster_tasks.json) carry no tags.action and a
    JSON-encoded ACTION_TASK_ID; their signature has the callback and the decoded target."""
    tasks = json.loads((reference / "treeherder/pulse/taskcluster_tasks.json").read_text())
    actions = [t for t in tasks.values() if t["tags"].get("kind") == "action-callback"]
    assert actions
    for task in actions:
        assert "action" not in task["tags"]
        signature = model.action_task_signature(task)
        env = task["payload"]["env"]
        assert signature is not None and signature.callback == env["ACTION_CALLBACK"]
        assert signature.task_id == json.loads(env["ACTION_TASK_ID"])


def test_push_and_manifests_of_the_reference_task(reference: Path) -> None:
    task = _load(reference, "originalTask.json")
    assert model.treeherder_route_push(task["routes"]) == (
        "autoland",
        "c7766d0b4a121985a8b07e6721d66ccab57bbf76",
    )
    assert model.treeherder_route_pushlog_id(task["routes"]) == 109591
    from sheriff.model.job import mozharness_test_paths

    assert mozharness_test_paths(task) is None  # a raptor task runs no manifests
    with_paths = {
        "payload": {"env": {"MOZHARNESS_TEST_PATHS": '{"xpcshell": ["a/x.toml", "b/y.toml"]}'}}
    }
    assert mozharness_test_paths(with_paths) == {"xpcshell": ["a/x.toml", "b/y.toml"]}
    # A list is no object mozharness can look the suite up in: refused, not guessed at.
    listed = {"payload": {"env": {"MOZHARNESS_TEST_PATHS": '["a/x.toml"]'}}}
    with pytest.raises(TaskShapeError, match="MOZHARNESS_TEST_PATHS"):
        mozharness_test_paths(listed)


def test_repair_schema_reads_gecko_misplaced_item_properties(actions) -> None:
    import jsonschema

    schema = model.select_action(actions, "retrigger-multiple", None)["schema"]
    good = {"requests": [{"tasks": ["test-a", "test-b"], "times": 5}]}
    # Read literally, the published schema refuses every request: that is the bug.
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(good, schema)
    repaired = model.repair_schema(schema)
    jsonschema.validate(good, repaired)
    for bad in (
        {"requests": [{"tasks": ["a"], "bogus": 1}]},
        {"requests": [{"tasks": ["a"], "times": 101}]},
        {"requests": [{"tasks": "not-a-list"}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, repaired)


def test_repair_schema_leaves_correct_schemas_alone(actions) -> None:
    for action in actions:
        if "schema" in action and action["name"] != "retrigger-multiple":
            assert model.repair_schema(action["schema"]) == action["schema"]


def test_backfill_task_takes_the_mozharness_test_paths_object_gecko_sends() -> None:
    """Gecko's backfill-task schema says `test_manifests` is an array, yet Gecko's own
    `backfill` sends it the decoded MOZHARNESS_TEST_PATHS object (input_for_support_action)
    and mozharness only reads that shape: both validate, nothing else does."""
    import jsonschema

    schema = {
        "type": "object",
        "properties": {
            "label": {"type": "string"},
            "test_manifests": {"type": "array", "items": {"type": "string"}, "default": []},
        },
    }
    widened = model.widen_schema("backfill-task", schema)
    validator = jsonschema.Draft7Validator(widened)
    assert validator.is_valid({"label": "x", "test_manifests": {"xpcshell": ["a/x.toml"]}})
    assert validator.is_valid({"label": "x", "test_manifests": ["a/x.toml"]})
    assert not validator.is_valid({"label": "x", "test_manifests": {"xpcshell": "a/x.toml"}})
    assert model.widen_schema("retrigger", schema) is schema


def test_the_backfill_task_strategy_sends_the_object_and_refuses_a_list() -> None:
    from sheriff.actions.strategies import strategy
    from sheriff.errors import InputError

    chosen = strategy("backfill-task")
    sent = chosen.build_input(
        label="L", revision="r", test_manifests={"xpcshell": ["b.toml", "a.toml"]}
    )
    assert sent["test_manifests"] == {"xpcshell": ["b.toml", "a.toml"]}
    with pytest.raises(InputError, match="MOZHARNESS_TEST_PATHS"):
        chosen.build_input(label="L", revision="r", test_manifests=["a.toml"])
