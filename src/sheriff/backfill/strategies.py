"""Backfill strategies: how to choose the pushes to run, interchangeable behind one interface.

A strategy sees the search so far (the window of pushes, what each showed, what is still
coming) and decides: request runs on some pushes, wait, look further back, name the
culprit, or give up. Both built-in strategies ask for the original's manifest set when
`same_manifests` is on. Adding one is a class with `@register`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from sheriff.backfill.settings import BackfillSettings
from sheriff.errors import InputError
from sheriff.model.backfill import Outcome, Step, find_culprit, plan_bisect, runs_needed
from sheriff.model.culprit import CulpritSearch

REGISTRY: dict[str, type[BackfillStrategy]] = {}


def register(cls: type[BackfillStrategy]) -> type[BackfillStrategy]:
    """Make a strategy available by its `name`."""
    REGISTRY[cls.name] = cls
    return cls


def backfill_strategy(name: str) -> BackfillStrategy:
    """The registered backfill strategy called `name`."""
    try:
        return REGISTRY[name]()
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise InputError(f"unknown backfill strategy {name!r}; known: {known}") from None


@dataclass(frozen=True)
class Search:
    """The state of one record's search, window indices oldest first (last: the regression)."""

    outcomes: list[Outcome]
    clean_runs: list[int]  # finished clean runs per push
    requested: set[int]  # pushes sheriff asked runs for
    waiting: set[int]  # pushes whose requested runs are still coming
    untestable: frozenset[int]
    needed: int  # clean runs that make a push clean
    same_manifests: bool
    can_extend: bool
    reproduced_runs: tuple[int, ...] = ()  # finished runs per push that showed the failure
    fail_rate: float = 0.5  # the regression's estimated failure rate
    asked_runs: tuple[int, ...] = ()  # runs asked for per push so far
    likely: frozenset[int] = frozenset()  # pushes other searches named as culprits


@dataclass(frozen=True)
class RunRequest:
    """Runs to ask CI for through one action."""

    action: str  # the actions strategy: backfill | backfill-task
    pushes: tuple[int, ...]  # window indices that will get runs
    times: int
    with_manifests: bool = True  # backfill-task: pass the original's test_manifests


@dataclass(frozen=True)
class Decision:
    """What to do now; nothing set means wait."""

    requests: list[RunRequest] = field(default_factory=list)
    culprit: int | None = None
    extend: bool = False
    fail: str | None = None


class BackfillStrategy(ABC):
    """One way of searching for the culprit push."""

    name: ClassVar[str]
    # Whether the search also reads the runs of the regression's other configurations
    # (evidence.window_evidence `others`): only one that weighs every run can use them; a
    # flake on another platform would make a push `failing` for bisect and linear.
    pools_configurations: ClassVar[bool] = False
    # Whether a push whose asked runs are still coming counts as waiting after one of them
    # reproduced: a failing push settles linear and bisect, but a search that weighs every
    # run must not give up on a spent budget before the runs it spent are in.
    waits_for_every_run: ClassVar[bool] = False
    # Whether the search weighs the pushes other reports named as culprits (`Search.likely`);
    # the engine looks them up only for one that does.
    weighs_named_culprits: ClassVar[bool] = False

    @abstractmethod
    def runs_per_push(self, fail_rate: float, settings: BackfillSettings) -> int:
        """Clean runs on a push before it counts as clean."""

    @abstractmethod
    def decide(self, search: Search) -> Decision:
        """The next step of the search."""


