"""Taskcluster authentication: Hawk-signed requests, clients, roles and scope satisfaction."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import mohawk
import mohawk.exc

DEFAULT_CLIENT_ID = "sheriff-dev"
DEFAULT_ACCESS_TOKEN = "sheriff-dev-token"
ANONYMOUS_SCOPES = ("assume:anonymous",)

# What the in-tree action hooks and sheriff's work need; a real deployment grants a
# client like this through a role. Actions of the `backfill` permission (backfill,
# backfill-task) have their own hook, so a client needs both hook scopes.
DEFAULT_CLIENT_SCOPES = (
    "hooks:trigger-hook:project-gecko/in-tree-action-3-generic/*",
    "hooks:trigger-hook:project-gecko/in-tree-action-3-backfill/*",
    "queue:cancel-task:gecko-level-3/*",
    "queue:get-artifact:public/*",
)


def _repo_role_scopes(repo_path: str) -> list[str]:
    return [
        f"assume:repo:{repo_path}:action:*",
        "in-tree:hook-action:project-gecko/in-tree-action-3-*",
        "queue:create-task:highest:gecko-t/*",
        "queue:route:tc-treeherder.v2.*",
        "queue:scheduler-id:gecko-level-3",
        "secrets:get:project/releng/gecko/build/level-3/*",
    ]


@dataclass
class AuthConfig:
    """Clients (id → access token, scopes) and roles (role id → scopes) of the simulator."""

    clients: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    roles: dict[str, list[str]] = field(default_factory=dict)
    nonces: set[tuple[str, str, str]] = field(default_factory=set)

    def seen_nonce(self, client_id: str, nonce: str, timestamp: str) -> bool:
        """Hawk replay protection: a nonce is good once per client and timestamp."""
        key = (client_id, nonce, str(timestamp))
        if key in self.nonces:
            return True
        self.nonces.add(key)
        return False

    @classmethod
    def default(cls, repositories: Iterable[str]) -> AuthConfig:
        config = cls(
            clients={DEFAULT_CLIENT_ID: (DEFAULT_ACCESS_TOKEN, list(DEFAULT_CLIENT_SCOPES))}
        )
        for repo in repositories:
            path = f"hg.mozilla.org/integration/{repo}"
            config.roles[f"repo:{path}:branch:default"] = _repo_role_scopes(path)
            # The action tasks' own roles (`assume:repo:<path>:action:<permission>`).
            config.roles[f"repo:{path}:action:*"] = [
                "queue:create-task:highest:gecko-3/decision-gcp",
                "hooks:trigger-hook:project-gecko/in-tree-action-3-generic/*",
                "hooks:trigger-hook:project-gecko/in-tree-action-3-backfill/*",
            ]
        config.roles["anonymous"] = ["queue:get-artifact:public/*"]
        return config

    def add_client(self, client_id: str, access_token: str, scopes: Iterable[str]) -> None:
        self.clients[client_id] = (access_token, list(scopes))

    def expand(self, scopes: Iterable[str]) -> list[str]:
        """Expand `assume:` scopes through the roles, as `auth.expandScopes` does."""
        found: set[str] = set()
        todo = list(scopes)
        while todo:
            scope = todo.pop()
            if scope in found:
                continue
            found.add(scope)
            if scope.startswith("assume:"):
                for role, granted in self.roles.items():
                    if _role_matches(role, scope[len("assume:") :]):
                        todo.extend(granted)
        return normalize(found)


def _role_matches(role: str, assumed: str) -> bool:
    if assumed.endswith("*") and role.startswith(assumed[:-1]):
        return True
    if role.endswith("*"):
        return assumed.startswith(role[:-1])
    return role == assumed


def normalize(scopes: Iterable[str]) -> list[str]:
    """Sorted, without scopes another `*` scope already covers."""
    unique = sorted(set(scopes))
    stars = [s[:-1] for s in unique if s.endswith("*")]
    return [s for s in unique if not any(s != p + "*" and s.startswith(p) for p in stars)]


def satisfies(have: Iterable[str], need: str) -> bool:
    """Whether a scope set satisfies one required scope (a trailing `*` covers prefixes)."""
    for scope in have:
        if scope == need or (scope.endswith("*") and need.startswith(scope[:-1])):
            return True
    return False


class AuthFailed(Exception):
    """A Hawk header that does not verify (the real services answer 401)."""


def verify(
    config: AuthConfig,
    authorization: str | None,
    url: str,
    method: str,
    content: bytes,
    content_type: str,
) -> tuple[str | None, list[str]]:
    """The client id and expanded scopes of a request (anonymous without a Hawk header)."""
    if not authorization:
        return None, config.expand(ANONYMOUS_SCOPES)

    def lookup(client_id: str) -> dict[str, str]:
        entry = config.clients.get(client_id)
        if entry is None:
            raise LookupError(client_id)
        return {"id": client_id, "key": entry[0], "algorithm": "sha256"}

    try:
        receiver = mohawk.Receiver(
            lookup,
            authorization,
            url,
            method,
            content=content,
            content_type=content_type,
            timestamp_skew_in_seconds=15 * 60,
            seen_nonce=config.seen_nonce,
        )
    except LookupError as exc:
        raise AuthFailed(f"Client ID {exc.args[0]} does not exist") from None
    except mohawk.exc.HawkFail as exc:
        raise AuthFailed(f"Hawk authentication failed: {exc.__class__.__name__}") from None
    client_id = receiver.parsed_header["id"]
    return client_id, config.expand(config.clients[client_id][1])
