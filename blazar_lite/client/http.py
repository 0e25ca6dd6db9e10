"""HTTP for the client: a keystoneauth1 session, JSON in and out, Blazar error bodies as exceptions.

The session decides how requests are authenticated: no auth (a fixed endpoint, the service's
noauth mode), a fixed token against a fixed endpoint, or a Keystone login (password, or a token
to rescope) whose catalog names the `reservation` endpoint unless one is given. The client itself
only speaks paths under /v1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import plugin as ks_plugin
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3
from keystoneauth1.noauth import NoAuth
from keystoneauth1.token_endpoint import Token

DEFAULT_ENDPOINT = "http://127.0.0.1:1234/v1"
SERVICE_TYPE = "reservation"
# The operating system's reason inside the connection error text requests builds.
_OS_REASON = re.compile(r"\[Errno -?\d+\] ([^\"')]+)")


class ClientError(Exception):
    """A request failed; `message` says why.

    `status` is the HTTP status the service answered with (for a name the client resolved itself:
    404 when nothing has it, 409 when several do; for a refused Keystone login, Keystone's), or
    None when no answer came (service or Keystone unreachable, credentials unusable).
    """

    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def __str__(self) -> str:
        return self.message if self.status is None else f"{self.message} (HTTP {self.status})"


@dataclass(frozen=True)
class Credentials:
    """How to reach and authenticate to the service; unset fields are not used."""

    endpoint: str | None = None
    token: str | None = None
    auth_url: str | None = None
    username: str | None = None
    password: str | None = None
    project_name: str | None = None
    user_domain_name: str = "Default"
    project_domain_name: str = "Default"
    region_name: str | None = None
    interface: str = "public"


def _auth(credentials: Credentials) -> ks_plugin.BaseAuthPlugin:
    if credentials.auth_url:
        if credentials.username or credentials.password:
            if not (credentials.username and credentials.password):
                raise ClientError(None, f"A Keystone login at {credentials.auth_url} needs both a username "
                                        "and a password.")
            return v3.Password(auth_url=credentials.auth_url, username=credentials.username,
                               password=credentials.password, project_name=credentials.project_name,
                               user_domain_name=credentials.user_domain_name,
                               project_domain_name=credentials.project_domain_name)
        if credentials.token:
            return v3.Token(auth_url=credentials.auth_url, token=credentials.token,
                            project_name=credentials.project_name,
                            project_domain_name=credentials.project_domain_name)
        raise ClientError(None, f"A Keystone login at {credentials.auth_url} needs a username and password, "
                                "or a token.")
    if credentials.token:
        return Token(credentials.endpoint or DEFAULT_ENDPOINT, credentials.token)
    return NoAuth(endpoint=credentials.endpoint or DEFAULT_ENDPOINT)


def make_session(credentials: Credentials, timeout: float = 30.0) -> tuple[ks_session.Session, dict[str, Any]]:
    """A keystoneauth1 session for these credentials, and the endpoint filter requests use.

    Raises ClientError when the credentials cannot make a login (a username without a password).
    """
    auth = _auth(credentials)
    endpoint_filter: dict[str, Any] = {"service_type": SERVICE_TYPE, "interface": credentials.interface}
    if credentials.region_name:
        endpoint_filter["region_name"] = credentials.region_name
    if credentials.endpoint:
        endpoint_filter = {"endpoint_override": credentials.endpoint}
    return ks_session.Session(auth=auth, timeout=timeout, app_name="blazar-lite"), endpoint_filter


class V1Client:
    """JSON requests to paths under the service's /v1 endpoint."""

    def __init__(self, session: ks_session.Session, endpoint_filter: dict[str, Any]) -> None:
        self.session = session
        self.endpoint_filter = endpoint_filter

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """The decoded JSON answer (None for an empty one); ClientError for an error answer or none."""
        kwargs: dict[str, Any] = {"raise_exc": False, "headers": {"Accept": "application/json"}}
        if "endpoint_override" in self.endpoint_filter:
            kwargs["endpoint_override"] = self.endpoint_filter["endpoint_override"]
        else:
            kwargs["endpoint_filter"] = self.endpoint_filter
        if body is not None:
            kwargs["json"] = body
        try:
            response = self.session.request(path, method, **kwargs)
        except ks_exceptions.ConnectionError as exc:
            raise ClientError(None, _connection_message(exc)) from None
        except ks_exceptions.EndpointNotFound:
            raise ClientError(None, f"The service catalog has no {SERVICE_TYPE} endpoint for "
                                    f"{_catalog_filter(self.endpoint_filter)}; give the endpoint "
                                    "explicitly.") from None
        except ks_exceptions.HttpError as exc:
            # Raised by the auth plugin: the session's own answers are not raised (raise_exc=False).
            # Its text already ends with the status, which ClientError adds again.
            reason = exc.message.partition(f" (HTTP {exc.http_status})")[0]
            raise ClientError(exc.http_status, f"Keystone refused the login: {reason}") from None
        except ks_exceptions.ClientException as exc:
            raise ClientError(None, f"Cannot authenticate: {exc}") from None
        if response.status_code >= 400:
            raise ClientError(response.status_code, _error_message(response))
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise ClientError(response.status_code, f"The answer to {method} {path} is not JSON: "
                                                    f"{response.text[:200]!r}; is the endpoint the "
                                                    "service's /v1?") from None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)

    def put(self, path: str, body: Any) -> Any:
        return self.request("PUT", path, body)

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, body)

    def delete(self, path: str) -> None:
        self.request("DELETE", path)


def _connection_message(exc: ks_exceptions.ConnectionError) -> str:
    # keystoneauth's text nests requests' and urllib3's; the URL it names first (the service's or
    # Keystone's) and the operating system's reason are what a person needs.
    text = str(exc)
    reason = _OS_REASON.search(text)
    prefix = "Unable to establish connection to "
    if reason is None or not text.startswith(prefix):
        return f"Cannot connect: {text}"
    url = text.removeprefix(prefix).split(": ", 1)[0]
    return f"Cannot connect to {url}: {reason.group(1).strip()}."


def _catalog_filter(endpoint_filter: dict[str, Any]) -> str:
    return ", ".join(f"{key} {value}" for key, value in sorted(endpoint_filter.items()) if key != "service_type")


def _error_message(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200] or response.reason or "no message"
    if isinstance(body, dict) and "error_message" in body:
        return str(body["error_message"])
    return str(body)[:200]
