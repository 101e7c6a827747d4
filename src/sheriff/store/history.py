"""Prior evidence for a case from the store's own history (the history policy's facts).

Only what sheriff itself stored is read: job rows, their manifests, the observations of
failed runs (normalised failure lines, trimmed bug suggestions) and earlier decided
cases. Nothing comes from scenario files or the simulator's truth.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from sheriff.model.failure_lines import (
    crash_lines,
    failing_test,
    failure_lines_from_bug_suggestions,
    unaccounted_crashes,
)
from sheriff.model.history import (
    CaseHistory,
    EarlierRuns,
    LineHistory,
    PastCase,
    Priors,
    began_failing,
    first_failures,
    fit_priors,
)
from sheriff.model.regressions import names_a_test, suite_of, tests_failed
from sheriff.store.loader import matching
from sheriff.store.schema import (
    backfill_report,
    job,
    job_type,
    manifest,
    manifest_set_member,
    manifest_test,
    push,
    regression,
    run_observation,
    test_path,
    triage_case,
)

# Earlier pushes of the repository looked at for a case: enough to see a flaky test fail
# now and then, and an intermittent regression's clean runs before it began.
LOOKBACK_PUSHES = 45
# Pushes read before an open regression record that began before the window (`_reach`).
BEFORE_OPEN_RECORD = 15
VERDICTS = ("regression", "intermittent")


def past_cases(conn: sa.Connection, repository_id: int, limit: int = 2000) -> list[PastCase]:
    """Earlier cases of the repository decided by the history policy, newest first."""
    rows = conn.execute(
        sa.select(triage_case.c.id, triage_case.c.p_regression, triage_case.c.decided_at)
        .join(push, push.c.id == triage_case.c.push_id)
        .where(
            push.c.repository_id == repository_id,
            triage_case.c.state == "decided",
            triage_case.c.verdict.in_(VERDICTS),
            triage_case.c.p_regression.is_not(None),
        )
        .order_by(triage_case.c.decided_at.desc())
        .limit(limit)
    ).all()
    # A decided case's evidence never changes: each is read and parsed once per process
    # (keyed by what would differ if the id were reused, as in a database made anew).
    known = _PAST.setdefault(conn.engine.url.render_as_string(hide_password=True), {})
    missing = [r.id for r in rows if known.get(r.id, (None,))[0] != (r.p_regression, r.decided_at)]
    for condition in matching(conn, triage_case.c.id, missing):
        for r in conn.execute(
            sa.select(
                triage_case.c.id,
                triage_case.c.p_regression,
                triage_case.c.decided_at,
                triage_case.c.verdict,
                triage_case.c.evidence,
            ).where(condition)
        ):
            case = _past_case(r.p_regression, r.evidence, r.verdict == "regression")
            known[r.id] = ((r.p_regression, r.decided_at), case)
    return [case for r in rows if (case := known[r.id][1]) is not None]


def _past_case(
    p: float | None, evidence: Mapping[str, Any] | None, regression: bool
) -> PastCase | None:
    details = (evidence or {}).get("history") or {}
    if p is None or "k" not in details or "n" not in details:
        return None
    return PastCase(
        p=float(p),
        k=int(details["k"]),
        n=int(details["n"]),
        features={str(k): bool(v) for k, v in (details.get("features") or {}).items()},
        p_retriggers=details.get("p_retriggers"),
        regression=regression,
        out_of_reach=bool(details.get("out_of_reach")),
    )


_PAST: dict[str, dict[int, tuple[tuple[Any, ...], PastCase | None]]] = {}


# Fitted priors per repository, refitted only when a case was decided since: every pass
# advances many pushes, and reading thousands of evidence records for each is waste.
_FITTED: dict[tuple[str, int], tuple[tuple[Any, ...], Priors]] = {}


def fleet_priors(conn: sa.Connection, repository_id: int) -> Priors:
    """Priors fitted from the repository's earlier decided cases."""
    marker = tuple(
        conn.execute(
            sa.select(
                sa.func.count(),
                sa.func.max(triage_case.c.id),
                sa.func.sum(triage_case.c.p_regression),
            )
            .select_from(triage_case)
            .join(push, push.c.id == triage_case.c.push_id)
            .where(
                push.c.repository_id == repository_id,
                triage_case.c.state == "decided",
                triage_case.c.verdict.in_(VERDICTS),
                triage_case.c.p_regression.is_not(None),
            )
        ).one()
    )
    key = (conn.engine.url.render_as_string(hide_password=True), repository_id)
    cached = _FITTED.get(key)
    if cached is not None and cached[0] == marker:
        return cached[1]
    priors = fit_priors(past_cases(conn, repository_id))
    _FITTED[key] = (marker, priors)
    return priors


