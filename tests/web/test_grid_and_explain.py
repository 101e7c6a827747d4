"""The push grid and the verdict told in words, as pure functions of stored rows."""

from __future__ import annotations

from typing import Any

from sheriff.web.explain import explain
from sheriff.web.grid import job_grid, needs_a_person

LINE = "TEST-UNEXPECTED-FAIL | dom/a/browser_x.js | Expected <n> but got <n>"


def _job(id: int, symbol: str, result: str = "success", **extra: Any) -> dict[str, Any]:
    return {
        "id": id,
        "platform": extra.pop("platform", "linux1804-64-qr"),
        "option_collection": extra.pop("option_collection", "opt"),
        "group_symbol": extra.pop("group_symbol", "M"),
        "group_name": "Mochitests",
        "job_symbol": symbol,
        "label": f"test-{symbol}",
        "result": result,
        "verdict": extra.pop("verdict", None),
        "action": extra.pop("action", None),
        "classification_id": extra.pop("classification_id", 1),
        **extra,
    }


def test_the_grid_has_a_row_per_configuration_and_groups_as_treeherder_draws_them() -> None:
    jobs = [
        _job(1, "bc10"),
        _job(2, "bc2", "testfailed", verdict="regression"),
        _job(3, "bc2", "testfailed", verdict="regression", action="retrigger-multiple-task"),
        _job(4, "X1", group_symbol="X"),
        _job(5, "D", group_symbol="?"),
        _job(6, "bc1", option_collection="debug"),
    ]
    grid = job_grid(jobs)
    assert [row.configuration for row in grid] == ["linux1804-64-qr debug", "linux1804-64-qr opt"]
    opt = grid[1]
    assert [(g.symbol, g.grouped) for g in opt.groups] == [("?", False), ("M", True), ("X", True)]
    mochitests = opt.groups[1].jobs
    assert [(j.symbol, j.action) for j in mochitests] == [
        ("bc2", None),
        ("bc2", "retrigger"),
        ("bc10", None),  # natural order: bc2 before bc10
    ]
    assert mochitests[0].mark == "!" and mochitests[1].action_mark == "↻"
    assert "sheriff: regression" in mochitests[0].words
    assert "run added by a retrigger" in mochitests[1].words
    assert opt.jobs == 5


def test_what_needs_a_person() -> None:
    assert needs_a_person(_job(1, "a", "testfailed", verdict="regression"))
    assert needs_a_person(_job(2, "a", "testfailed", verdict="not-eligible"))
    assert needs_a_person(_job(3, "a", "busted"))  # no case at all
    assert not needs_a_person(_job(4, "a", "testfailed", verdict="intermittent"))
    assert not needs_a_person(_job(5, "a", "exception", verdict="infra"))
    assert not needs_a_person(_job(6, "a", "testfailed", verdict="pending"))
    assert not needs_a_person(_job(7, "a", "testfailed", classification_id=4))  # a person's
    assert not needs_a_person(_job(8, "a", "success", verdict="regression"))
    only = job_grid(
        [
            _job(1, "a", "testfailed", verdict="regression"),
            _job(2, "b", "testfailed", verdict="infra"),
        ],
        only_needing_a_person=True,
    )
    assert [j.id for row in only for g in row.groups for j in g.jobs] == [1]


HISTORY_CASE = {
    "rule": "P(regression) = 0.994 after 1 of 1 retrigger reproduced (>= 0.98)",
    "evidence": {
        "p_regression": 0.9937,
        "reason": "P(regression) = 0.994 after 1 of 1 retrigger reproduced (>= 0.98)",
        "history": {
            "k": 1,
            "n": 1,
            "features": {"open_bug": False},
            "facts": {
                "runs": [
                    {
                        "line": LINE,
                        "same_config": 11,
                        "same_config_showed_line": 0,
                        "other_configs": 23,
                        "other_configs_showed_line": 1,
                    }
                ],
                "open_bugs": [],
            },
            "prior_p": 0.0978,
            # five columns as cases decided before 2026-12-06 hold them, and six
            "earlier_runs": [[2, 1, 0, 2, 0], [1, 0, 0, 0, 0, 4], [0, 0, 0, 1, 1, 0]],
            "p_retriggers": 0.9919,
            "thresholds": {"lower": 0.05, "upper": 0.98},
            "priors": {"base_rate": 0.0769},
        },
    },
}


