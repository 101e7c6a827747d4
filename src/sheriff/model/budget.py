"""Budgets: caps on what sheriff asks CI for, and how much of each is left."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    """One cap (`cap` None: no cap) over a scope, of which `used` is spent already."""

    scope: str  # what the cap counts over, in words: "push", "autoland in 24 hours"
    cap: int | None
    used: int = 0

    @property
    def left(self) -> int | None:
        return None if self.cap is None else max(0, self.cap - self.used)

    def spend(self, n: int) -> Budget:
        return Budget(self.scope, self.cap, self.used + n)

    def to_dict(self) -> dict[str, object]:
        return {"scope": self.scope, "cap": self.cap, "used": self.used}


def tightest(budgets: tuple[Budget, ...]) -> Budget | None:
    """The capped budget with the least left (None when nothing is capped)."""
    capped = [b for b in budgets if b.cap is not None]
    return min(capped, key=lambda b: b.left or 0) if capped else None
