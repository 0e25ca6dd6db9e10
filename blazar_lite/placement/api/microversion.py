"""Placement microversions: `OpenStack-API-Version: placement X.Y` negotiation.

No header means 1.0; `latest` means the maximum. The version a request runs at is echoed on the
response, with `Vary` so that caches keep versions apart.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from flask import Flask, g, request
from werkzeug.http import http_date

from blazar_lite.exceptions import BadRequest, ServiceError
from blazar_lite.placement.versions import MAX_VERSION, MIN_VERSION

HEADER = "OpenStack-API-Version"
SERVICE = "placement"
_VERSION = re.compile(r"^([1-9]\d*)\.(0|[1-9]\d*)$")


def text(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


class NotAcceptableVersion(ServiceError):
    status = 406
    name = "NotAcceptable"


def parse(header: str | None) -> tuple[int, int]:
    """The version a request asks for, given its OpenStack-API-Version header."""
    if not header:
        return MIN_VERSION
    wanted = None
    for part in header.split(","):
        service, _, value = part.strip().partition(" ")
        if service.lower() == SERVICE:
            wanted = value.strip()
    if wanted is None:
        return MIN_VERSION
    if wanted.lower() == "latest":
        return MAX_VERSION
    match = _VERSION.match(wanted)
    if not match:
        raise BadRequest(f"invalid version string: {wanted!r}; use placement X.Y, e.g. placement 1.39")
    version = (int(match.group(1)), int(match.group(2)))
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise NotAcceptableVersion(
            f"Unacceptable version header: {wanted}; this service supports {text(MIN_VERSION)} "
            f"to {text(MAX_VERSION)}",
            code="placement.undefined_code", min_version=text(MIN_VERSION), max_version=text(MAX_VERSION))
    return version


def current() -> tuple[int, int]:
    return g.get("placement_version", MIN_VERSION)


def at_least(minor: int) -> bool:
    """True when the request runs at placement 1.`minor` or later."""
    return current() >= (1, minor)


def require(minor: int) -> None:
    """Routes that appear at a microversion are absent (404) before it, as upstream."""
    if not at_least(minor):
        from werkzeug.exceptions import NotFound

        raise NotFound()


def install(app: Flask) -> None:
    @app.before_request
    def _negotiate() -> None:
        if request.path.startswith("/placement"):
            g.placement_version = MIN_VERSION
            g.placement_version = parse(request.headers.get(HEADER))

    @app.after_request
    def _echo(response):  # type: ignore[no-untyped-def]
        if request.path.startswith("/placement"):
            response.headers[HEADER] = f"{SERVICE} {text(current())}"
            response.headers.add("Vary", HEADER.lower())
            if at_least(15) and request.method == "GET" and response.status_code == 200:
                # From 1.15 clients may cache GETs; they must revalidate, as the data moves.
                response.headers["Cache-Control"] = "no-cache"
                response.headers["Last-Modified"] = http_date(datetime.now(UTC))
        return response
