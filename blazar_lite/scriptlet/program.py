"""Compiling the instance placement scriptlet: a Starlark program that defines
`instance_placement(request, candidate_members)`.

Compiling checks what can be checked without running the program: its syntax, that it loads
nothing, that every global name it uses exists (Starlark resolves names when the module is
evaluated, so an unknown function is caught here, not on the first placement), and that
`instance_placement` is a top-level function taking the two parameters. Each problem is a 400
that gives the line and column.

The compiled program is a frozen module: immutable, so one copy serves every request of a
process. The functions a script calls (set_target, get_cluster_member_state, ...) are bound
once, at compile time, to dispatchers that find the request being placed through a context
variable (runtime.py); nothing in the module belongs to a single request.
"""

from __future__ import annotations

import ast
import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import starlark

from blazar_lite.exceptions import BadRequest

ENTRY = "instance_placement"
FILENAME = "scriptlet"
CONFIG_KEY = "instances.placement.scriptlet"

# Functions the script calls whose answers are structures: the host side returns plain values
# and these Starlark wrappers give them attribute access (`state.instance_count`), as LXD's are.
PRELUDE = """
def get_cluster_member_resources(name):
    return struct(**_host_member_resources(name))

def get_cluster_member_state(name):
    return struct(**_host_member_state(name))

def get_instance_resources():
    return struct(**_host_instance_resources())

def get_instances(location = None, project = None):
    return [struct(**i) for i in _host_instances(location, project)]

def get_instances_count(location = None, project = None):
    return _host_instances_count(location, project)

def get_cluster_members(group = None):
    return [struct(**m) for m in _host_cluster_members(group)]

def get_project(name):
    return struct(**_host_project(name))

def get_reservations(member_name, start = None, end = None):
    return [struct(**r) for r in _host_reservations(member_name, start, end)]

def get_reserved_capacity(member_name):
    return _host_reserved_capacity(member_name)
"""

# Functions the script calls directly (the host side's own names).
DIRECT_FUNCTIONS = ("log_info", "log_warn", "log_error", "set_target")
# What the prelude wraps.
HOST_FUNCTIONS = ("_host_member_resources", "_host_member_state", "_host_instance_resources", "_host_instances",
                  "_host_instances_count", "_host_cluster_members", "_host_project", "_host_reservations",
                  "_host_reserved_capacity")

# Top-level statements run when the script is compiled (on every config write and trial); they
# only define things, so this is ample, and it stops a loop at the top level from holding the request.
COMPILE_TIMEOUT = 1.0
# Deep enough for any sensible helper functions, shallow enough to stop runaway recursion early.
MAX_CALL_STACK = 64

_POSITION = re.compile(r"-->\s*[^\n]*?:(\d+):(\d+)")


def dialect() -> starlark.Dialect:
    """Standard Starlark without load(): a scriptlet reads nothing but what it is given."""
    chosen = starlark.Dialect.standard()
    chosen.enable_load = False
    return chosen


def globals_() -> starlark.Globals:
    return starlark.Globals.extended_by([starlark.LibraryExtension.StructType, starlark.LibraryExtension.Json])


class InvalidScriptlet(BadRequest):
    """The script cannot be used: the message says where and why."""

    def __init__(self, problem: str, line: int | None = None, column: int | None = None) -> None:
        where = f" at line {line}, column {column}" if line is not None else ""
        super().__init__(f"Invalid instance placement scriptlet{where}: {problem}", line=line, column=column)
        self.problem, self.line, self.column = problem, line, column


def starlark_problem(error: BaseException) -> tuple[str, int | None, int | None]:
    """(first line of the message without its `error: ` prefix, line, column) of a Starlark error."""
    text = str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = next((line for line in lines if line.startswith("error:")), lines[0] if lines else "unknown error")
    first = first.removeprefix("error:").strip()
    found = _POSITION.search(text)
    if found is None:
        return first, None, None
    return first, int(found.group(1)), int(found.group(2))


@dataclass(frozen=True)
class Program:
    """A checked scriptlet, ready to be called from any thread of the process."""

    source: str
    digest: str
    module: starlark.FrozenModule


def digest_of(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def eval_options(deadline: float) -> starlark.EvalOptions:
    """How a script runs, at compile time and when called: stopped once time.monotonic() passes
    `deadline`, and at MAX_CALL_STACK nested calls."""
    return starlark.EvalOptions(check_cancelled=lambda: time.monotonic() > deadline,
                                max_callstack_size=MAX_CALL_STACK)


def compile_program(source: str, bind: Callable[[str], Callable[..., Any]]) -> Program:
    """Check `source` and freeze it into a Program; InvalidScriptlet says what to fix.

    `bind(name)` gives the host function the script's `name` calls (runtime.py's dispatchers).
    """
    if not isinstance(source, str) or not source.strip():
        raise InvalidScriptlet(f"the script is empty; define {ENTRY}(request, candidate_members).")
    try:
        parsed = starlark.parse(FILENAME, source, dialect())
    except starlark.StarlarkError as exc:
        raise InvalidScriptlet(*starlark_problem(exc)) from None
    module = starlark.Module()
    for name in (*DIRECT_FUNCTIONS, *HOST_FUNCTIONS):
        module.add_callable(name, bind(name))
    try:
        starlark.eval(module, starlark.parse("prelude", PRELUDE, dialect()), globals_())
        # Top-level statements run here, once: an error in them (or an unknown name anywhere) is
        # a problem of the script, reported with its position.
        deadline = time.monotonic() + COMPILE_TIMEOUT
        starlark.eval_with(eval_options(deadline), module, parsed, globals_())
    except starlark.StarlarkError as exc:
        problem, line, column = starlark_problem(exc)
        if "cancelled" in problem.lower() and time.monotonic() > deadline:
            problem = (f"its top-level statements ran past the limit of {COMPILE_TIMEOUT:g} s; "
                       "compute at the top level only what the script needs to define")
        raise InvalidScriptlet(problem, line, column) from None
    _check_entry(source)
    return Program(source=source, digest=digest_of(source), module=module.freeze())


def _check_entry(source: str) -> None:
    """`instance_placement` is a top-level def that can be called with two positional arguments."""
    header = _entry_header(source)
    if header is None:
        raise InvalidScriptlet(f"the script does not define {ENTRY}(request, candidate_members) at its top level.")
    text, line = header
    try:
        function = ast.parse(text + "\n    pass\n").body[0]
    except SyntaxError:
        return  # Starlark accepted it; its own call check is then the judge
    assert isinstance(function, ast.FunctionDef)
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    required_keywords = [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    if required > 2 or required_keywords or (len(positional) < 2 and args.vararg is None):
        names = ", ".join(a.arg for a in positional) or "nothing"
        raise InvalidScriptlet(f"{ENTRY} must take two parameters (request, candidate_members), not ({names}).",
                               line, 1)


def _entry_header(source: str) -> tuple[str, int] | None:
    """The text of the `def instance_placement(...):` header and its line, if there is one."""
    found = re.search(rf"^def\s+{ENTRY}\s*\(", source, re.MULTILINE)
    if found is None:
        return None
    depth = 0
    for index in range(found.end() - 1, len(source)):
        char = source[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == ":" and depth == 0:
            return source[found.start():index + 1], source.count("\n", 0, found.start()) + 1
    return None
