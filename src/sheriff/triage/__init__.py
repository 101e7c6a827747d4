"""Triage: one case per failed test run, retriggers, verdicts (SPEC §3)."""
