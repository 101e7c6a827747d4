"""How sheriff retries a read from Taskcluster or Treeherder.

An attempt that got no answer (connection error, timeout) or a 5xx/429 answer is tried
again after a wait drawn with "full jitter" (uniform between 0 and `backoff · 2^n`, capped:
the scheme of AWS's "Exponential Backoff And Jitter"; the Taskcluster clients only vary
each delay by ±25 %), so that many clients thrown off at once do not come back in step.
A `Retry-After` header on a 429 or 503 (seconds, or an HTTP date) is a floor for the wait.
Each call has a total budget: a wait that would end past it is not started, the call gives
up at once with one line, and every attempt's timeout is cut to what remains of the
budget, so a call never takes much longer than the budget whatever the server does.
`retries` still bounds the attempts.

Only reads are retried here. A write (triggerHook, cancelTask, a POST) is attempted once:
whether it happened cannot be told from a lost answer, so the caller reconciles first
(see `sheriff.actions.protocol.ActionsProtocol.trigger`).

Why tenacity: the two transports are different HTTP libraries (`requests` under the
official Taskcluster client, whose Hawk signing and routes sheriff keeps; `httpx` for
Treeherder), so a transport-level retry of one library cannot serve both; the official
client's loop honours neither Retry-After nor a budget, and httpx's transport retries
connection errors only. tenacity is the well-kept general loop (stamina wraps it with
defaults that do not fit a per-call Retry-After floor): its stop conditions compose
(`stop_after_attempt | stop_before_delay`, the latter refusing a wait that would overrun
the budget), the wait is a pluggable strategy, and the sleep can be replaced in tests.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import tenacity

from sheriff.errors import ServiceError

log = logging.getLogger(__name__)

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
# The statuses whose Retry-After means "come back then" (RFC 9110 §10.2.3, RFC 6585 §4).
RETRY_AFTER_STATUS = frozenset({429, 503})
# An attempt is never given less than this (nor more than the timeout), even at the very
# end of the budget.
MIN_ATTEMPT_TIMEOUT = 1.0


class RetryableAnswer(Exception):
    """Raised by an attempt that is worth another; `error` is raised when none is left."""

    def __init__(self, error: ServiceError, *, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """A `Retry-After` header in seconds from now (delay-seconds or an HTTP date); None
    when absent or unreadable, 0 for a date in the past."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT by definition
        when = when.replace(tzinfo=UTC)
    seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def retry_after_of(status: int, headers: object) -> float | None:
    """The Retry-After of an answer whose status gives it a meaning, else None."""
    if status not in RETRY_AFTER_STATUS:
        return None
    get = getattr(headers, "get", None)
    return retry_after_seconds(get("Retry-After") if get else None)


@dataclass(frozen=True)
class RetryPolicy:
    """How patient one call is: attempts, waits, the total budget, each attempt's timeout."""

    retries: int = 8
    budget_seconds: float = 30.0
    backoff_seconds: float = 0.5  # ceiling of the first wait; doubles per retry
    max_backoff_seconds: float = 10.0
    timeout_seconds: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    def once(self) -> RetryPolicy:
        """The same limits with no retry: for calls that are unsafe to repeat blindly."""
        return replace(self, retries=0)

    def backoff(self, retry: int) -> float:
        """A full-jitter wait before retry number `retry` (1 for the first)."""
        ceiling = min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (retry - 1))
        return random.uniform(0.0, max(0.0, ceiling))

    def call(self, attempt: Callable[[float], T], *, what: str) -> T:
        """`attempt(timeout)` until it returns, raises anything but `RetryableAnswer`, or the
        retries or the budget are spent; then the last answer's error, with how long it tried."""
        started = time.monotonic()
        wait = _Wait(self)
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(RetryableAnswer),
            wait=wait,
            stop=(
                tenacity.stop_after_attempt(self.retries + 1)
                | tenacity.stop_before_delay(self.budget_seconds)
            ),
            sleep=self.sleep,
            before_sleep=lambda state: log.info(
                "retrying %s in %.1f s after: %s",
                what,
                state.upcoming_sleep,
                state.outcome.exception() if state.outcome else "?",
            ),
            reraise=True,
        )
        try:
            for try_ in retrying:
                with try_:
                    left = self.budget_seconds - (time.monotonic() - started)
                    return attempt(min(self.timeout_seconds, max(MIN_ATTEMPT_TIMEOUT, left)))
        except RetryableAnswer as last:
            raise _given_up(last, retrying.statistics, wait, self, started) from last
        raise AssertionError("unreachable: tenacity returns, raises or reraises")


class _Wait(tenacity.wait.wait_base):
    """Full jitter, floored by the last answer's Retry-After (remembered for the message)."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.retry_after: float | None = None

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None else None
        self.retry_after = error.retry_after if isinstance(error, RetryableAnswer) else None
        jittered = self.policy.backoff(retry_state.attempt_number)
        return max(jittered, self.retry_after or 0.0)


def policy_from_settings(settings: Any) -> RetryPolicy:
    """The read policy `sheriff.config.Settings` asks for (`http_*` settings)."""
    return RetryPolicy(
        retries=settings.http_retries,
        budget_seconds=settings.http_retry_budget_seconds,
        timeout_seconds=settings.http_timeout_seconds,
    )


def _given_up(
    last: RetryableAnswer,
    statistics: dict,
    wait: _Wait,
    policy: RetryPolicy,
    started: float,
) -> ServiceError:
    """The last answer's error, its message saying how long sheriff tried."""
    attempts = int(statistics.get("attempt_number", 1))
    took = time.monotonic() - started
    if policy.retries == 0:
        return last.error
    how = f"gave up after {attempts} attempts in {took:.1f} s"
    if attempts <= policy.retries and wait.retry_after is not None:
        how += f"; asked to retry after {wait.retry_after:.0f} s"
    if attempts <= policy.retries:
        how += f", past the retry budget of {policy.budget_seconds:g} s"
    error = last.error
    error.args = (f"{error} ({how})", *error.args[1:])
    return error