# A finished test run: job id, configuration (machine platform id, option collection),
# failed (else it passed).
FinishedRun = tuple[int, tuple[int, str], bool]


@dataclass
class PassCache:
    """What one triage pass reads for many pushes: the pushes with open cases share most
    of their earlier pushes, so each earlier push is read once per pass, not once per push.
    Valid for one pass only (observations are stored before cases advance)."""

    failed: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # by push id
    # push id → manifest set id → finished test runs there
    runs: dict[int, dict[int | None, list[FinishedRun]]] = field(default_factory=dict)
    # push id → suite chunk (`mochitest-plain-3`) → finished test runs there
    chunks: dict[int, dict[str, list[FinishedRun]]] = field(default_factory=dict)
    chunk_of: dict[int, str] = field(default_factory=dict)  # job type id → suite chunk
    priors: dict[int, Priors] = field(default_factory=dict)  # by repository id
    sets_of: dict[str, list[int]] = field(default_factory=dict)  # test → sets that ran it
    # repository id → its regression records not merged (`PushHistory._records`)
    records: dict[int, list[Any]] = field(default_factory=dict)


@dataclass
class PushHistory:
    """Gathers the history of the cases of one push; fits the priors once."""

    conn: sa.Connection
    push_id: int
    lookback: int = LOOKBACK_PUSHES
    cache: PassCache = field(default_factory=PassCache)

    def __post_init__(self) -> None:
        row = self.conn.execute(
            sa.select(push.c.repository_id, push.c.push_time).where(push.c.id == self.push_id)
        ).one()
        if row.repository_id not in self.cache.priors:
            self.cache.priors[row.repository_id] = fleet_priors(self.conn, row.repository_id)
        self.priors = self.cache.priors[row.repository_id]
        earlier = self.conn.execute(
            sa.select(push.c.id, push.c.push_time)
            .where(
                push.c.repository_id == row.repository_id,
                push.c.push_time < row.push_time,
            )
            .order_by(push.c.push_time.desc())
            .limit(self.lookback)
        ).all()
        self.earlier = [e.id for e in earlier]
        # Test (or line, `_reach_key`) → pushes before the window read for it too (newest
        # first), and all of them.
        self.reach = self._reach(row.repository_id, row.push_time, earlier)
        older = max(self.reach.values(), key=len, default=[])
        self.older = [o.id for o in older]
        # 0 = the latest earlier push
        self.rank = {pid: i for i, pid in enumerate([*self.earlier, *self.older])}
        self.explained = self._explained_pushes(
            row.repository_id, row.push_time, [*earlier, *older]
        )
        self.failed = self._failed_runs([self.push_id, *self.earlier])
        # The lines of the failed runs that can speak for a test's line: a run that
        # crashed between tests cannot (`_earlier_runs`), and has no entry.
        failed_older = [*self.failed, *self._failed_runs(self.older)]
        self.lines_of = {r["id"]: r["lines"] for r in failed_older if not r["crashes"]}
        # The crashes between tests of the failed runs whose lines are known and show a
        # failure of some kind: what a crash of the original is looked for in
        # (`crash_histories`). A run that failed with neither (a storm) says nothing.
        self.crashes_of = {
            r["id"]: r["crashes"] for r in failed_older if r["lines"] or r["crashes"]
        }
        self.listing: dict[str, list[int]] | None = None  # failing test → manifests listing it
        # Earlier push → the tests that began failing there (`first_failures`), in the
        # window: a push where several did is likelier where a regression landed.
        window = list(reversed(self.earlier))
        tests_failing: dict[int, set[str]] = {p: set() for p in window}
        for r in self.failed:
            if r["push_id"] in tests_failing:
                tests_failing[r["push_id"]].update(tests_failed(r["lines"]))
        self.began_failing = dict(
            zip(window, first_failures([tests_failing[p] for p in window]), strict=True)
        )

    def _reach(
        self, repository_id: int, push_time: Any, earlier: Sequence[Any]
    ) -> dict[str, list[Any]]:
        """Test (or a line naming none, `_reach_key`) → the pushes before the window to
        read for it too (rows of id and time, newest first): from `BEFORE_OPEN_RECORD`
        pushes before the push where a regression record of the test (or line) began
        (`_records`), for a record open at this push that began at or before the window's
        oldest push.

        Inside the window a regression that has failed the test for longer than the
        window looks like a flake at the regression's rate: every run there is after its
        change point, and no run shows the test passing before it (world 20261220-0: P =
        0.000 with 4 of 5 retriggers reproduced, at push 53 of a regression failing since
        push 5, whose record was open with the right culprit). With the runs before the
        record read, the change there is weighed like any other; a record that was never
        a regression (a flake called one) shows the flake failing before it too, which
        speaks against it."""
        if len(earlier) < self.lookback:
            return {}  # the window already reaches the first push the store knows
        oldest = earlier[-1].push_time
        reach: dict[str, list[Any]] = {}
        for tests, began, stopped, *_, lines in self._records(repository_id):
            if began > oldest or (stopped is not None and stopped <= push_time):
                continue  # inside the window, or not open at this push
            # A line that names no test (`Last test finished | application timed out`)
            # is read by its own key (`_reach_key`): its runs are its suite chunk's.
            named = {_reach_key(line) for line in lines or () if failing_test(line)}
            named |= {t for t in tests or () if names_a_test(t)}
            if not named:
                continue
            # From the `BEFORE_OPEN_RECORD`-th push before the one where the record began
            # (or the first push known, with fewer before it) up to the window: one query.
            start = (
                sa.select(push.c.push_time)
                .where(push.c.repository_id == repository_id, push.c.push_time < began)
                .order_by(push.c.push_time.desc())
                .offset(BEFORE_OPEN_RECORD - 1)
                .limit(1)
                .scalar_subquery()
            )
            older = self.conn.execute(
                sa.select(push.c.id, push.c.push_time)
                .where(
                    push.c.repository_id == repository_id,
                    push.c.push_time < oldest,
                    sa.or_(start.is_(None), push.c.push_time >= start),
                )
                .order_by(push.c.push_time.desc())
            ).all()
            # Every range ends at the window: the longer holds the shorter.
            for test in named:
                reach[test] = max(reach.get(test, []), older, key=len)
        return reach

    def _records(self, repository_id: int) -> list[Any]:
        """The repository's regression records (from the pass cache): tests, the time of
        the push where it began, stop push's time (None while open), whether it began
        after the first push the store knows, whether its backfill has named no
        culprit, and its failure lines. A record merged into another speaks no more: the
        survivor, maybe still failing over the same pushes, says whether it stopped.

        A record began at its first push, or at the culprit its backfill named when that
        is earlier: the record opens where a case was first called a regression, which for
        a regression of a test that already flaked can be many pushes after it landed
        (development world 20261234-0: culprit push 10, record from push 22). Read from
        the first push, the pushes between the culprit and it were "inside the window"
        and none of the test's runs before the change were read (`_reach`): 10 cases of
        that regression, failing 55 % of runs since push 10 where it flaked 11 % before,
        were called intermittent at pushes 55 to 66 with 4 of 5 retriggers reproduced."""
        if repository_id not in self.cache.records:
            first, stop, culprit = push.alias("first"), push.alias("stop"), push.alias("culprit")
            known_since = (
                sa.select(sa.func.min(push.c.push_time))
                .where(push.c.repository_id == repository_id)
                .scalar_subquery()
            )
            began = sa.case(
                (culprit.c.push_time < first.c.push_time, culprit.c.push_time),
                else_=first.c.push_time,
            )
            self.cache.records[repository_id] = self.conn.execute(
                sa.select(
                    regression.c.tests,
                    began.label("began"),
                    stop.c.push_time.label("stopped"),
                    (began > known_since).label("after_first_known"),
                    # A search that has not named a culprit (ended without one, or still
                    # looking: status `failed` or `open`).
                    sa.and_(
                        backfill_report.c.id.is_not(None), backfill_report.c.status != "culprit"
                    ).label("no_culprit_named"),
                    regression.c.failure_lines,
                )
                .join(first, first.c.id == regression.c.first_push_id)
                .outerjoin(culprit, culprit.c.id == regression.c.culprit_push_id)
                .outerjoin(stop, stop.c.id == regression.c.stopped_push_id)
                .outerjoin(backfill_report, backfill_report.c.id == regression.c.backfill_report_id)
                .where(
                    regression.c.repository_id == repository_id,
                    regression.c.merged_into.is_(None),
                )
            ).all()
        return self.cache.records[repository_id]

    def _explained_pushes(
        self, repository_id: int, push_time: Any, earlier: Sequence[Any]
    ) -> dict[str, set[int]]:
        """Test → the earlier pushes where a regression of it, since stopped, was failing.

        A test that a regression made fail on every run until its fix, and that flakes
        as before afterwards, looks under R like a test clean until the regression's push
        and failing ever since, and under I like a test failing far more than its flakes:
        flakes after the fix were called regressions (world 20261214-18: 10 false
        regressions, 1 with this). Those pushes' runs of the test are the known
        regression's, not the test's own behaviour, and are left out. A regression that
        has not stopped failing (or stopped only after this push) is left in, since a
        case there may be that regression showing again; so is one whose flakes, called
        regressions, keep it from ever stopping (world 20261216-14: README).

        So is one that began on the first push the store knows: nothing shows that the
        test ever ran clean before it, so nothing shows that those failures were a
        regression's rather than the test's own (a flake failing half its runs, called a
        regression on push 0 and "stopped" by a lucky clean streak, lost its whole record
        and was called a regression again each time it failed on pushes 44 to 48: world
        20261219-8).

        So is one whose backfill has named no culprit (ended without one, or is still
        looking): nothing has shown a change from clean to failing, so nothing shows that
        its failures were a regression's either; most often it is a flaky test called a
        regression, and leaving its pushes out hid the flakes that speak for it (world
        20261227-7: a record opened by a false regression at push 8, searched in vain
        and "stopped" at push 31, left 23 pushes out, and two more flakes of the test were
        called regressions at pushes 41 and 43, while its search still ran). Without a
        search (backfills off) the record is read as before."""
        explained: dict[str, set[int]] = {}
        for tests, began, stopped, after_first_known, unnamed, _ in self._records(repository_id):
            if stopped is None or not after_first_known or unnamed:
                continue
            if stopped > push_time:
                continue  # stopped only after this push: the case may be it showing again
            span = {e.id for e in earlier if began <= e.push_time < stopped}
            for test in tests or ():
                if names_a_test(test):
                    explained.setdefault(test, set()).update(span)
        return explained

    def _failed_runs(self, push_ids: Sequence[int]) -> list[dict[str, Any]]:
        self._read_per_push(self.cache.failed, push_ids, _FAILED_RUNS, _failed_run)
        return [r for p in push_ids for r in self.cache.failed[p]]

    def _read_per_push(
        self,
        known: dict[int, list[Any]],
        push_ids: Sequence[int],
        query: sa.Select[Any],
        entry: Callable[[sa.Row[Any]], Any],
    ) -> None:
        """Fill `known` (push id → entries) for the pushes this pass has not read yet."""
        missing = [p for p in push_ids if p not in known]
        for p in missing:
            known[p] = []
        for condition in matching(self.conn, job.c.push_id, missing):
            for row in self.conn.execute(query.where(condition)):
                known[row.push_id].append(entry(row))

    def case(
        self, original: Mapping[str, Any], observation: Mapping[str, Any] | None
    ) -> CaseHistory:
        """The history facts of the case whose failed original run is `original`."""
        obs = observation or {}
        lines = tuple(dict.fromkeys(obs.get("failure_lines") or ()))
        crashes = self.crash_histories(original, obs)
        if not lines:
            return CaseHistory(priors=self.priors, crashes=crashes)
        config = (original["machine_platform_id"], original["option_collection"])
        wanted = set(lines)
        earlier_with_line = {
            r["push_id"]
            for r in self.failed
            if r["push_id"] != self.push_id and r["lines"] & wanted
        }
        other_configs = {
            (r["machine_platform_id"], r["option_collection"])
            for r in self.failed
            if r["push_id"] == self.push_id
            and r["id"] != original["id"]
            and (r["machine_platform_id"], r["option_collection"]) != config
            and r["lines"] & wanted
        }
        earlier = {
            line: self._earlier_runs(config, line, original["id"], original["job_type_id"])
            for line in lines
        }
        # Without per-line judging (a policy reading `earlier` alone), the line whose test
        # failed most lately speaks for the case.
        worst = max(lines, key=lambda line: sum(e.shown + e.other_shown for e in earlier[line]))
        bugs = _open_bugs(obs.get("bug_suggestions") or ())
        features = {"open_bug": all(bugs.get(line) for line in lines)}
        facts = {
            "lines": len(lines),
            "earlier_pushes_with_line": len(earlier_with_line),
            "earlier_pushes_looked_at": len(self.earlier),
            "other_configs_with_line": len(other_configs),
            "runs": [
                {
                    "line": line,
                    "same_config": sum(e.runs for e in earlier[line]),
                    "same_config_showed_line": sum(e.shown for e in earlier[line]),
                    "other_configs": sum(e.other_runs for e in earlier[line]),
                    "other_configs_showed_line": sum(e.other_shown for e in earlier[line]),
                    # Earlier pushes where a regression of the test, since stopped, was
                    # failing: their runs are that regression's and are left out.
                    "pushes_of_a_stopped_regression": len(
                        self.explained.get(failing_test(line) or "", set())
                    ),
                    # Pushes before the window read because a regression record of the
                    # test, open at this push, began before it (`_reach`).
                    "pushes_before_the_window": len(self.reach.get(_reach_key(line), ())),
                }
                for line in lines
            ],
            "open_bugs": sorted({b for ids in bugs.values() for b in ids}),
        }
        return CaseHistory(
            features=features,
            priors=self.priors,
            facts=facts,
            earlier=tuple(earlier[worst]),
            lines={line: LineHistory(tuple(earlier[line]), bool(bugs.get(line))) for line in lines},
            crashes=crashes,
        )

    def crash_histories(
        self, original: Mapping[str, Any], observation: Mapping[str, Any]
    ) -> dict[str, tuple[EarlierRuns, ...]]:
        """Per crash between tests of the original (a `PROCESS-CRASH` line none of its
        TEST-UNEXPECTED lines accounts for), the runs of its suite chunk on the earlier
        pushes, on every platform, and how many crashed with the same signature. Such a
        crash names no test, so, as for a timeout's `Last test finished`, the chunk's runs
        are the ones that could have shown it: a signature never seen for 45 pushes that
        now shows on push after push is a regression's, one seen all along a flake's."""
        crashes = unaccounted_crashes(
            crash_lines(observation.get("raw_failure_lines")),
            observation.get("failure_lines") or (),
        )
        config = (original["machine_platform_id"], original["option_collection"])
        return {
            crash: tuple(
                self._earlier_runs(
                    config, crash, original["id"], original["job_type_id"], crash=True
                )
            )
            for crash in crashes
        }

    def _earlier_runs(
        self,
        config: tuple[int, str],
        line: str,
        original: int,
        original_type: int,
        crash: bool = False,
    ) -> list[EarlierRuns]:
        """The runs of the line's test on the earlier pushes, on this configuration and the
        others, and on this push's other configurations; oldest first, one entry per push
        with runs. A failed run whose lines are not known yet is left out. `crash`: `line`
        is a crash between tests, read in the suite chunk's runs by its signature."""
        test = None if crash else failing_test(line)
        by_push = self._finished_test_runs()
        if crash or (test and not names_a_test(test)):
            # A line that names no test (`Last test finished | application timed out`):
            # whatever test hangs, the runs of the same suite chunk are the ones that
            # could have shown it, on every platform.
            chunk = self.cache.chunk_of.get(original_type)
            if chunk is None:
                return []

            def runs_on(push_id: int) -> Iterable[FinishedRun]:
                return self.cache.chunks[push_id].get(chunk, ())
        else:
            sets = self._sets_running(test)
            if not sets:
                return []

            def runs_on(push_id: int) -> Iterable[FinishedRun]:
                by_set = by_push[push_id]
                return (run for set_id in sets for run in by_set.get(set_id, ()))

        out = []
        explained = self.explained.get(test or "", set())
        older = [o.id for o in self.reach.get(_reach_key(line), ())]
        began: set[str] = set()  # other tests that began failing since the last entry
        for push_id in reversed([self.push_id, *self.earlier, *older]):
            began |= self.began_failing.get(push_id, frozenset()) - {test}
            if push_id in explained:
                continue  # a known regression of the test failed there, and has stopped
            ago = self.rank[push_id] + 1 if push_id in self.rank else 0
            counts = [0, 0, 0, 0]  # runs, shown, other runs, other shown
            for job_id, run_config, failed in runs_on(push_id):
                if job_id == original or (ago == 0 and run_config == config):
                    continue
                if not failed:
                    shown = False
                elif crash:
                    if job_id not in self.crashes_of:
                        continue  # lines not known yet, or a storm
                    shown = line in self.crashes_of[job_id]
                elif self.lines_of.get(job_id):
                    shown = line in self.lines_of[job_id]
                else:
                    # Lines not known yet, or failed without a TEST-UNEXPECTED line (a
                    # storm): the run says nothing about this test. Nor does a run that
                    # crashed between tests, whether it showed the line or not: had only
                    # those that showed it counted, every run of a flake that failed
                    # beside a crashing regression would count and none that passed
                    # (world 20261223-27: a test flaking 29 % of its runs "showed its
                    # line" on 33 of 53 runs, and 4 of its cases were called regressions).
                    continue
                column = 0 if run_config == config else 2
                counts[column] += 1
                counts[column + 1] += shown
            if any(counts):
                out.append(EarlierRuns(ago, *counts, onsets=len(began)))
                began = set()
        return out

    def _finished_test_runs(self) -> dict[int, dict[int | None, list[FinishedRun]]]:
        """This push's and the earlier pushes' finished test runs by manifest set (from
        the pass cache)."""
        known = self.cache.runs
        missing = [p for p in (self.push_id, *self.earlier, *self.older) if p not in known]
        if missing:
            query = sa.select(
                job.c.id,
                job.c.push_id,
                job.c.machine_platform_id,
                job.c.option_collection,
                job.c.result,
                job.c.manifest_set_id,
                job.c.job_type_id,
            ).where(
                job.c.job_kind == "test",
                job.c.state == "completed",
                job.c.result.in_(("success", "testfailed")),
            )
            rows: dict[int, list[Any]] = {}
            self._read_per_push(rows, missing, query, lambda r: r)
            self._learn_chunks({r.job_type_id for p in missing for r in rows[p]})
            for push_id in missing:
                by_set = known[push_id] = {}
                by_chunk = self.cache.chunks[push_id] = {}
                for r in rows[push_id]:
                    run = (
                        r.id,
                        (r.machine_platform_id, r.option_collection),
                        r.result != "success",
                    )
                    by_set.setdefault(r.manifest_set_id, []).append(run)
                    by_chunk.setdefault(self.cache.chunk_of[r.job_type_id], []).append(run)
        return known

    def _learn_chunks(self, job_type_ids: set[int]) -> None:
        """The suite chunk of each job type (label) not looked up yet in this pass."""
        missing = sorted(job_type_ids - self.cache.chunk_of.keys())
        for condition in matching(self.conn, job_type.c.id, missing):
            for type_id, name in self.conn.execute(
                sa.select(job_type.c.id, job_type.c.name).where(condition)
            ):
                self.cache.chunk_of[type_id] = suite_of(name)

    def _sets_running(self, test: str | None) -> list[int]:
        """Manifest sets that ran the test: those holding a manifest that lists it, or,
        when no manifest is known to list it (tests-by-manifest not loaded), a manifest of
        its directory."""
        if not test:
            return []
        known = self.cache.sets_of
        if test not in known:
            known[test] = self._sets_listing(test) or self._sets_in_folder(test)
        return known[test]

    def _sets_listing(self, test: str) -> list[int]:
        # A directory often holds several manifests (browser.toml, mochitest.toml, …) run
        # by different suites: only the ones that list the test say whether it ran.
        if self.listing is None:
            # One look-up for the failing tests of the whole push (one scan of the links).
            tests = {
                t
                for r in self.failed
                if r["push_id"] == self.push_id
                for t in map(failing_test, r["lines"])
                if t
            }
            self.listing = {}
            for condition in matching(self.conn, test_path.c.path, sorted(tests)):
                wanted = sa.select(test_path.c.id).where(condition)
                for path, manifest_id in self.conn.execute(
                    sa.select(test_path.c.path, manifest_test.c.manifest_id)
                    .join(test_path, test_path.c.id == manifest_test.c.test_path_id)
                    .where(manifest_test.c.test_path_id.in_(wanted))
                ):
                    self.listing.setdefault(path, []).append(manifest_id)
        return self._sets_holding(self.listing.get(test, []))

    def _sets_holding(self, manifest_ids: Sequence[int]) -> list[int]:
        if not manifest_ids:
            return []
        return list(
            self.conn.execute(
                sa.select(manifest_set_member.c.manifest_set_id)
                .distinct()
                .where(manifest_set_member.c.manifest_id.in_(manifest_ids))
            ).scalars()
        )

    def _sets_in_folder(self, test: str) -> list[int]:
        if "/" not in test:
            return []
        folder = posixpath.dirname(test)
        prefix = folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/"
        found = self.conn.execute(
            sa.select(manifest.c.id, manifest.c.path).where(
                manifest.c.path.like(prefix + "%", escape="\\")
            )
        ).all()
        return self._sets_holding(
            [mid for mid, path in found if "/" not in path[len(folder) + 1 :]]
        )


