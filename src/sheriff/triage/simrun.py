"""Play a scenario against sheriff end to end over HTTP, and measure it against ground truth.

The simulator runs in-process on a loopback port; sheriff reaches it only over HTTP, with
the simulator's default Taskcluster client, exactly as it would reach Firefox CI. A triage
pass runs every `pass_minutes` virtual minutes until every case has a final verdict or
the scenario's time plus 12 virtual hours has passed. The metrics object is the one of
docs/simulator.md.
"""

from __future__ import annotations

import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from sheriff.actions import log as request_log
from sheriff.actions.strategies import REGISTRY
from sheriff.backfill import culprit_metrics
from sheriff.backfill.status import report_about, report_claims, tests_named
from sheriff.ci.retry import policy_from_settings
from sheriff.ci.taskcluster import taskcluster_clients
from sheriff.ci.treeherder import Treeherder
from sheriff.config import load_settings
from sheriff.errors import InputError, ServiceError
from sheriff.sim.app import SIM_MATRIX_ROOM, SIM_MATRIX_TOKEN
from sheriff.sim.treeherder_api import SIM_TREEHERDER_TOKEN
from sheriff.store.db import open_database
from sheriff.store.loader import matching
from sheriff.store.schema import backfill_report, job, job_type, push, task_queue, triage_case
from sheriff.triage.engine import PassSummary, Triage

SIM_CLIENT_ID = "sheriff-dev"
SIM_ACCESS_TOKEN = "sheriff-dev-token"
EXTRA_HOURS = 12
# A play ends with the error when passes have failed for this long without a break.
MAX_OUTAGE = timedelta(hours=2)
FINAL_VERDICTS = ("regression", "intermittent", "infra", "not-eligible", "classified", "wrong-tier")