def test_a_history_verdict_in_sentences_with_its_inputs_and_strip() -> None:
    told = explain(HISTORY_CASE)
    text = " ".join(told.sentences)
    assert "Failed 1 of 1 retrigger " in text
    assert (
        "dom/a/browser_x.js passed its last 11 runs on this configuration before this push" in text
    )
    assert "showed it in 1 of 23 runs" in text
    assert "No open intermittent bug matches." in text
    assert text.endswith(
        "Decision: P(regression) = 0.994 after 1 of 1 retrigger reproduced (>= 0.98)."
    )
    inputs = dict(told.inputs)
    assert inputs["P(regression) before the retriggers"] == "0.10"
    assert inputs["P(regression), all evidence"] == "0.99"
    assert inputs["Retriggers that reproduced"] == "1 of 1"
    assert [(e.pushes_ago, e.outcome) for e in told.earlier] == [
        (2, "clean"),
        (1, "none"),
        (0, "elsewhere"),
    ]
    assert told.earlier[0].words.startswith("2 pushes before: showed the line in 0 of 1 run here")
    assert told.earlier[1].words.endswith("; 4 other tests began failing")
    assert "began failing" not in told.earlier[0].words + told.earlier[2].words


def _told(**history: object) -> str:
    """The sentences of HISTORY_CASE with these fields of its stored history replaced."""
    evidence = HISTORY_CASE["evidence"]
    case = {**HISTORY_CASE, "evidence": {**evidence, "history": {**evidence["history"], **history}}}
    return " ".join(explain(case).sentences)


def test_a_case_judged_line_by_line_says_which_line_spoke() -> None:
    flaky = "TEST-UNEXPECTED-FAIL | dom/z/browser_flaky.js | boom"
    facts = {**HISTORY_CASE["evidence"]["history"]["facts"], "line": LINE}
    facts["line_p"] = {LINE: 0.9941, flaky: 0.12}
    text = _told(facts=facts)
    assert (
        "Each failure line was judged on its own: dom/a/browser_x.js speaks for the case "
        "(P(regression) 0.99); the others: dom/z/browser_flaky.js 0.12." in text
    )
    assert "judged on its own" not in " ".join(explain(HISTORY_CASE).sentences)


def test_a_past_regression_is_said_in_words() -> None:
    past = {"from_pushes_ago": 33, "to_pushes_ago": 19, "runs": 15, "showed_line": 15}
    text = _told(past_regression=past)
    assert (
        "Earlier, from 33 to 19 pushes before this one, the test showed the line in 15 of "
        "15 runs, and less often since: read as a regression that came and went, not as "
        "how often the test flakes." in text
    )
    assert "came and went" not in " ".join(explain(HISTORY_CASE).sentences)


def test_a_crashs_past_in_its_suite_chunk_is_said_in_words() -> None:
    crash = {"line": "PROCESS-CRASH | application crashed [@ Foo] | pid: <pid>", "p": 0.993}
    counts = {"earlier_pushes_with_crash": 10, "earlier_runs": 200, "earlier_runs_crashed": 12}
    text = _told(crash_past={**crash, **counts})
    assert (
        "The crash names no test: its suite chunk's earlier runs, on every platform, crashed "
        "with it in 12 of 200 runs, on 10 pushes; from that and the retriggers, "
        "P(regression) 0.99." in text
    )
    text = _told(crash_past={**crash, "earlier_runs": 40, "earlier_runs_crashed": 0})
    assert "never crashed with it in 40 runs" in text
    assert "The crash names no test" not in " ".join(explain(HISTORY_CASE).sentences)


def test_a_seed_verdict_and_odd_evidence() -> None:
    seed = {
        "rule": "4 retriggers of 5 showed a failure line of the original",
        "evidence": {
            "runs_counted": 6,
            "min_reproductions": 2,
            "lines": [{"line": LINE, "retriggers": 4}],
        },
    }
    text = " ".join(explain(seed).sentences)
    assert "dom/a/browser_x.js: the failure came back in 4 of 5 retriggers." in text
    assert "at 2 reproductions or more" in text
    assert explain(None).sentences == []
    broken = explain(
        {"rule": "r", "evidence": {"history": {"earlier_runs": [["x"], 3], "facts": 7}}}
    )
    assert broken.earlier == [] and broken.sentences[-1] == "Decision: r."
