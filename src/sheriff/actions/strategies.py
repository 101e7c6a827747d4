"""Strategies: what sheriff asks CI for, each through one action of actions.json.

A strategy knows the action's name, whether it is push-level, how to build its input and
which runs of which labels a request asks for (so that nobody asks twice). `send` hands
a prepared action to the protocol; the dry-run strategy records instead of sending.
Adding a strategy is one class with `@register`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from sheriff.actions.protocol import ActionsProtocol, PreparedAction

REGISTRY: dict[str, type[Strategy]] = {}


def register(cls: type[Strategy]) -> type[Strategy]:
    """Make a strategy available by its `name`."""
    REGISTRY[cls.name] = cls
    return cls


def strategy(name: str) -> Strategy:
    """The registered strategy called `name`."""
    from sheriff.errors import InputError

    try:
        return REGISTRY[name]()
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise InputError(f"unknown strategy {name!r}; known: {known}") from None


class Strategy:
    """One way of asking CI for work."""

    name: ClassVar[str]
    action: ClassVar[str]  # the action's name in actions.json
    push_level: ClassVar[bool] = False  # True: `context: []`, no target task
    sends: ClassVar[bool] = True

    def build_input(self, **params: Any) -> dict[str, Any]:
        """The action input for these parameters."""
        raise NotImplementedError

    def runs(self, input: Mapping[str, Any], labels: Sequence[str]) -> Counter[str]:
        """Runs per label, on the request's own push, that the request asks for."""
        return Counter()

    def send(
        self, protocol: ActionsProtocol, prepared: PreparedAction, **kwargs: Any
    ) -> str | None:
        """Trigger the prepared action; returns the action task id (None: nothing sent)."""
        return protocol.trigger(prepared, **kwargs)


def _times(input: Mapping[str, Any]) -> int:
    return int(input.get("times", 1))


@register
class Retrigger(Strategy):
    """`retrigger` on one task: `times` clones of it. Gecko refuses a task whose label
    should not be retriggered (no `retrigger: "true"` tag) unless `force`."""

    name = "retrigger"
    action = "retrigger"

    def build_input(self, *, times: int = 1, force: bool = False, **_: Any) -> dict[str, Any]:
        return {"times": times, "force": True} if force else {"times": times}

    def runs(self, input: Mapping[str, Any], labels: Sequence[str]) -> Counter[str]:
        return Counter({label: _times(input) for label in labels})


@register
class RetriggerMultiple(Strategy):
    """`retrigger-multiple`: every label of one push in a single request."""

    name = "retrigger-multiple"
    action = "retrigger-multiple"
    push_level = True

    def build_input(
        self, *, labels: Iterable[str] | Mapping[str, int], times: int = 1, **_: Any
    ) -> dict[str, Any]:
        """One entry per distinct `times`; `labels` may map each label to its own count."""
        wanted = dict(labels) if isinstance(labels, Mapping) else dict.fromkeys(labels, times)
        by_times: dict[int, list[str]] = {}
        for label, count in sorted(wanted.items()):
            by_times.setdefault(int(count), []).append(label)
        return {
            "requests": [
                {"tasks": tasks, "times": count} for count, tasks in sorted(by_times.items())
            ]
        }

    def runs(self, input: Mapping[str, Any], labels: Sequence[str]) -> Counter[str]:
        counts: Counter[str] = Counter()
        for entry in input.get("requests", []):
            for label in entry.get("tasks", []):
                counts[label] += _times(entry)
        return counts


@register
class Backfill(Strategy):
    """`backfill`: the task's label on the `depth` previous pushes (gecko decides which)."""

    name = "backfill"
    action = "backfill"

    def build_input(self, *, depth: int = 9, times: int = 1, **_: Any) -> dict[str, Any]:
        return {"depth": depth, "times": times}


@register
class BackfillTask(Strategy):
    """`backfill-task` on one earlier push, running the original's exact manifests.

    `test_manifests` is the original task's `MOZHARNESS_TEST_PATHS` decoded, Gecko's
    `{suite: [manifest paths]}` (as Gecko's own `backfill` passes it): the backfilled task
    gets it as its MOZHARNESS_TEST_PATHS unchanged, and mozharness looks the suite up in it.
    A list of paths would make it run the suite's default tests instead.
    """

    name = "backfill-task"
    action = "backfill-task"
    push_level = True

    def build_input(
        self,
        *,
        label: str,
        revision: str,
        test_manifests: Mapping[str, Sequence[str]] | None = None,
        times: int = 1,
        **_: Any,
    ) -> dict[str, Any]:
        from sheriff.errors import InputError

        input: dict[str, Any] = {"label": label, "revision": revision, "times": times}
        if test_manifests:
            if not isinstance(test_manifests, Mapping):
                raise InputError(
                    "backfill-task test_manifests must be the original task's "
                    "MOZHARNESS_TEST_PATHS object {suite: [manifests]}, not a list"
                )
            input["test_manifests"] = {
                str(suite): list(paths) for suite, paths in sorted(test_manifests.items())
            }
        return input

    def runs(self, input: Mapping[str, Any], labels: Sequence[str]) -> Counter[str]:
        return Counter({input["label"]: _times(input)})


@register
class ConfirmFailures(Strategy):
    """`confirm-failures`: re-run only the failing tests of a task (new `<label>-cf` tasks,
    one per failing test). Gecko's callback reads the failures itself and its schema takes
    no `times`, so the input is empty."""

    name = "confirm-failures"
    action = "confirm-failures"

    def build_input(self, **_: Any) -> dict[str, Any]:
        return {}


@register
class AddNewJobs(Strategy):
    """`add-new-jobs`: schedule labels the push did not run."""

    name = "add-new-jobs"
    action = "add-new-jobs"
    push_level = True

    def build_input(self, *, labels: Iterable[str], times: int = 1, **_: Any) -> dict[str, Any]:
        return {"tasks": sorted(set(labels)), "times": times}

    def runs(self, input: Mapping[str, Any], labels: Sequence[str]) -> Counter[str]:
        return Counter({label: _times(input) for label in input.get("tasks", [])})


@register
class DryRun(Strategy):
    """Prepares and records what would be sent; sends nothing."""

    name = "dry-run"
    action = ""
    sends = False

    def send(
        self, protocol: ActionsProtocol, prepared: PreparedAction, **kwargs: Any
    ) -> str | None:
        return None