class SimProcess:
    """`sheriff sim serve` in a child process: sheriff and the simulator each get a core,
    and sheriff reaches the simulator only over HTTP, as it would reach Firefox CI."""

    def __init__(self, scenario_path: Path, *, pulse_url: str | None = None) -> None:
        self.scenario_path = scenario_path
        self.pulse_url = pulse_url
        self.root_url = ""
        self._process: subprocess.Popen[str] | None = None
        self._admin: httpx.Client | None = None
        self.now = datetime.now(UTC)
        self.finished = False

    def __enter__(self) -> SimProcess:
        command = [sys.executable, "-m", "sheriff", "sim", "serve", "--port", "0"]
        if self.pulse_url:
            command += ["--pulse-url", self.pulse_url]
        self._process = subprocess.Popen(
            [*command, "--scenario", str(self.scenario_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline().strip()
        if not line.startswith("http"):
            self.__exit__()
            raise ServiceError(f"the simulator did not start for {self.scenario_path}")
        self.root_url = line
        self._admin = httpx.Client(base_url=line, timeout=300)
        self._clock(self._admin.get("/__sim__/clock").json())
        return self

    def __exit__(self, *_: object) -> None:
        if self._admin is not None:
            self._admin.close()
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()

    def _clock(self, answer: dict[str, Any]) -> None:
        self.now = datetime.fromisoformat(answer["now"].replace("Z", "+00:00"))
        self.finished = bool(answer["finished"])

    def advance(self, minutes: float) -> None:
        assert self._admin is not None
        answer = self._admin.post("/__sim__/advance", params={"minutes": minutes})
        answer.raise_for_status()
        self._clock(answer.json())

    def truth(self) -> dict[str, Any]:
        assert self._admin is not None
        return self._admin.get("/__sim__/truth").json()

    def stats(self) -> dict[str, Any]:
        assert self._admin is not None
        return self._admin.get("/__sim__/stats").json()

    def load(self, queue_prefixes: list[str] | None = None) -> dict[str, Any]:
        """The load left for people, as the simulator's Treeherder holds it (and on the
        queues sheriff triages, `views.in_scope`)."""
        assert self._admin is not None
        params = {"queue_prefixes": ",".join(queue_prefixes or [])}
        return self._admin.get("/__sim__/load", params=params).json()


def load_figures(load: dict[str, Any]) -> dict[str, Any]:
    """The `load` figures of a play: Treeherder's view (its marking, mozci and sheriff's
    write-back count as classified) beside what a person would face with none of them."""
    view = load["views"]["treeherder"]
    return {
        "failed_jobs": load["failed_jobs"],
        "failed_jobs_from_actions": load["failed_jobs_from_actions"],
        **view,
        "unclassified_without_automation": load["views"]["none"]["unclassified"],
        "written_back": load["written_back"],
        "overwritten_person": load["overwritten_person"],
        "regression_as_intermittent_by": load["regression_as_intermittent_by"],
        "unclassified_by_truth": load["unclassified_by_truth"],
        "unclassified_sample": load["unclassified_sample"],
        "alerts": load["alerts"],
        "in_scope": load["views"].get("in_scope"),
    }


def regression_records(engine: sa.Engine) -> list[dict[str, Any]]:
    """sheriff's regression records, oldest first: what it would announce."""
    from sheriff.store.regressions import list_regressions

    with engine.connect() as conn:
        found = list_regressions(conn, count=1000)
    return [
        {
            "id": r["id"],
            "status": r["status"],
            "tests": r["tests"],
            "configurations": r["configurations"],
            "first_push": (r["first_push"] or {}).get("revision"),
            "culprit": (r["culprit"] or {}).get("revision"),
            "culprit_author": (r["culprit"] or {}).get("author"),
            "stopped_push": (r["stopped_push"] or {}).get("revision"),
            "cases": len(r["cases"]),
        }
        for r in reversed(found)
    ]


def play_without_sheriff(
    scenario_path: str | Path, queue_prefixes: list[str] | None = None
) -> dict[str, Any]:
    """The same world with no sheriff at all: the clock runs to the play's end; the
    `load` figures of nobody (`none`) and of Treeherder's own marking (`treeherder`)."""
    from sheriff.sim.scenario import load_scenario, resolve_scenario

    path = resolve_scenario(scenario_path)
    scenario = load_scenario(path)
    with SimProcess(path) as sim:
        begin = sim.now
        last_push = begin + timedelta(minutes=scenario.push_interval_minutes * scenario.pushes)
        deadline = last_push + timedelta(hours=EXTRA_HOURS)
        while sim.now < deadline and not (sim.now >= last_push and sim.finished):
            sim.advance(minutes=60)
        load = sim.load(queue_prefixes)
    views = load["views"]
    return {"scenario": scenario.name, **views}


def require_empty_store(url: str) -> sa.Engine:
    """The store at `url`, migrated, if it holds no push yet: two plays in one store would
    mix their histories and their metrics."""
    engine = open_database(url)
    with engine.connect() as conn:
        empty = conn.execute(sa.select(push.c.id).limit(1)).first() is None
    if not empty:
        engine.dispose()
        raise InputError(f"{url} already holds pushes: play needs an empty store")
    return engine


def _die_with_parent() -> None:
    """In the child: end when the parent does, even when it is killed and cannot clean up
    (a simulator left behind keeps a core and half a gigabyte)."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def play(
    scenario_path: str | Path,
    *,
    policy: str | None = None,
    backfill: str | None = None,
    same_manifests: bool = True,
    queue_prefixes: list[str] | None = None,
    database_url: str | None = None,
    pass_minutes: int = 10,
    progress: Callable[[float, PassSummary], None] | None = None,
) -> dict[str, Any]:
    """Play a scenario with `policy` (default: the setting); returns the metrics object (see
    the module docstring). A scenario with `faults:` is played twice, faults first and then
    the same world without them, and `faults` in the metrics compares the two."""
    from sheriff.sim.scenario import load_scenario, resolve_scenario

    path = resolve_scenario(scenario_path)
    scenario = scenarios_of(path)
    options = {
        "policy": policy,
        "backfill": backfill,
        "same_manifests": same_manifests,
        "queue_prefixes": queue_prefixes,
        "pass_minutes": pass_minutes,
    }
    started = time.perf_counter()
    if isinstance(scenario, list) or not scenario.faults.active:
        metrics, _ = _play_once(path, scenario, database_url, progress, **options)
        metrics["wall_seconds"] = round(time.perf_counter() - started, 1)
        return metrics
    metrics, faulty = _play_once(path, scenario, database_url, progress, **options)
    with tempfile.TemporaryDirectory() as tmp:
        clean_path = Path(tmp) / f"{path.stem}-without-faults.json"
        clean_data = scenario.model_dump(mode="json", exclude={"faults"})
        clean_path.write_text(json.dumps(clean_data))
        _, clean = _play_once(clean_path, load_scenario(clean_path), None, None, **options)
    metrics["faults"] = {**metrics["faults"], **compare_plays(clean, faulty)}
    metrics["wall_seconds"] = round(time.perf_counter() - started, 1)
    return metrics


def scenarios_of(path: Path) -> Any:
    """The scenario of a file; a list of them for a multi-repository file (sim/multi.py)."""
    from sheriff.sim.multi import is_multi, load_multi
    from sheriff.sim.scenario import load_scenario

    return load_multi(path)[1] if is_multi(path) else load_scenario(path)


def play_with_outcomes(
    path: Path, scenario: Any, *, database_url: str | None = None, **options: Any
) -> tuple[dict[str, Any], dict[str, tuple[str, str | None]]]:
    """One play without the faults comparison: its metrics and each case's (state, verdict)
    by the task id of its original run (what other ways of running sheriff are held to).
    `database_url`: an empty store to play in and keep (default: a temporary SQLite file)."""
    chosen = {
        "policy": None,
        "backfill": None,
        "same_manifests": True,
        "queue_prefixes": None,
        "pass_minutes": 10,
        **options,
    }
    return _play_once(path, scenario, database_url, None, **chosen)


def _play_once(
    path: Path,
    scenario: Any,
    database_url: str | None,
    progress: Callable[[float, PassSummary], None] | None,
    *,
    policy: str | None,
    backfill: str | None,
    same_manifests: bool,
    queue_prefixes: list[str] | None,
    pass_minutes: int,
) -> tuple[dict[str, Any], dict[str, tuple[str, str | None]]]:
    """One play: the metrics, and each case's (state, verdict) by task id."""
    scenarios = scenario if isinstance(scenario, list) else [scenario]
    faulty = scenarios[0].faults.active and len(scenarios) == 1
    tracebacks: list[str] = []
    failed_passes = 0
    with tempfile.TemporaryDirectory() as tmp:
        url = database_url or f"sqlite:///{Path(tmp) / 'sheriff.db'}"
        engine = require_empty_store(url)
        chosen = {"policy": policy, "queue_prefixes": queue_prefixes}  # None: the setting
        with SimProcess(path) as sim:
            settings = load_settings(
                database_url=url,
                taskcluster_root_url=sim.root_url,
                treeherder_url=sim.root_url,
                taskcluster_client_id=SIM_CLIENT_ID,
                taskcluster_access_token=SIM_ACCESS_TOKEN,
                repositories=[s.repository for s in scenarios],
                backfill_same_manifests=same_manifests,
                # Write-back and alerts go to the simulator's Treeherder and Matrix room,
                # which score them (`load` in the metrics).
                treeherder_token=SIM_TREEHERDER_TOKEN,
                matrix_homeserver=sim.root_url,
                matrix_access_token=SIM_MATRIX_TOKEN,
                matrix_room_id=SIM_MATRIX_ROOM,
                **{name: value for name, value in chosen.items() if value is not None},
            )
            # The `http_*` settings hold here as in `sheriff triage` (SHERIFF_HTTP_RETRY_…).
            reads = policy_from_settings(settings)
            clients = taskcluster_clients(
                sim.root_url,
                client_id=SIM_CLIENT_ID,
                access_token=SIM_ACCESS_TOKEN,
                transport=reads,
            )
            treeherder = Treeherder(sim.root_url, policy=reads)
            # One Triage per repository, each pass over all of them (as one cron job would).
            triages = [
                Triage(
                    engine,
                    settings,
                    clients,
                    treeherder,
                    repo=s.repository,
                    live=True,
                    backfill=backfill,
                )
                for s in scenarios
            ]
            triage = triages[0]
            begin = sim.now
            span = max(s.push_interval_minutes * s.pushes for s in scenarios)
            last_push = begin + timedelta(minutes=span)
            deadline = last_push + timedelta(hours=EXTRA_HOURS)
            window = timedelta(hours=6)
            failing_since: datetime | None = None
            while sim.now < deadline:
                sim.advance(minutes=pass_minutes)
                try:
                    for each in triages:
                        summary = each.run_pass(since=sim.now - window, until=sim.now, now=sim.now)
                except ServiceError:
                    # A pass that met an outage stops where it was; the next one continues,
                    # as a cron-driven pass would. Only a lasting outage ends the play.
                    failed_passes += 1
                    failing_since = failing_since or sim.now
                    if sim.now - failing_since >= MAX_OUTAGE:
                        raise
                    continue
                except Exception:
                    if not faulty:
                        raise
                    # Under faults a crash is a finding, not the end of the play: counted
                    # (and its last lines kept) like a cron job's crash report.
                    failed_passes += 1
                    tracebacks.append(traceback.format_exc().strip().splitlines()[-1])
                    continue
                failing_since = None
                if progress:
                    share = (sim.now - begin) / (deadline - begin)
                    progress(min(1.0, share), summary)
                done = summary.open_cases == 0 and summary.open_backfills == 0
                if sim.now >= last_push and sim.finished and done:
                    break
            truth = sim.truth()
            stats = sim.stats()
            load = sim.load(settings.queue_prefixes)
            metrics = measure(
                engine,
                truth,
                stats,
                truth.get("action_tasks", []),
                policy=triage.policy.name,
                queue_prefixes=settings.queue_prefixes,
                virtual_hours=(sim.now - begin).total_seconds() / 3600,
            )
            # A multi-repository play has one Treeherder per world and no load endpoint of
            # its own yet: its load is not reported (docs/scenarios.md, several repositories).
            metrics["load"] = load_figures(load) if "views" in load else None
            metrics["regression_records"] = regression_records(engine)
            outcome = case_outcomes(engine)
            if faulty:
                metrics["faults"] = {
                    "played": stats.get("faults", {}),
                    "failed_passes": failed_passes,
                    "tracebacks": len(tracebacks),
                    "traceback_lines": sorted(set(tracebacks)),
                    **fault_losses(engine, truth, outcome),
                }
            clients.close()
            treeherder.close()
        engine.dispose()
    return metrics, outcome


def case_outcomes(engine: sa.Engine) -> dict[str, tuple[str, str | None]]:
    """Each case's (state, verdict), by the task id of its original run."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(job.c.task_id, triage_case.c.state, triage_case.c.verdict).join(
                job, job.c.id == triage_case.c.job_id
            )
        ).all()
    return {r.task_id: (r.state, r.verdict) for r in rows}


def fault_losses(
    engine: sa.Engine, truth: dict[str, Any], outcome: dict[str, tuple[str, str | None]]
) -> dict[str, Any]:
    """What faults may cost, counted from both sides: cases the simulator has that sheriff
    never opened, cases still open, and action tasks no request of sheriff's owns (an
    action sent twice: `triggerHook` created it, sheriff does not know it did)."""
    with engine.connect() as conn:
        owned = {
            r.action_task_id for r in request_log.requests(conn) if r.action_task_id is not None
        }
    open_states = {"new", "planned", "waiting"}
    return {
        "cases_lost": len(set(truth["cases"]) - set(outcome)),
        "cases_left_open": sum(state in open_states for state, _ in outcome.values()),
        "actions_sent_twice": len(set(truth.get("hook_triggers", [])) - owned),
    }


def compare_plays(
    clean: dict[str, tuple[str, str | None]], faulty: dict[str, tuple[str, str | None]]
) -> dict[str, Any]:
    """Cases whose verdict under faults differs from the same world played without them."""
    changed = sorted(t for t in clean.keys() | faulty.keys() if clean.get(t) != faulty.get(t))
    return {
        "verdicts_changed": len(changed),
        "changed": [
            {"task_id": t, "without_faults": clean.get(t), "with_faults": faulty.get(t)}
            for t in changed[:20]
        ],
    }


def _ratio(numerator: int, denominator: int) -> float:
    return round(numerator / denominator, 4) if denominator else 1.0


def measure(
    engine: sa.Engine,
    truth: dict[str, Any],
    stats: dict[str, Any],
    action_counts: list[dict[str, Any]],
    *,
    policy: str,
    virtual_hours: float,
    queue_prefixes: list[str] | None = None,
) -> dict[str, Any]:
    """The metrics object of scenarios/README.md from the store and the simulator's truth."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                job.c.task_id,
                triage_case.c.state,
                triage_case.c.verdict,
                triage_case.c.decided_at,
                job.c.end_time,
                triage_case.c.p_regression,
            ).join(job, job.c.id == triage_case.c.job_id)
        ).all()
        requests = request_log.requests(conn)
        tasks_stored = conn.execute(
            sa.select(sa.func.count(sa.distinct(job.c.task_id)))
        ).scalar_one()
    with engine.connect() as conn:
        in_scope = None
        if queue_prefixes is not None:
            in_scope = len(regressions_in_scope(conn, truth["cases"], tuple(queue_prefixes)))
        culprits = culprit_metrics(conn, _with_pushes(truth), in_scope)
        scope = (
            None
            if queue_prefixes is None
            else regressions_in_scope(conn, truth["cases"], tuple(queue_prefixes))
        )
        culprits["outcomes"] = culprit_outcomes(conn, truth, scope)
    ours = {r.task_id: r for r in rows}
    cases = truth["cases"]
    verdicts: Counter[str] = Counter()
    tp = predicted = actual = 0
    eligible = 0
    delays: list[float] = []
    scored: list[tuple[float, bool]] = []  # (P(regression), truly a regression)
    wrong: list[dict[str, Any]] = []  # every final verdict the truth contradicts
    for task_id, case in cases.items():
        mine = ours.get(task_id)
        verdict = mine.verdict if mine is not None and mine.state == "decided" else None
        bucket = {"wrong-tier": "not-eligible"}.get(verdict or "", verdict or "pending")
        verdicts[bucket] += 1
        if verdict in ("regression", "intermittent") or (
            mine is not None and mine.state in ("planned", "waiting")
        ):
            eligible += 1
        if verdict in ("regression", "intermittent"):
            predicted += verdict == "regression"
            actual += case["truth"] == "regression"
            tp += verdict == "regression" and case["truth"] == "regression"
            if mine.p_regression is not None:
                scored.append((mine.p_regression, case["truth"] == "regression"))
            if (verdict == "regression") != (case["truth"] == "regression"):
                wrong.append(_wrong_verdict(task_id, case, verdict, mine.p_regression))
            if mine.decided_at is not None and mine.end_time is not None:
                delays.append((mine.decided_at - mine.end_time).total_seconds() / 60)
    asked = runs_asked(engine, requests)
    retriggers = sum(
        sum(REGISTRY[r.strategy]().runs(r.input, r.labels).values())
        for r in requests
        if r.state == "sent" and r.strategy in ("retrigger", "retrigger-multiple")
    )
    # Runs of a label on a push beyond every run sheriff asked for there: double requests.
    excess = sum(max(0, e["tasks"] - asked.get((e["push"], e["label"]), 0)) for e in action_counts)
    truth_counts = Counter(c["truth"] for c in cases.values())
    requests_made = {
        "taskcluster": int(stats.get("taskcluster", 0)),
        "treeherder": int(stats.get("treeherder", 0)),
    }
    return {
        "scenario": truth.get("scenario"),
        "policy": policy,
        "cases": len(cases),
        "eligible": eligible,
        "verdicts": {
            k: verdicts.get(k, 0)
            for k in (
                "regression",
                "intermittent",
                "infra",
                "not-eligible",
                "classified",
                "pending",
            )
        },
        "truth": {k: truth_counts.get(k, 0) for k in ("regression", "intermittent", "infra")},
        "precision": _ratio(tp, predicted),
        "recall": _ratio(tp, actual),
        "retriggers": retriggers,
        "retriggers_per_eligible_case": round(retriggers / eligible, 3) if eligible else 0.0,
        "excess_retriggers": excess,
        "culprits": culprits,
        "http_requests": requests_made,
        "http_requests_per_eligible_case": {
            service: round(count / eligible, 2) if eligible else 0.0
            for service, count in requests_made.items()
        },
        # Where they went (method and route template), most asked first.
        "http_requests_by_endpoint": stats.get("endpoints", {}),
        "virtual_hours": round(virtual_hours, 2),
        "tasks_stored": tasks_stored,
        "wall_seconds": 0.0,
        "calibration": calibration(scored),
        # Each wrong regression / intermittent verdict, oldest push first: what it was.
        "wrong_verdicts": sorted(wrong, key=lambda w: (w["push_index"], w["label"])),
        "missed_by_kind": missed_by_kind(wrong, truth.get("regressions", [])),
        "time_to_verdict_minutes": {
            "p50": round(statistics.median(delays), 1) if delays else 0.0,
            "p95": round(sorted(delays)[int(0.95 * (len(delays) - 1))], 1) if delays else 0.0,
        },
    }


