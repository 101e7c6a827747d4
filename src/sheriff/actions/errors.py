"""One exception per way an action request can fail, each with a message a person can act on."""

from sheriff.errors import InputError, ServiceError, SheriffError


class ActionError(SheriffError):
    """An action could not be prepared or sent."""

    exit_code = 2


class NoDecisionTask(ActionError):
    """The Index has no decision task for the push."""


class ActionsJsonMissing(ActionError):
    """The decision task has no `public/actions.json`."""


class ActionsJsonMalformed(ActionError):
    """`actions.json` is not JSON, or lacks what version 1 requires."""


class UnsupportedActionsVersion(ActionsJsonMalformed):
    """`actions.json` declares a version other than 1."""


class NoMatchingAction(ActionError):
    """No action of that name applies to the task (or to the push)."""


class InvalidActionInput(ActionError, InputError):
    """The input does not satisfy the action's schema."""


class UnsupportedActionKind(ActionError):
    """The action is not `kind: hook`, the only kind sheriff sends."""


class ScopesNotSatisfied(ActionError):
    """The decision task's scopes do not allow the hook its actions.json names."""


class HookFailed(ActionError, ServiceError):
    """Taskcluster refused or failed `triggerHook`."""


class RequestConflict(ActionError, InputError):
    """An idempotency key already names a different request."""
