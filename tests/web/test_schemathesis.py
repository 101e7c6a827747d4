"""Schemathesis against /openapi.json, in process on the ASGI app: no 500, no schema
violation, on SQLite with the `build_world` data (kept small to stay well under a minute)."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from sheriff.web import create_app
from tests.web.conftest import build_world, offline_settings

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def test_api_conforms_to_its_openapi(sqlite_engine) -> None:
    world = build_world(sqlite_engine)
    app = create_app(sqlite_engine, offline_settings(api_token="token"), protocol_factory=None)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 9
    known_job = world.jobs["p3-bc"]

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=30,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def conforms(case) -> None:
            case.call_and_validate(checks=CHECKS)

        conforms()
        # Also with ids that exist, so that the 200 answers are validated too.
        if "{job_id}" in operation.path:
            case = operation.Case(path_parameters={"repo": "autoland", "job_id": known_job})
            if operation.method.upper() == "POST":
                case.body = {}
                case.headers = {"Authorization": "Bearer token"}
            case.call_and_validate(checks=CHECKS)
