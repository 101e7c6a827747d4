"""The CI simulator: Taskcluster and Treeherder over HTTP, playing scenarios with ground truth."""
