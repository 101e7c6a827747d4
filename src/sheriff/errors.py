"""Project exceptions.

Every error a person can cause or fix (bad input, an unreachable service, a missing
artifact) is a `SheriffError`; the CLI prints its message as one line and exits non-zero.
"""


class SheriffError(Exception):
    """A failure with a message a person can act on."""

    exit_code = 1


class ConfigError(SheriffError):
    """A setting is missing or has an invalid value."""


class InputError(SheriffError):
    """A file or argument given by the user is malformed."""


class ServiceError(SheriffError):
    """A remote service (Taskcluster, Treeherder, Pulse) failed or refused a request."""
