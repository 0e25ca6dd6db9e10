"""Every operation of the OpenAPI document, fuzzed in-process: never a 5xx, and every answer is one
the document describes (status code, content type, body schema)."""

from __future__ import annotations

import pytest
from flask import Flask
from hypothesis import HealthCheck, settings

# Installed with the `fuzz` extra (tox -e fuzz); a plain `pytest` without it skips this module.
schemathesis = pytest.importorskip("schemathesis")

from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from blazar_lite.app import create_app  # noqa: E402
from blazar_lite.docs import openapi_spec  # noqa: E402
from blazar_lite.settings import Settings  # noqa: E402
from tests.fuzz.conftest import ADMIN, examples  # noqa: E402

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

# The document depends only on the routes (as for `blazar-lite openapi`), so it is read once at
# collection from a throwaway application; the requests go to the seeded `fuzz_app`.
schema = schemathesis.openapi.from_dict(openapi_spec(create_app(Settings(database_url="sqlite://"))))


@schema.parametrize()
@settings(max_examples=examples(), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
def test_operation_never_fails_and_answers_as_documented(case, fuzz_app: Flask) -> None:  # type: ignore[no-untyped-def]
    case.call_and_validate(app=fuzz_app, headers=ADMIN, checks=CHECKS)
