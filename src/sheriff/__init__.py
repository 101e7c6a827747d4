"""sheriff: an automated CI sheriff for Firefox-style CI (Taskcluster + Treeherder)."""

__version__ = "0.1.0"
