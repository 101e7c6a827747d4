"""A push's jobs as Treeherder's job grid shows them, with sheriff's marks.

One row per platform configuration (platform and option collection); in a row, jobs by
group as Treeherder draws them — `M( bc1 bc2 )`, ungrouped jobs (`?`) bare — each
coloured by its result, with a mark for sheriff's verdict on it and for the runs that
retriggers and backfills added. `needs_a_person` is the filter a sheriff wants most.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from sheriff.model.case import is_persons_classification
from sheriff.store.api_queries import FAILED_RESULTS

UNGROUPED = "?"  # Treeherder's group symbol for a job in no group

# Verdict → (mark, words). The mark is drawn beside the symbol; the words are its label
# (colour is never the only signal).
VERDICT_MARKS: dict[str, tuple[str, str]] = {
    "regression": ("!", "sheriff: regression"),
    "intermittent": ("~", "sheriff: intermittent"),
    "infra": ("i", "sheriff: infrastructure"),
    "pending": ("…", "sheriff: deciding"),
    "not-eligible": ("", "sheriff: not eligible"),
    "classified": ("", "classified by a person"),
    "wrong-tier": ("", "not triaged (tier)"),
}
ACTION_MARKS = {"retrigger": "↻", "backfill": "⇤"}


def needs_a_person(job: Mapping[str, Any]) -> bool:
    """A failed run nobody has dealt with: not classified by a person, and not one that
    sheriff called intermittent or infrastructure (those it classifies), is still
    deciding, or leaves alone by rule (tier 3). Regressions need a person (to back out),
    and so do runs sheriff does not triage (not eligible) or has no case for."""
    if job["result"] not in FAILED_RESULTS:
        return False
    if is_persons_classification(job.get("classification_id")):
        return False
    return job.get("verdict") not in (
        "intermittent",
        "infra",
        "pending",
        "classified",
        "wrong-tier",
    )


def action_kind(action: str | None) -> str | None:
    """`retrigger` for the runs retrigger actions made, `backfill` for backfills' runs."""
    if not action:
        return None
    if action.startswith("retrigger") or action == "confirm-failure":
        return "retrigger"
    if action.startswith("backfill"):
        return "backfill"
    return None


@dataclass
class GridJob:
    id: int
    symbol: str
    label: str
    result: str
    verdict: str | None
    action: str | None
    needs_person: bool

    @property
    def mark(self) -> str:
        # On failed runs only: a green retrigger of a regression case is not the failure.
        if self.result not in FAILED_RESULTS:
            return ""
        return VERDICT_MARKS.get(self.verdict or "", ("", ""))[0]

    @property
    def action_mark(self) -> str:
        return ACTION_MARKS.get(self.action or "", "")

    @property
    def words(self) -> str:
        """What a screen reader (and the tooltip) says for the symbol."""
        parts = [self.label, self.result]
        if self.verdict:
            parts.append(VERDICT_MARKS.get(self.verdict, ("", self.verdict))[1])
        if self.action:
            parts.append(f"run added by a {self.action}")
        return ", ".join(parts)


@dataclass
class GridGroup:
    symbol: str
    name: str
    jobs: list[GridJob] = field(default_factory=list)

    @property
    def grouped(self) -> bool:
        return self.symbol != UNGROUPED


@dataclass
class GridRow:
    configuration: str
    groups: list[GridGroup] = field(default_factory=list)

    @property
    def jobs(self) -> int:
        return sum(len(g.jobs) for g in self.groups)

    def html(self, repo: str) -> Markup:
        """The row's symbols as HTML. Written here rather than in the template: a busy
        push has thousands of symbols, and a template loop over their properties took
        most of the page's time."""
        base = f"/{escape(repo)}/jobs/"
        parts: list[str] = []
        for group in self.groups:
            title = f' title="{escape(group.name)}"' if group.name else ""
            parts.append(f'<span class="group"{title}>')
            if group.grouped:
                parts.append(f"{escape(group.symbol)}(&#8203;")
            for j in group.jobs:
                classes = f"sym res-{escape(j.result)}"
                if j.action:
                    classes += " added"
                if j.needs_person:
                    classes += " needs"
                words = escape(j.words)
                mark = f'<span class="mark" aria-hidden="true">{j.mark}</span>' if j.mark else ""
                parts.append(
                    f'<a class="{classes}" href="{base}{j.id}/" title="{words}" '
                    f'aria-label="{words}">{j.action_mark}{escape(j.symbol)}{mark}</a>'
                )
            parts.append(")</span> " if group.grouped else "</span> ")
        return Markup("".join(parts))


def _natural(text: str) -> tuple[Any, ...]:
    # bc2 before bc10, as Treeherder sorts symbols.
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def job_grid(
    jobs: Iterable[Mapping[str, Any]], *, only_needing_a_person: bool = False
) -> list[GridRow]:
    """The grid of a push's jobs (rows as `sheriff.store.api_queries.jobs_of_push` gives)."""
    rows: dict[str, dict[str, GridGroup]] = {}
    for j in jobs:
        needs = needs_a_person(j)
        if only_needing_a_person and not needs:
            continue
        config = f"{j['platform']} {j['option_collection']}"
        groups = rows.setdefault(config, {})
        symbol = j["group_symbol"] or UNGROUPED
        group = groups.setdefault(symbol, GridGroup(symbol, j["group_name"] or ""))
        group.jobs.append(
            GridJob(
                id=j["id"],
                symbol=j["job_symbol"] or "?",
                label=j["label"],
                result=j["result"],
                verdict=j.get("verdict"),
                action=action_kind(j.get("action")),
                needs_person=needs,
            )
        )
    grid = []
    for config in sorted(rows):
        groups = sorted(rows[config].values(), key=lambda g: (g.grouped, _natural(g.symbol)))
        for group in groups:
            group.jobs.sort(key=lambda job: (_natural(job.symbol), job.action is not None, job.id))
        grid.append(GridRow(config, groups))
    return grid
