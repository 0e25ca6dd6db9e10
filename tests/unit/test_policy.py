"""Policy: the check-string language, the default rules and the override file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blazar_lite.auth.context import RequestContext
from blazar_lite.auth.policy import DEFAULT_RULES, Policy, PolicyError
from blazar_lite.exceptions import Forbidden


def caller(*roles: str, project: str = "p1", user: str = "u1") -> RequestContext:
    return RequestContext(user_id=user, project_id=project, roles=frozenset(roles))


def allows(check: str, context: RequestContext, target: dict[str, object] | None = None) -> bool:
    return Policy({"under_test": check}).allows("under_test", context, target)


# The check-string language.

def test_role_check_matches_a_role_of_the_caller() -> None:
    assert allows("role:member", caller("reader", "member"))
    assert not allows("role:member", caller("reader"))


def test_role_check_ignores_case() -> None:
    assert allows("role:Admin", caller("admin"))
    assert allows("role:admin", caller("ADMIN"))


def test_project_id_substitution_compares_with_the_target() -> None:
    assert allows("project_id:%(project_id)s", caller(project="p1"), {"project_id": "p1"})
    assert not allows("project_id:%(project_id)s", caller(project="p1"), {"project_id": "p2"})


def test_substitution_missing_from_the_target_denies() -> None:
    assert not allows("project_id:%(project_id)s", caller(project="p1"), {})


def test_user_id_substitution_compares_with_the_target() -> None:
    assert allows("user_id:%(owner)s", caller(user="u1"), {"owner": "u1"})
    assert not allows("user_id:%(owner)s", caller(user="u1"), {"owner": "u2"})


def test_literal_project_id_check() -> None:
    assert allows("project_id:p1", caller(project="p1"))
    assert not allows("project_id:p1", caller(project="p2"))


def test_rule_reference_evaluates_the_named_rule() -> None:
    policy = Policy({"base": "role:operator", "derived": "rule:base"})
    assert policy.allows("derived", caller("operator"))
    assert not policy.allows("derived", caller("member"))


def test_rule_reference_sees_later_overrides_of_the_rule() -> None:
    # admin_or_member refers to rule:admin; overriding admin changes what admin_or_member allows.
    policy = Policy({"admin": "role:superuser"})
    assert policy.allows("admin_or_member", caller("superuser", project="p9"), {"project_id": "p1"})
    assert not policy.allows("admin_or_member", caller("admin", project="p9"), {"project_id": "p1"})


def test_and_needs_both_sides() -> None:
    assert allows("role:a and role:b", caller("a", "b"))
    assert not allows("role:a and role:b", caller("a"))


def test_or_needs_either_side() -> None:
    assert allows("role:a or role:b", caller("b"))
    assert not allows("role:a or role:b", caller("c"))


def test_not_inverts() -> None:
    assert allows("not role:a", caller("b"))
    assert not allows("not role:a", caller("a"))


def test_and_binds_tighter_than_or() -> None:
    # role:a or (role:b and role:c)
    assert allows("role:a or role:b and role:c", caller("a"))
    assert not allows("role:a or role:b and role:c", caller("b"))


def test_not_binds_tighter_than_and() -> None:
    # (not role:a) and role:b
    assert allows("not role:a and role:b", caller("b"))
    assert not allows("not role:a and role:b", caller("a", "b"))


def test_parentheses_group() -> None:
    assert not allows("(role:a or role:b) and role:c", caller("a"))
    assert allows("(role:a or role:b) and role:c", caller("a", "c"))
    assert allows("not (role:a and role:b)", caller("a"))
    assert allows("((role:a))", caller("a"))


def test_parentheses_may_touch_their_checks() -> None:
    assert allows("(role:a)or(role:b)", caller("b"))
    assert not allows("(role:a)or(role:b)", caller("c"))
    assert allows("not(role:a)", caller("b"))


def test_at_always_allows() -> None:
    assert allows("@", caller())


def test_bang_never_allows() -> None:
    assert not allows("!", caller("admin"))


def test_empty_check_string_allows() -> None:
    assert allows("", caller())


@pytest.mark.parametrize("check, problem", [
    ("role:a and", "ends too early"),
    ("(role:a or role:b", "missing"),
    ("role:a role:b", "unexpected"),
    ("role:a )", "unexpected"),
    ("admin", "is not a check"),
    ("group:admins", "unknown check kind"),
])
def test_malformed_check_strings_are_refused(check: str, problem: str) -> None:
    with pytest.raises(PolicyError, match=problem) as raised:
        Policy({"broken": check})
    assert "rule broken" in str(raised.value)


def test_unknown_rule_reference_is_refused() -> None:
    with pytest.raises(PolicyError, match="refers to unknown rule nowhere"):
        Policy({"broken": "rule:nowhere"})


def test_rules_that_refer_to_each_other_in_a_loop_are_refused() -> None:
    with pytest.raises(PolicyError, match="loop"):
        Policy({"a": "role:x or rule:b", "b": "rule:a"})


def test_asking_about_an_unknown_rule_is_an_error() -> None:
    with pytest.raises(PolicyError, match="unknown policy rule nothing"):
        Policy().allows("nothing", caller("admin"))


def test_enforce_raises_forbidden_naming_the_rule() -> None:
    with pytest.raises(Forbidden, match="placement:write"):
        Policy().enforce("placement:write", caller("member"))


def test_enforce_returns_quietly_when_allowed() -> None:
    Policy().enforce("placement:write", caller("admin"))


# The default rules.

def test_admin_rule_needs_the_admin_role() -> None:
    policy = Policy()
    assert policy.allows("admin", caller("admin"))
    assert not policy.allows("admin", caller("member"))


def test_project_member_is_a_member_or_admin_of_the_target_project() -> None:
    policy = Policy()
    target = {"project_id": "p1"}
    assert policy.allows("project_member", caller("member", project="p1"), target)
    assert policy.allows("project_member", caller("admin", project="p1"), target)
    assert not policy.allows("project_member", caller("member", project="p2"), target)
    assert not policy.allows("project_member", caller("reader", project="p1"), target)


def test_project_reader_includes_readers_of_the_target_project() -> None:
    policy = Policy()
    target = {"project_id": "p1"}
    assert policy.allows("project_reader", caller("reader", project="p1"), target)
    assert policy.allows("project_reader", caller("member", project="p1"), target)
    assert not policy.allows("project_reader", caller("reader", project="p2"), target)
    assert not policy.allows("project_reader", caller(project="p1"), target)


def test_admin_of_another_project_passes_admin_or_member_but_not_project_member() -> None:
    policy = Policy()
    target = {"project_id": "p1"}
    assert policy.allows("admin_or_member", caller("admin", project="p2"), target)
    assert policy.allows("admin_or_reader", caller("admin", project="p2"), target)
    assert not policy.allows("project_member", caller("admin", project="p2"), target)


def test_placement_is_for_admins_and_services() -> None:
    policy = Policy()
    for rule in ("placement:read", "placement:write"):
        assert policy.allows(rule, caller("admin"))
        assert policy.allows(rule, caller("service"))
        assert not policy.allows(rule, caller("member"))
        assert not policy.allows(rule, caller("reader"))


def test_every_default_rule_compiles() -> None:
    policy = Policy()
    for rule in DEFAULT_RULES:
        policy.allows(rule, caller("admin"), {"project_id": "p1"})


# The override file.

def write_policy(tmp_path: Path, content: str) -> str:
    path = tmp_path / "policy.json"
    path.write_text(content)
    return str(path)


def test_no_policy_file_means_the_defaults() -> None:
    assert Policy.from_file(None).rules == DEFAULT_RULES


def test_policy_file_overrides_a_rule_and_keeps_the_others(tmp_path: Path) -> None:
    policy = Policy.from_file(write_policy(tmp_path, json.dumps({"placement:read": "role:reader"})))
    assert policy.allows("placement:read", caller("reader"))
    assert not policy.allows("placement:write", caller("reader"))
    assert policy.rules["admin"] == DEFAULT_RULES["admin"]


def test_policy_file_may_add_rules(tmp_path: Path) -> None:
    policy = Policy.from_file(write_policy(tmp_path, json.dumps({"lease:create": "rule:admin_or_member"})))
    assert policy.allows("lease:create", caller("member", project="p1"), {"project_id": "p1"})


def test_policy_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot be read as JSON"):
        Policy.from_file(write_policy(tmp_path, "{'admin': 'role:admin'"))


def test_missing_policy_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot be read"):
        Policy.from_file(str(tmp_path / "absent.json"))


@pytest.mark.parametrize("content", ['["role:admin"]', '{"admin": ["role:admin"]}', '{"admin": 1}'])
def test_policy_file_must_map_names_to_check_strings(tmp_path: Path, content: str) -> None:
    with pytest.raises(PolicyError, match="must map rule names to check strings"):
        Policy.from_file(write_policy(tmp_path, content))


def test_policy_file_with_an_unknown_rule_reference_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="unknown rule no_such_rule"):
        Policy.from_file(write_policy(tmp_path, json.dumps({"placement:read": "rule:no_such_rule"})))


def test_policy_file_with_a_malformed_check_string_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="rule placement:read"):
        Policy.from_file(write_policy(tmp_path, json.dumps({"placement:read": "role:admin or"})))
