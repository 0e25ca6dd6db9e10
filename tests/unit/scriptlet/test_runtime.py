"""Calling a compiled scriptlet: outcomes, failures, the interpreter's own errors, member structs
built once, and calls in several threads at once."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from blazar_lite.scriptlet import runtime
from blazar_lite.scriptlet.program import InvalidScriptlet


class Crash(BaseException):
    """Stands for what the interpreter raises on a panic or out of memory: not an Exception."""


class FakeWorld:
    def __init__(self, label: str = "w") -> None:
        self.label = label

    def member_state(self, name: str) -> dict[str, Any]:
        return {"status": "up", "instance_count": len(name), "usage": {}, "free": {}, "capacity": {}}

    def project(self, name: str) -> dict[str, Any]:
        if name == "crash":
            raise Crash("interpreter gave up")
        return {"name": self.label, "instances": 0, "leases": 0, "config": {}}


MEMBERS = [runtime.Member(f"node-{i}", "up", config=(("rank", str(i)),)) for i in range(5)]
NAMES = [m.server_name for m in MEMBERS]


def decide(source: str, world: Any = None, candidates: list[str] | None = None, **kwargs: Any) -> runtime.Outcome:
    program = runtime.compile_program(source)
    return runtime.decide(program, {"name": "i1", "project": "p1"}, MEMBERS, candidates or NAMES,
                          world or FakeWorld(), instance_resources={"VCPU": 1}, **kwargs)


def body(text: str) -> str:
    return "def instance_placement(request, candidate_members):\n" + "".join(
        f"    {line}\n" for line in text.splitlines())


def test_the_highest_ranked_candidate_is_set_as_target() -> None:
    outcome = decide(body('best = sorted(candidate_members, key = lambda m: int(m.config["rank"]))[-1]\n'
                          'log_warn("chose", best.server_name)\nset_target(best.server_name)'))
    assert outcome.target == "node-4"
    assert outcome.log == [("warn", "chose node-4")]


def test_candidates_are_passed_in_the_order_given() -> None:
    outcome = decide(body('set_target(candidate_members[0].server_name)'), candidates=["node-3", "node-1"])
    assert outcome.target == "node-3"


def test_a_panic_of_the_interpreter_is_a_failed_request_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """The library raises its panics and out-of-memory errors as BaseExceptions out of the call."""

    class Panicking:
        def call_with(self, *args: Any, **kwargs: Any) -> Any:
            raise Crash("interpreter gave up")

    monkeypatch.setattr(runtime, "_entry_module", lambda program, members: Panicking())
    with pytest.raises(runtime.ScriptletFailed, match=r"interpreter stopped the script \(Crash: interpreter gave up"):
        decide(body("pass"))


def test_a_base_exception_raised_inside_a_function_the_script_calls_fails_the_request() -> None:
    with pytest.raises(runtime.ScriptletFailed, match="Crash: interpreter gave up"):
        decide(body('get_project("crash")'))


def test_the_deadline_is_a_setting() -> None:
    with pytest.raises(runtime.ScriptletFailed, match="deadline of 20 ms"):
        decide(body("for i in range(100000000):\n    pass"), timeout=0.02)


def test_functions_cannot_be_called_outside_a_placement() -> None:
    program = runtime.compile_program(body("pass"))
    assert program.module is not None
    with pytest.raises(runtime._HostError):
        runtime._BINDINGS["set_target"]("x")


def test_member_structs_are_built_once_per_set_of_nodes() -> None:
    program = runtime.compile_program(body("pass"))
    members = tuple(MEMBERS)
    assert runtime._members_module(members) is runtime._members_module(tuple(MEMBERS))
    assert runtime._entry_module(program, members) is runtime._entry_module(program, tuple(MEMBERS))
    assert runtime._members_module(members[:2]) is not runtime._members_module(members)


def test_concurrent_calls_each_see_their_own_world() -> None:
    program = runtime.compile_program(body('p = get_project("x")\n'
                                           'set_target(candidate_members[int(p.name)].server_name)'))
    results: dict[int, str | None] = {}

    def run(index: int) -> None:
        for _ in range(50):
            outcome = runtime.decide(program, {"name": "i"}, MEMBERS, NAMES, FakeWorld(str(index)),
                                     instance_resources={})
            if outcome.target != f"node-{index}":
                results[index] = outcome.target
                return
        results[index] = f"node-{index}"

    threads = [threading.Thread(target=run, args=(index,)) for index in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {index: f"node-{index}" for index in range(5)}


def test_compile_errors_carry_line_and_column() -> None:
    with pytest.raises(InvalidScriptlet) as caught:
        runtime.compile_program(body("x = 1\nreturn unknown_name"))
    assert (caught.value.line, caught.value.column) == (3, 12)


def test_a_long_loop_at_the_top_level_is_refused_at_the_compile_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("blazar_lite.scriptlet.program.COMPILE_TIMEOUT", 0.05)
    with pytest.raises(InvalidScriptlet, match="at line 1, column .*: its top-level statements ran past the limit"):
        runtime.compile_program("x = [i for i in range(1000000000)]\n"
                                "def instance_placement(request, candidate_members):\n    pass\n")
