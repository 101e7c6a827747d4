"""The outside world: Taskcluster, Treeherder, artifacts, Pulse."""
