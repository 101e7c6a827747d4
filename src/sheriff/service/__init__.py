"""The service: `sheriff listen` (Pulse → Celery) and `sheriff worker` (Celery tasks that run
the same triage and backfill code as `sheriff triage`, with PostgreSQL as the only state)."""