@register
class Linear(BackfillStrategy):
    """Today's practice: Gecko's `backfill` over the previous pushes at once, then read them."""

    name = "linear"

    def runs_per_push(self, fail_rate: float, settings: BackfillSettings) -> int:
        return settings.linear_times

    def decide(self, search: Search) -> Decision:
        earlier = tuple(range(len(search.outcomes) - 1))
        if not search.requested and earlier:
            if search.same_manifests:
                # Gecko's backfill runs the task's own manifests on every earlier push.
                return Decision([RunRequest("backfill", earlier, search.needed)])
            return Decision(
                [
                    RunRequest("backfill-task", (i,), search.needed, with_manifests=False)
                    for i in earlier
                ]
            )
        if search.waiting:
            return Decision()
        culprit = find_culprit(search.outcomes)
        if culprit is not None:
            return Decision(culprit=culprit)
        if Outcome.CLEAN not in search.outcomes[:-1]:
            return Decision(fail="no clean push within the backfill depth")
        return Decision(fail="the push after the newest clean one did not reproduce the failure")


@register
class Bisect(BackfillStrategy):
    """`backfill-task` on the middle of the suspect range until one push is left."""

    name = "bisect"

    def runs_per_push(self, fail_rate: float, settings: BackfillSettings) -> int:
        return runs_needed(
            fail_rate,
            miss_probability=settings.miss_probability,
            max_runs=settings.max_runs_per_push,
        )

    def decide(self, search: Search) -> Decision:
        if search.waiting:
            return Decision()
        plan = plan_bisect(search.outcomes, search.untestable)
        if plan.step is Step.FOUND:
            return Decision(culprit=plan.culprit)
        if plan.step is Step.EXTEND:
            if search.can_extend:
                return Decision(extend=True)
            return Decision(fail="the failure reproduces on the oldest push searched")
        if plan.step is Step.STUCK:
            return Decision(fail="no testable push left between the clean and the failing one")
        return Decision(
            [
                RunRequest(
                    "backfill-task",
                    (i,),
                    max(1, search.needed - search.clean_runs[i]),
                    with_manifests=search.same_manifests,
                )
                for i in plan.pushes
            ]
        )


@register
class FlakeAware(BackfillStrategy):
    """Runs chosen from the evidence so far until one push holds >= 0.97 of the probability
    (sheriff.model.culprit): an intermittent regression among flaky tests is neither taken
    for absent on one clean run nor blamed on the push after a lucky one."""

    name = "flake-aware"
    pools_configurations = True
    waits_for_every_run = True
    weighs_named_culprits = True
    # 0.95 named a wrong push for 1.75 % of simulated intermittent regressions (flakes of
    # the test around it, tests/model/test_culprit.py); 0.97 for 1.25 %.
    confidence: ClassVar[float] = 0.97

    def runs_per_push(self, fail_rate: float, settings: BackfillSettings) -> int:
        # Only for the outcomes shown per push: the search weighs every run itself.
        return runs_needed(
            fail_rate,
            miss_probability=settings.miss_probability,
            max_runs=settings.max_runs_per_push,
        )

    def decide(self, search: Search) -> Decision:
        count = len(search.outcomes)
        reproduced = search.reproduced_runs or tuple(
            int(o is Outcome.FAILING) for o in search.outcomes
        )
        runs = [(reproduced[i], search.clean_runs[i]) for i in range(count)]
        # The regression's own push: the original failed there too (it is not in the runs).
        runs[-1] = (runs[-1][0] + 1, runs[-1][1])
        model = CulpritSearch(
            fail_rate=search.fail_rate, confidence=self.confidence, likely=search.likely
        )
        step = model.next_step(
            runs,
            untestable=search.untestable,
            waiting=frozenset(search.waiting),
            spent=search.asked_runs,
        )
        if step.culprit is not None:
            return Decision(culprit=step.culprit)
        if step.no_culprit:
            return Decision(fail=f"no culprit found: {step.why}")
        if step.extend:
            if search.can_extend:
                return Decision(extend=True)
            return Decision(fail=f"the failure reproduces on the oldest push searched ({step.why})")
        if step.test is None:
            return Decision()
        return Decision(
            [
                RunRequest(
                    "backfill-task",
                    (step.test,),
                    step.times,
                    with_manifests=search.same_manifests,
                )
            ]
        )