def _wrong_verdict(
    task_id: str, case: dict[str, Any], verdict: str, p: float | None
) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "push_index": case.get("push_index"),
        "label": case["label"],
        "verdict": verdict,
        "truth": case["truth"],
        "p_regression": p,
        "failures": [[f["test"], f["regression"]] for f in case["failures"]],
    }


# A missed case this many pushes after its regression's push or fewer was missed at the
# onset, where only the case's own runs and retriggers can tell; later ones had the
# regression's earlier failures to go by as well.
ONSET_PUSHES = 3


def missed_kind(
    failures: list[list[Any]], push_index: int, regressions: list[dict[str, Any]]
) -> str:
    """What a missed regression case's regression was, in a sheriff's words: how it
    failed (its `failure`: the test's own line, a new line, a crash or timeout naming no
    test), whether the failing test was flaky already (a flaky test that got worse), and
    whether the case came at the onset or later."""
    by_index = {r.get("index", i): r for i, r in enumerate(regressions)}
    test, index = next(
        ((t, r) for t, r in failures if r is not None and r in by_index), (None, None)
    )
    if index is None:
        return "unknown regression"
    regression = by_index[index]
    flaky = (
        "flaky test got worse"
        if test in regression.get("flaky_tests", [])
        else "test not flaky before"
    )
    ago = push_index - regression["culprit_push"]
    when = f"within {ONSET_PUSHES} pushes of the onset" if ago <= ONSET_PUSHES else "later"
    return f"{regression.get('failure', 'same')} line, {flaky}, {when}"


