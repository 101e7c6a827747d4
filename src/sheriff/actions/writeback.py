"""Treeherder write-back: the sender of `treeherder-classify` effects.

One effect per job: a note with a failure classification (Treeherder's NoteViewSet:
job_id, failure_classification_id, text) and, for an intermittent with an open bug, the
bug linked to the job (BugJobMapViewSet: job_id, bug_id, type). Before writing it reads
the job's notes: a note that is not sheriff's (a person's, mozci's) means someone
classified the job, and sheriff leaves it alone. sheriff's notes carry the request's
reference (`[sheriff <ref>]`), so a note sent before a crash is found, never doubled.
"""

from __future__ import annotations

from typing import Any

from sheriff.actions.effects import EffectRefused, EffectSkipped, reference
from sheriff.actions.log import RequestRow
from sheriff.ci.treeherder import Treeherder, TreeherderError, TreeherderUnavailable

CLASSIFY = "treeherder-classify"
MARKER = "[sheriff "
# Classifications Treeherder itself sets and unsets (not a decision anyone made).
AUTOMATIC = frozenset({1, 6, 8})


def marker(row: RequestRow) -> str:
    return f"{MARKER}{reference(row)}]"


class TreeherderWriter:
    """Applies `treeherder-classify` rows of one repository through a Treeherder client."""

    def __init__(self, treeherder: Treeherder) -> None:
        self.treeherder = treeherder

    def send(self, row: RequestRow) -> Any:
        repo, wanted = row.repository, row.input
        job_id = int(wanted["job_id"])
        tag = marker(row)
        try:
            notes = self.treeherder.notes(repo, job_id)
            ours = [n for n in notes if tag in str(n.get("text", ""))]
            if not ours:
                others = [n for n in notes if MARKER not in str(n.get("text", ""))]
                if others:
                    raise EffectSkipped(f"classified by {others[-1].get('who') or 'someone'}")
                shown = self.treeherder.job(repo, job_id).get("failure_classification_id")
                if shown not in AUTOMATIC:
                    raise EffectSkipped(f"classified already ({shown})")
                text = f"{wanted['text']} {tag}"
                self.treeherder.add_note(repo, job_id, int(wanted["classification"]), text)
            bug = wanted.get("bug_id")
            if bug is not None:
                linked = {int(m["bug_id"]) for m in self.treeherder.bug_job_maps(repo, job_id)}
                if int(bug) not in linked:
                    self.treeherder.add_bug_job_map(repo, job_id, int(bug))
        except TreeherderUnavailable:
            raise
        except TreeherderError as exc:
            if exc.status is not None and 400 <= exc.status < 500 and exc.status != 429:
                raise EffectRefused(str(exc)) from exc
            raise
        return {"job_id": job_id, "classification": wanted["classification"], "bug_id": bug}
