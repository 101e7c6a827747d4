"""Ingestion: files, Taskcluster task groups and Pulse messages into the store."""
