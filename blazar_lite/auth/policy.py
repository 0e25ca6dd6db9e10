"""Policy in code, with an optional JSON file of overrides.

A rule is a check string in the usual OpenStack shape: `role:admin`, `project_id:%(project_id)s`,
`user_id:%(user_id)s`, `rule:<name>`, `@` (always), `!` (never), combined with `and`, `or`,
`not` and parentheses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from blazar_lite.auth.context import RequestContext
from blazar_lite.exceptions import Forbidden

DEFAULT_RULES: dict[str, str] = {
    "admin": "role:admin",
    "project_member": "(role:member or role:admin) and project_id:%(project_id)s",
    "project_reader": "(role:reader or role:member or role:admin) and project_id:%(project_id)s",
    "admin_or_member": "rule:admin or rule:project_member",
    "admin_or_reader": "rule:admin or rule:project_reader",
    # Placement is an operator's and services' interface, as upstream.
    "placement": "role:admin or role:service",
    "placement:read": "rule:placement",
    "placement:write": "rule:placement",
    # Hosts are an operator's business, as in Blazar (blazar:oshosts:*).
    "hosts:get": "rule:admin",
    "hosts:post": "rule:admin",
    "hosts:put": "rule:admin",
    "hosts:delete": "rule:admin",
    "hosts:get_allocations": "rule:admin",
    "hosts:get_aggregates": "rule:admin",
    "hosts:evacuate": "rule:admin",
    "hosts:get_relocations": "rule:admin",
    "hosts:get_resource_properties": "rule:admin",
    "hosts:update_resource_properties": "rule:admin",
    "hosts:get_free_periods": "rule:admin",
    # Schedulers ask whether hosts may take an instance: a service's question, as Placement's are.
    "filters:host_passes": "role:admin or role:service",
    # Anyone may read the flavors they can see (public ones, and private ones shared with their
    # project); seeing every flavor and changing them is for admins.
    "flavors:get": "@",
    "flavors:get_all": "rule:admin",
    "flavors:post": "rule:admin",
    "flavors:put": "rule:admin",
    "flavors:delete": "rule:admin",
    # Leases belong to a project: its readers read them, its members change them, admins see all.
    "leases:get": "rule:admin_or_reader",
    "leases:get_all": "rule:admin",
    "leases:post": "rule:admin_or_member",
    "leases:put": "rule:admin_or_member",
    "leases:delete": "rule:admin_or_member",
    # Whoever may read a project's leases may ask when one would fit; the whole cluster's
    # timeline names every host, which is an operator's business.
    "availability:search": "rule:admin_or_reader",
    "availability:timeline": "rule:admin",
    # Instances too; only admins choose the node an instance lands on.
    "instances:get": "rule:admin_or_reader",
    "instances:get_all": "rule:admin",
    "instances:post": "rule:admin_or_member",
    "instances:put": "rule:admin_or_member",
    "instances:delete": "rule:admin_or_member",
    # Deleting a deployment shape's instance below the shape's scaling_minimum.
    "instances:force_delete": "rule:admin",
    # Deployments belong to a project as leases do.
    "deployments:get": "rule:admin_or_reader",
    "deployments:get_all": "rule:admin",
    "deployments:post": "rule:admin_or_member",
    "deployments:put": "rule:admin_or_member",
    "deployments:delete": "rule:admin_or_member",
    # Webhooks for lease events belong to a project as leases do.
    "webhooks:get": "rule:admin_or_reader",
    "webhooks:get_all": "rule:admin",
    "webhooks:post": "rule:admin_or_member",
    "webhooks:put": "rule:admin_or_member",
    "webhooks:delete": "rule:admin_or_member",
    # The server configuration (the placement scriptlet among it) is the operator's.
    "config:get": "rule:admin",
    "config:update": "rule:admin",
    "scriptlet:test": "rule:admin",
}

# A token is a parenthesis or a check; a check may hold %(name)s substitutions.
_TOKEN = re.compile(r"\s*(\(|\)|(?:%\([^)]*\)[a-z]|[^\s()])+)")

# A rule: check as a whole token, for following references between rules.
_REFERENCE = re.compile(r"(?<![^\s(])rule:([^\s()]+)")

Check = Callable[[RequestContext, Mapping[str, object]], bool]


class PolicyError(ValueError):
    """A check string cannot be parsed; the message names the rule and the problem."""


class Policy:
    def __init__(self, overrides: Mapping[str, str] | None = None) -> None:
        self.rules = dict(DEFAULT_RULES)
        self.rules.update(overrides or {})
        self._compiled = {name: self._compile(name, text) for name, text in self.rules.items()}
        self._refuse_cycles()

    @classmethod
    def from_file(cls, path: str | None) -> Policy:
        if not path:
            return cls()
        try:
            overrides = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise PolicyError(f"policy file {path} cannot be read as JSON: {exc}") from None
        if not isinstance(overrides, dict) or not all(isinstance(v, str) for v in overrides.values()):
            raise PolicyError(f"policy file {path} must map rule names to check strings")
        return cls(overrides)

    def allows(self, rule: str, context: RequestContext, target: Mapping[str, object] | None = None) -> bool:
        if rule not in self._compiled:
            raise PolicyError(f"unknown policy rule {rule}")
        return self._compiled[rule](context, target or {})

    def enforce(self, rule: str, context: RequestContext, target: Mapping[str, object] | None = None) -> None:
        """Raise Forbidden unless `rule` allows the caller to act on `target`."""
        if not self.allows(rule, context, target):
            raise Forbidden(f"Policy does not allow {rule} to be performed.")

    def _refuse_cycles(self) -> None:
        # A rule that reaches itself through rule: checks would recurse forever on every request.
        references = {name: set(_REFERENCE.findall(text)) for name, text in self.rules.items()}
        finished: set[str] = set()

        def visit(name: str, path: list[str]) -> None:
            if name in path:
                cycle = " -> ".join([*path[path.index(name):], name])
                raise PolicyError(f"rule {path[0]}: rules refer to each other in a loop: {cycle}")
            if name in finished:
                return
            for reference in references.get(name, ()):
                visit(reference, [*path, name])
            finished.add(name)

        for name in self.rules:
            visit(name, [])

    def _compile(self, name: str, text: str) -> Check:
        tokens = [t for t in _TOKEN.findall(text) if t]
        position = 0

        def peek() -> str | None:
            return tokens[position] if position < len(tokens) else None

        def take() -> str:
            nonlocal position
            if position >= len(tokens):
                raise PolicyError(f"rule {name}: check string {text!r} ends too early")
            position += 1
            return tokens[position - 1]

        def parse_or() -> Check:
            left = parse_and()
            while peek() == "or":
                take()
                right = parse_and()
                left = (lambda a, b: lambda c, t: a(c, t) or b(c, t))(left, right)
            return left

        def parse_and() -> Check:
            left = parse_not()
            while peek() == "and":
                take()
                right = parse_not()
                left = (lambda a, b: lambda c, t: a(c, t) and b(c, t))(left, right)
            return left

        def parse_not() -> Check:
            if peek() == "not":
                take()
                inner = parse_not()
                return lambda c, t: not inner(c, t)
            return parse_atom()

        def parse_atom() -> Check:
            token = take()
            if token == "(":
                inner = parse_or()
                if peek() != ")":
                    raise PolicyError(f"rule {name}: missing ')' in {text!r}")
                take()
                return inner
            return self._atom(name, token)

        check = parse_or() if tokens else (lambda c, t: True)
        if position != len(tokens):
            raise PolicyError(f"rule {name}: unexpected {tokens[position]!r} in {text!r}")
        return check

    def _atom(self, name: str, token: str) -> Check:
        if token == "@":
            return lambda c, t: True
        if token == "!":
            return lambda c, t: False
        kind, sep, value = token.partition(":")
        if not sep:
            raise PolicyError(f"rule {name}: {token!r} is not a check (use kind:value)")
        if kind == "rule":
            if value not in self.rules:
                raise PolicyError(f"rule {name}: refers to unknown rule {value}")
            return lambda c, t: self._compiled[value](c, t)
        if kind == "role":
            return lambda c, t: value.lower() in {r.lower() for r in c.roles}
        if kind in ("project_id", "user_id"):
            def match(c: RequestContext, t: Mapping[str, object]) -> bool:
                try:
                    expected = value % t
                except KeyError:
                    return False
                return getattr(c, kind) == expected
            return match
        raise PolicyError(f"rule {name}: unknown check kind {kind!r}")