def missed_by_kind(
    wrong: list[dict[str, Any]], regressions: list[dict[str, Any]]
) -> dict[str, int]:
    """The missed regression cases (called intermittent) counted by `missed_kind`, most
    first: where recall is lost."""
    kinds = Counter(
        missed_kind(w["failures"], w["push_index"] or 0, regressions)
        for w in wrong
        if w["truth"] == "regression" and w["verdict"] != "regression"
    )
    return dict(kinds.most_common())


def _with_pushes(truth: dict[str, Any]) -> list[dict[str, Any]]:
    """The true regressions, each with the revisions where it failed an original run
    (`failed_on`): a report about a line that names no test is matched by those."""
    failed_on: dict[int, set[str]] = {}
    for case in truth["cases"].values():
        for failure in case["failures"]:
            if failure["regression"] is not None:
                failed_on.setdefault(failure["regression"], set()).add(case["push"])
    return [
        {**r, "failed_on": sorted(failed_on.get(r.get("index", i), ()))}
        for i, r in enumerate(truth.get("regressions", []))
    ]


def culprit_outcomes(
    conn: sa.Connection, truth: dict[str, Any], in_scope: set[int] | None
) -> dict[str, Any]:
    """Why each true regression got the culprit it got, or none: `right`, `wrong`,
    `out of scope`, `no regression verdict` (none of its cases was called one),
    `joined another report` (its regression cases sit in a report about other tests),
    `no report`, `search open`, or `no culprit: <the report's reason, numbers dropped>`.
    Counts by reason, and the reason per regression index."""
    regressions = _with_pushes(truth)
    verdicts = {
        r.task_id: r.verdict
        for r in conn.execute(
            sa.select(job.c.task_id, triage_case.c.verdict).join(
                job, job.c.id == triage_case.c.job_id
            )
        )
    }
    case_task = dict(
        conn.execute(
            sa.select(triage_case.c.id, job.c.task_id).join(job, job.c.id == triage_case.c.job_id)
        ).all()
    )
    reports = [
        {
            "tests": tests_named(r.tests, r.failure_lines),
            "revision": r.revision,
            "status": r.status,
            "named": r.culprit_revision,
            "reason": r.reason or "",
            "tasks": {case_task.get(c) for c in r.case_ids or []},
        }
        for r in conn.execute(
            sa.select(
                backfill_report.c.tests,
                backfill_report.c.failure_lines,
                backfill_report.c.status,
                backfill_report.c.culprit_revision,
                backfill_report.c.reason,
                backfill_report.c.case_ids,
                push.c.revision,
            ).join(push, push.c.id == backfill_report.c.push_id)
        )
    ]
    by_index: dict[int, str] = {}
    for i, regression in enumerate(regressions):
        index = regression.get("index", i)
        tasks = {
            task_id
            for task_id, case in truth["cases"].items()
            if any(f["regression"] == index for f in case["failures"])
        }
        mine = [r for r in reports if report_about(r, regression)]
        named = [
            r
            for r in mine
            if r["named"]
            and report_claims({**r, "culprit_revision": r["named"]}, regression, regressions)
        ]
        # A report that named a push yet does not count for this regression (a test-less
        # line's report naming another timeout regression's culprit) is that one's.
        mine = [r for r in mine if not r["named"] or r in named]
        if in_scope is not None and index not in in_scope:
            why = "out of scope"
        elif named:
            right = all(r["named"] == regression["culprit_revision"] for r in named)
            why = "right" if right else "wrong"
        elif not any(verdicts.get(t) == "regression" for t in tasks):
            why = "no regression verdict"
        elif not mine:
            joined = any(r["tasks"] & tasks for r in reports)
            why = "joined another report" if joined else "no report"
        elif any(r["status"] == "open" for r in mine):
            why = "search open"
        else:
            reason = next((r["reason"] for r in mine if r["reason"]), "")
            why = "no culprit: " + re.sub(r"[0-9.]+", "N", reason)[:60]
        by_index[index] = why
    return {"counts": dict(Counter(by_index.values())), "by_regression": by_index}


