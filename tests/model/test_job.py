"""Jobs derived from real task definitions agree with Treeherder's own transform."""

import calendar
import json

import pytest

from sheriff.model.job import (
    PULSE_EXCHANGE_STATES,
    TaskShapeError,
    job_from_task,
    manifests_from_env,
    push_from_routes,
    task_queue_id,
)


@pytest.fixture(scope="module")
def pulse_data(reference):
    base = reference / "treeherder" / "pulse"
    return (
        json.loads((base / "taskcluster_tasks.json").read_text()),
        json.loads((base / "taskcluster_pulse_messages.json").read_text()),
        json.loads((base / "taskcluster_transformed_jobs.json").read_text()),
    )


def _timestamp(value):
    return calendar.timegm(value.utctimetuple()) if value else None


def test_all_91_jobs_agree_with_treeherder(pulse_data) -> None:
    tasks, messages, transformed = pulse_data
    assert len(tasks) == len(messages) == len(transformed) == 91
    for task_id, task in tasks.items():
        payload = messages[task_id]["payload"]
        run_id = payload["runId"]
        assert PULSE_EXCHANGE_STATES[messages[task_id]["exchange"]]
        job = job_from_task(task_id, task, run_id, payload["status"]["runs"][run_id])
        expected = transformed[task_id]["job"]
        ours = {
            "build_platform": vars(job.build_platform),
            "machine_platform": vars(job.machine_platform),
            "group_name": job.group_name,
            "group_symbol": job.group_symbol,
            "job_symbol": job.job_symbol,
            "job_guid": job.job_guid,
            "name": job.job_type_name,
            "option_collection": {label: True for label in job.option_collection.split()},
            "tier": job.tier,
            "state": job.state,
            "result": job.result,
            "reason": job.reason,
            "who": job.who,
            "product_name": job.product_name,
            "machine": job.machine,
            "build_system_type": "taskcluster",
            "taskcluster_task_id": job.task_id,
            "taskcluster_retry_id": job.run_id,
            "submit_timestamp": _timestamp(job.submit_time),
            "start_timestamp": _timestamp(job.start_time),
            "end_timestamp": _timestamp(job.end_time),
        }
        # Fields Treeherder leaves out until the run has them.
        for optional in ("start_timestamp", "end_timestamp"):
            if optional not in expected:
                assert ours.pop(optional) is None, (task_id, optional)
        # Deliberately not compared: log_references and perfherder_data_references
        # (Treeherder fills them from artifact listings it fetches over the network;
        # sheriff reads artifacts itself when triaging) and `superseded` (coalescing).
        compared = {k: expected[k] for k in ours}
        assert ours == compared, task_id
        assert transformed[task_id]["revision"] == job.push.revision


def test_submit_timestamp_is_task_creation_not_scheduling(pulse_data) -> None:
    tasks, _, transformed = pulse_data
    task_id = next(iter(tasks))
    job = job_from_task(task_id, tasks[task_id])
    assert _timestamp(job.submit_time) == transformed[task_id]["job"]["submit_timestamp"]
    assert job.state == "unscheduled" and job.result == "unknown"


def test_old_tasks_get_their_queue_from_provisioner_and_worker_type(pulse_data) -> None:
    tasks, _, _ = pulse_data
    task = tasks["A35mWTRuQmyj88yMnIF0fA"]
    assert task_queue_id(task) == "aws-provisioner-v1/gecko-t-linux-large"
    assert task_queue_id({**task, "taskQueueId": "gecko-t/t-linux-large-gcp"}) == (
        "gecko-t/t-linux-large-gcp"
    )
    with pytest.raises(TaskShapeError):
        task_queue_id({"metadata": {}})


def test_push_from_routes() -> None:
    ref = push_from_routes(["index.x", "tc-treeherder.v2.autoland.abc123.88565"])
    assert (ref.repository, ref.revision, ref.pushlog_id) == ("autoland", "abc123", 88565)
    assert push_from_routes(["index.x"]) is None
    assert push_from_routes(["tc-treeherder.v2.a.b.1", "tc-treeherder.v2.a.c.2"]) is None


def test_manifests_from_mozharness_test_paths() -> None:
    env = {"MOZHARNESS_TEST_PATHS": json.dumps({"xpcshell": ["b/x.toml", "a/x.toml"]})}
    assert manifests_from_env({"payload": {"env": env}}) == ("a/x.toml", "b/x.toml")
    assert manifests_from_env({"payload": {"env": {}}}) is None
    with pytest.raises(TaskShapeError, match="not JSON"):
        manifests_from_env({"payload": {"env": {"MOZHARNESS_TEST_PATHS": "{nope"}}})


def test_failed_and_exception_runs_map_like_treeherder(pulse_data) -> None:
    tasks, _, _ = pulse_data
    task_id = "A35mWTRuQmyj88yMnIF0fA"
    failed = job_from_task(task_id, tasks[task_id], 0, {"state": "failed"})
    assert (failed.state, failed.result) == ("completed", "testfailed")
    infra = job_from_task(task_id, tasks[task_id], 0, {"state": "exception"})
    assert (infra.state, infra.result) == ("completed", "exception")
    cancelled = job_from_task(
        task_id, tasks[task_id], 0, {"state": "exception", "reasonResolved": "canceled"}
    )
    assert cancelled.result == "usercancel"


def test_a_task_without_treeherder_config_is_rejected_with_reason() -> None:
    with pytest.raises(TaskShapeError, match=r"extra\.treeherder"):
        job_from_task("A35mWTRuQmyj88yMnIF0fA", {"metadata": {"name": "n"}, "extra": {}})
