"""What one worker process holds: the store, CI clients, and one `Triage` per repository.

Made on first use in each process (after Celery forks), and kept: a `Triage` keeps hints
between passes (the last listing of a push, statuses already stored) that save requests;
everything it decides on is read from PostgreSQL, so any worker can take any task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.engine import Engine

from sheriff.ci.retry import policy_from_settings
from sheriff.ci.taskcluster import TaskclusterClients, clients_from_settings
from sheriff.ci.treeherder import Treeherder
from sheriff.config import Settings
from sheriff.errors import ConfigError
from sheriff.service.clock import ci_now
from sheriff.store.db import open_database
from sheriff.triage.engine import Triage


@dataclass
class Runtime:
    settings: Settings
    engine: Engine
    clients: TaskclusterClients
    treeherder: Treeherder
    live: bool
    triages: dict[str, Triage] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Settings, *, live: bool) -> Runtime:
        if not settings.database_url.startswith("postgresql"):
            # Several processes share the work: SQLite's one writer would serialise them.
            raise ConfigError(
                f"the service needs PostgreSQL (SHERIFF_DATABASE_URL), not {settings.database_url}"
            )
        if live and not settings.has_taskcluster_credentials:
            raise ConfigError("--live needs TASKCLUSTER_CLIENT_ID and TASKCLUSTER_ACCESS_TOKEN")
        return cls(
            settings=settings,
            engine=open_database(settings.database_url),
            clients=clients_from_settings(settings),
            treeherder=Treeherder(settings.treeherder_url, policy=policy_from_settings(settings)),
            live=live,
        )

    def triage(self, repo: str) -> Triage:
        if repo not in self.settings.watched_repositories:
            raise ConfigError(f"repository {repo} is not watched by this deployment")
        if repo not in self.triages:
            triage = Triage(
                self.engine, self.settings, self.clients, self.treeherder, repo=repo, live=self.live
            )
            triage.observer.ask_passed_runs_for_lines = False
            self.triages[repo] = triage
        return self.triages[repo]

    def now(self) -> datetime:
        return ci_now(self.settings.ci_clock_url)