def regressions_in_scope(
    conn: sa.Connection, cases: dict[str, Any], queue_prefixes: tuple[str, ...]
) -> set[int]:
    """The true regressions that failed at least one original run on a queue under the
    prefixes sheriff triages (SPEC §3 rule 5): only those can get a verdict, and a culprit."""
    regressed = {
        task_id: {f["regression"] for f in case["failures"] if f["regression"] is not None}
        for task_id, case in cases.items()
        if case["truth"] == "regression"
    }
    query = sa.select(job.c.task_id, task_queue.c.name).join(
        task_queue, task_queue.c.id == job.c.task_queue_id
    )
    return {
        index
        for condition in matching(conn, job.c.task_id, list(regressed))
        for task_id, queue in conn.execute(query.where(condition))
        if queue.startswith(queue_prefixes)
        for index in regressed[task_id]
    }


def calibration(scored: list[tuple[float, bool]]) -> dict[str, Any]:
    """Of verdicts with P(regression) >= 0.9 (<= 0.1), how many and the share truly regressions."""
    high = [truth for p, truth in scored if p >= 0.9]
    low = [truth for p, truth in scored if p <= 0.1]
    return {
        "scored": len(scored),
        "high": {"cases": len(high), "regression_share": _share(high)},
        "low": {"cases": len(low), "regression_share": _share(low)},
        "bins": reliability_bins(scored),
    }