# Failed runs whose lines are known, with what the pass cache keeps of each.
_FAILED_RUNS = (
    sa.select(
        job.c.id,
        job.c.push_id,
        job.c.machine_platform_id,
        job.c.option_collection,
        run_observation.c.failure_lines,
        run_observation.c.raw_failure_lines,
    )
    .join(run_observation, run_observation.c.job_id == job.c.id)
    .where(job.c.result == "testfailed", run_observation.c.failure_lines.is_not(None))
)


def began_failing_on(conn: sa.Connection, push_ids: Sequence[int]) -> dict[str, int]:
    """Test → the push (of `push_ids`, oldest first) where it began failing
    (`model.history.first_failures`), from the failed runs on those pushes."""
    failing: dict[int, set[str]] = {p: set() for p in push_ids}
    for condition in matching(conn, job.c.push_id, list(push_ids)):
        for r in conn.execute(_FAILED_RUNS.where(condition)):
            failing[r.push_id].update(tests_failed(r.failure_lines))
    began = began_failing([failing[p] for p in push_ids])
    return {test: push_ids[i] for test, i in began.items()}


def _failed_run(row: sa.Row[Any]) -> dict[str, Any]:
    """A failed run for the pass cache: its normalised lines, and its crashes between
    tests (its raw lines are not kept)."""
    lines = row.failure_lines or ()
    entry = {k: v for k, v in row._mapping.items() if k != "raw_failure_lines"}
    crashes = frozenset(unaccounted_crashes(crash_lines(row.raw_failure_lines), lines))
    return {
        **entry,
        "lines": frozenset(lines),
        "crashes": crashes,
    }


def _open_bugs(suggestions: Iterable[Mapping[str, Any]]) -> dict[str, list[int]]:
    """Normalised line → open intermittent bugs, from the trimmed bug suggestions."""
    out: dict[str, list[int]] = {}
    for s in suggestions:
        ids = [int(b) for b in s.get("open_bugs") or [] if b is not None]
        for line in failure_lines_from_bug_suggestions([{"search": s.get("search") or ""}]):
            out.setdefault(line, []).extend(ids)
    return out


def _reach_key(line: str) -> str:
    """What `PushHistory.reach` keys a failure line's pushes before the window by: its
    test, or the line itself when it names none (`Last test finished | application timed
    out`, whose runs are those of the case's own suite chunk, `_earlier_runs`): a record
    of such a line is read for that line, and another line naming no test keeps its
    window; "" for a line that is no TEST-UNEXPECTED line."""
    test = failing_test(line) or ""
    return test if not test or names_a_test(test) else line
