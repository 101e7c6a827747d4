"""Schemathesis against /openapi.json with every check, in process on the ASGI app: valid
and invalid data for every operation, on SQLite with the `build_world` data (kept small
to stay well under a few minutes)."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks
from schemathesis.generation import GenerationMode

from sheriff.web import create_app
from tests.web.conftest import build_world, offline_settings

# Every check schemathesis has that judges one answer on its own (the stateful ones,
# use_after_free and ensure_resource_availability, need a run of linked calls).
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.response_headers_conformance,
    checks.negative_data_rejection,
    checks.positive_data_acceptance,
    checks.missing_required_header,
    checks.unsupported_method,
    checks.ignored_auth,
    checks.allow_header_conformance,
]


def test_api_conforms_to_its_openapi_with_every_check(sqlite_engine) -> None:
    world = build_world(sqlite_engine)
    app = create_app(sqlite_engine, offline_settings(api_token="token"), protocol_factory=None)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 9
    known_job = world.jobs["p3-bc"]
    failures: list[str] = []

    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=25,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def conforms(case) -> None:
                case.call_and_validate(checks=CHECKS)

            try:
                conforms()
            except Exception as exc:  # gather every operation's failure, then report all
                failures.append(
                    f"{operation.method.upper()} {operation.path} ({mode.value}): {exc}"
                )
        # Also with ids that exist, so that the 200 answers are validated too.
        if "{job_id}" in operation.path:
            case = operation.Case(path_parameters={"repo": "autoland", "job_id": known_job})
            if operation.method.upper() == "POST":
                case.body = {}
                case.headers = {"Authorization": "Bearer token"}
            case.call_and_validate(checks=CHECKS)
    assert not failures, "\n\n".join(failures)
