"""A case's stored evidence, told in sentences a sheriff reads at a glance.

The evidence a policy stores (`triage_case.evidence`) is JSON for machines; the job page
shows it as what happened ("failed 5 of 5 retriggers"), what the test did before ("passed
its last 38 runs on this configuration"), what Treeherder's bugs say, and the numbers that
make P(regression) — with a strip of the test's runs on earlier pushes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sheriff.model.failure_lines import failing_test


@dataclass(frozen=True)
class EarlierPush:
    """The test's runs on one earlier push: here (this configuration) and elsewhere."""

    pushes_ago: int
    runs: int
    showed: int
    other_runs: int
    other_showed: int
    onsets: int = 0  # other tests that began failing since the previous push shown

    @property
    def outcome(self) -> str:
        """failing | clean | elsewhere (failed on other configurations only) | none."""
        if self.showed:
            return "failing"
        if self.other_showed:
            return "elsewhere"
        return "clean" if self.runs or self.other_runs else "none"

    @property
    def words(self) -> str:
        when = "this push" if self.pushes_ago == 0 else f"{_n(self.pushes_ago, 'push')} before"
        return (
            f"{when}: showed the line in {self.showed} of {_n(self.runs, 'run')} here, "
            f"{self.other_showed} of {_n(self.other_runs, 'run')} on other configurations"
            + (f"; {_n(self.onsets, 'other test')} began failing" if self.onsets else "")
        )


@dataclass
class Explanation:
    sentences: list[str] = field(default_factory=list)
    inputs: list[tuple[str, str]] = field(default_factory=list)  # P(regression)'s inputs
    earlier: list[EarlierPush] = field(default_factory=list)  # oldest first


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else ('es' if noun.endswith('sh') else 's')}"


def _p(value: Any) -> str:
    return f"{float(value):.2f}" if isinstance(value, int | float) else "—"


def explain(case: Mapping[str, Any] | None) -> Explanation:
    """Sentences, P(regression)'s inputs and the earlier-push strip of a case."""
    out = Explanation()
    if not case:
        return out
    evidence = case.get("evidence") or {}
    if not isinstance(evidence, Mapping):
        evidence = {}
    words = evidence.get("explanation")
    if isinstance(words, list):  # a policy that tells its own story
        out.sentences.extend(str(w) for w in words)
    history = evidence.get("history")
    if isinstance(history, Mapping):
        _history(out, history, evidence, words is None)
    elif words is None:
        _retriggers(out, evidence)
    reason = case.get("rule") or evidence.get("reason")
    if reason:
        out.sentences.append(f"Decision: {reason}.")
    return out


def _retriggers(out: Explanation, evidence: Mapping[str, Any]) -> None:
    """The seed rules' evidence: how often each failure line came back."""
    counted = int(evidence.get("runs_counted") or 0)
    retriggers = max(0, counted - 1)
    for line in evidence.get("lines") or []:
        if not isinstance(line, Mapping):
            continue
        test = failing_test(str(line.get("line", ""))) or "the failure line"
        again = int(line.get("retriggers") or 0)
        out.sentences.append(
            f"{test}: the failure came back in {again} of {_n(retriggers, 'retrigger')}."
        )
    needed = evidence.get("min_reproductions")
    if needed:
        out.sentences.append(f"The rule calls a regression at {needed} reproductions or more.")


