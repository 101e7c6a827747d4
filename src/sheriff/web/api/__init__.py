"""The REST API: Treeherder-like read paths, and token-guarded writes through the actions log."""
