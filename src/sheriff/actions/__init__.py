"""Taskcluster actions: the actions.json protocol, strategies and the request log."""