def _history(
    out: Explanation, history: Mapping[str, Any], evidence: Mapping[str, Any], tell: bool
) -> None:
    k, n = int(history.get("k") or 0), int(history.get("n") or 0)
    facts = history.get("facts") if isinstance(history.get("facts"), Mapping) else {}
    if tell:
        if n:
            out.sentences.append(
                f"Failed {k} of {_n(n, 'retrigger')} (the failure line came back in {k})."
            )
        else:
            out.sentences.append("No retrigger had finished when sheriff decided.")
        judged = _judged_apart(facts)
        if judged:
            out.sentences.append(judged)
        for run in facts.get("runs") or []:
            if isinstance(run, Mapping):
                out.sentences.append(_line_history(run))
        past = history.get("past_regression")
        if isinstance(past, Mapping):
            out.sentences.append(_past_regression(past))
        crash = history.get("crash_past")
        if isinstance(crash, Mapping):
            out.sentences.append(_crash_past(crash))
        bugs = [b for b in facts.get("open_bugs") or [] if b is not None]
        if bugs:
            named = ", ".join(f"bug {b}" for b in bugs)
            out.sentences.append(f"An open intermittent bug matches: {named}.")
        else:
            out.sentences.append("No open intermittent bug matches.")
    priors = history.get("priors") if isinstance(history.get("priors"), Mapping) else {}
    thresholds = history.get("thresholds") if isinstance(history.get("thresholds"), Mapping) else {}
    features = history.get("features") if isinstance(history.get("features"), Mapping) else {}
    out.inputs = [
        ("Base rate of regressions (fitted from earlier cases)", _p(priors.get("base_rate"))),
        *((f"Fact: {name.replace('_', ' ')}", str(value)) for name, value in features.items()),
        ("P(regression) before the retriggers", _p(history.get("prior_p"))),
        ("Retriggers that reproduced", f"{k} of {n}"),
        ("P(regression) from the retriggers alone", _p(history.get("p_retriggers"))),
        ("P(regression), all evidence", _p(evidence.get("p_regression"))),
        ("Regression at or above", _p(thresholds.get("upper"))),
        ("Intermittent at or below", _p(thresholds.get("lower"))),
    ]
    for entry in history.get("earlier_runs") or []:
        # [pushes ago, runs, showed the line, other configurations' runs, showed it, other
        # tests that began failing]; rows stored before 2026-12-06 have five
        if (
            isinstance(entry, list)
            and len(entry) in (5, 6)
            and all(isinstance(v, int) for v in entry)
        ):
            out.earlier.append(EarlierPush(*entry))
    out.earlier.sort(key=lambda e: -e.pushes_ago)


def _judged_apart(facts: Mapping[str, Any]) -> str | None:
    """With several failure lines, which one spoke for the case and what the others got."""
    line_p, spoke = facts.get("line_p"), facts.get("line")
    if not isinstance(line_p, Mapping) or len(line_p) < 2 or spoke not in line_p:
        return None

    def name(line: Any) -> str:
        return failing_test(str(line)) or str(line)

    others = "; ".join(f"{name(line)} {_p(p)}" for line, p in line_p.items() if line != spoke)
    return (
        f"Each failure line was judged on its own: {name(spoke)} speaks for the case "
        f"(P(regression) {_p(line_p[spoke])}); the others: {others}."
    )


def _past_regression(past: Mapping[str, Any]) -> str:
    first, last = int(past.get("from_pushes_ago") or 0), int(past.get("to_pushes_ago") or 0)
    when = (
        f"{_n(first, 'push')} before this one"
        if first == last
        else f"from {first} to {last} pushes before this one"
    )
    return (
        f"Earlier, {when}, the test showed the line in {int(past.get('showed_line') or 0)} of "
        f"{_n(int(past.get('runs') or 0), 'run')}, and less often since: read as a regression"
        " that came and went, not as how often the test flakes."
    )


def _crash_past(crash: Mapping[str, Any]) -> str:
    runs, crashed = int(crash.get("earlier_runs") or 0), int(crash.get("earlier_runs_crashed") or 0)
    pushes = int(crash.get("earlier_pushes_with_crash") or 0)
    seen = (
        f"crashed with it in {crashed} of {_n(runs, 'run')}, on {_n(pushes, 'push')}"
        if crashed
        else f"never crashed with it in {_n(runs, 'run')}"
    )
    return (
        f"The crash names no test: its suite chunk's earlier runs, on every platform, "
        f"{seen}; from that and the retriggers, P(regression) {_p(crash.get('p'))}."
    )


def _line_history(run: Mapping[str, Any]) -> str:
    test = failing_test(str(run.get("line", ""))) or "The failing test"
    here, here_showed = (
        int(run.get("same_config") or 0),
        int(run.get("same_config_showed_line") or 0),
    )
    other, other_showed = (
        int(run.get("other_configs") or 0),
        int(run.get("other_configs_showed_line") or 0),
    )
    if here and not here_showed:
        before = f"{test} passed its last {_n(here, 'run')} on this configuration before this push"
    elif here:
        before = f"{test} showed this line in {here_showed} of its last {_n(here, 'run')} here"
    else:
        before = f"{test} had no earlier runs on this configuration"
    elsewhere = f"on other configurations it showed it in {other_showed} of {_n(other, 'run')}"
    said = f"{before}; {elsewhere}."
    left_out = int(run.get("pushes_of_a_stopped_regression") or 0)
    if left_out:
        said += (
            f" The runs of {_n(left_out, 'earlier push')} where a regression"
            " of this test was failing, before it stopped, are left out: they were that"
            " regression, not the test's own flakes."
        )
    reached = int(run.get("pushes_before_the_window") or 0)
    if reached:
        said += (
            f" Its runs on {_n(reached, 'push')} before the usual window were read too: an"
            " open regression of this test began before the window, and only runs from"
            " before it show whether the test passed until then."
        )
    return said
