"""Errors the services raise. Each carries the HTTP status it maps to and a message that says
what to change; the HTTP layer renders them in the Blazar or the Placement error format."""

from __future__ import annotations


class ServiceError(Exception):
    status = 500
    name = "InternalError"
    # Placement error code (placement.*), shown only in the Placement format.
    code = "placement.undefined_code"

    def __init__(self, message: str, *, code: str | None = None, **extra: object) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.extra = extra


class BadRequest(ServiceError):
    status = 400
    name = "InvalidInput"


class Unauthorized(ServiceError):
    status = 401
    name = "NotAuthorized"


class Forbidden(ServiceError):
    status = 403
    name = "PolicyNotAuthorized"


class NotFound(ServiceError):
    status = 404
    name = "NotFound"


class Conflict(ServiceError):
    status = 409
    name = "Conflict"


class ConcurrentUpdate(Conflict):
    """Someone else changed the object since the caller read its generation."""

    name = "ConcurrentUpdate"
    code = "placement.concurrent_update"


class NotEnoughResources(Conflict):
    name = "NotEnoughResourcesAvailable"


class ServiceUnavailable(ServiceError):
    status = 503
    name = "ServiceUnavailable"


class AllocatorFailed(Conflict):
    """An external allocator (a Ganeti IAllocator program) could not be run, failed, timed out, or
    answered outside its protocol; the message quotes what it said."""

    name = "AllocatorFailed"