def reliability_bins(scored: list[tuple[float, bool]], count: int = 10) -> list[list[float]]:
    """Per bin of P(regression) (width 1/count): [cases, sum of P, true regressions], so
    that plays can be pooled before the expected calibration error is taken."""
    bins = [[0, 0.0, 0] for _ in range(count)]
    for p, truth in scored:
        b = bins[min(count - 1, int(p * count))]
        b[0] += 1
        b[1] = round(b[1] + p, 6)
        b[2] += int(truth)
    return bins


def expected_calibration_error(bins: list[list[float]]) -> float:
    """ECE over pooled reliability bins: sum over bins of |mean P - share true| * share of cases."""
    total = sum(b[0] for b in bins)
    if not total:
        return 0.0
    return sum(abs(b[1] / b[0] - b[2] / b[0]) * b[0] / total for b in bins if b[0])


def _share(truths: list[bool]) -> float | None:
    return round(sum(truths) / len(truths), 4) if truths else None


def runs_asked(engine: sa.Engine, requests: list[Any]) -> Counter[tuple[str, str]]:
    """Runs per (push revision, label) that sheriff's sent requests asked for.

    Gecko's `backfill` names no pushes: it asks for `times` runs of the task's label on
    each of the `depth` pushes before the task's own, which are counted as such.
    """
    asked: Counter[tuple[str, str]] = Counter()
    with engine.connect() as conn:
        order = [r for (r,) in conn.execute(sa.select(push.c.revision).order_by(push.c.push_time))]
        labels = dict(
            conn.execute(
                sa.select(job.c.task_id, job_type.c.name).join(
                    job_type, job_type.c.id == job.c.job_type_id
                )
            ).all()
        )
    for r in requests:
        if r.state != "sent":
            continue
        if r.strategy == "backfill" and r.task_id in labels and r.revision in order:
            at = order.index(r.revision)
            depth, times = int(r.input.get("depth", 1)), int(r.input.get("times", 1))
            for revision in order[max(0, at - depth) : at]:
                asked[(revision, labels[r.task_id])] += times
        elif r.strategy in REGISTRY:
            for label, n in REGISTRY[r.strategy]().runs(r.input, r.labels).items():
                asked[(r.revision, label)] += n
    return asked
