"""The `iallocator:<name>` allocator: an external program speaking Ganeti's IAllocator protocol
(version 2) chooses the node.

The program is found by name in a search path, as Ganeti does, and run as `program [options]
<message file>` without a shell and with a timeout; it prints its answer on standard output.
Building the message (iallocator_message), checking the answer (iallocator_answer) and running
the program (here) are separate steps, so multi-allocate and node-evacuate requests can be sent
with the same pieces that `choose_with_iallocator` uses for one instance.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from blazar_lite.allocators.iallocator_answer import Answer, Move, parse_answer, quote
from blazar_lite.allocators.iallocator_message import (
    Message,
    barred_nodes,
    build_message,
    message_for,
    read_message,
)
from blazar_lite.allocators.iallocator_request import (
    Allocate,
    AllocateSecondary,
    ChangeGroup,
    MultiAllocate,
    NodeEvacuate,
    Relocate,
    Request,
)
from blazar_lite.allocators.snapshot import Decision, PlacementRequest, Rejection, Snapshot
from blazar_lite.exceptions import AllocatorFailed, BadRequest

__all__ = [
    "Allocate", "AllocateSecondary", "Answer", "ChangeGroup", "Message", "Move", "MultiAllocate",
    "NodeEvacuate", "Relocate", "Request", "barred_nodes", "build_message", "choose_with_iallocator",
    "default_search_path", "find_program", "message_for", "parse_answer", "read_message", "run_program",
]

DEFAULT_TIMEOUT = 30.0
# Where Debian's ganeti-htools puts hail, and Ganeti's own default search path.
GANETI_DIRECTORY = "/usr/lib/ganeti/iallocators"
# The example allocators beside the source (present in a source checkout).
SOURCE_DIRECTORY = Path(__file__).resolve().parents[2] / "etc" / "iallocators"
# After a kill, how long to wait for the program's output pipes to close.
REAP_SECONDS = 5.0


def default_search_path(data_dir: str) -> tuple[str, ...]:
    """Ganeti's directory, then `<data_dir>/iallocators`, then the examples of the source tree."""
    return GANETI_DIRECTORY, os.path.join(data_dir, "iallocators"), str(SOURCE_DIRECTORY)


def find_program(name: str, search_path: Iterable[str]) -> Path:
    """The first executable file called `name` in the search path's directories.

    A name that could reach outside them (a path, `..`) is a BadRequest; a name found nowhere is
    an AllocatorFailed that lists where it was looked for."""
    if not name or "/" in name or ".." in name or "\0" in name:
        raise BadRequest(f"iallocator name {name!r} must be a plain program name, without '/' or '..'")
    directories = list(search_path)
    for directory in directories:
        candidate = Path(directory) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise AllocatorFailed(f"no executable iallocator {name!r} in {', '.join(directories) or 'an empty search path'}")


def run_program(program: Path, message: Mapping[str, Any], *, timeout: float = DEFAULT_TIMEOUT,
                options: Sequence[str] = ()) -> str:
    """What `program` prints on standard output for the JSON `message`, which it reads from a
    temporary file. A failure to start, a non-zero exit (quoting standard error, else standard
    output) or no exit within `timeout` seconds (the program is killed) is an AllocatorFailed."""
    for option in options:
        # The protocol passes options as --key=value; anything else could be taken for the file.
        if not option.startswith("--"):
            raise BadRequest(f"iallocator option {option!r} must have the form --key=value")
    with tempfile.TemporaryDirectory(prefix="blazar-lite-iallocator-") as directory:
        path = Path(directory) / "request.json"
        path.write_text(json.dumps(message), encoding="utf-8")
        try:
            # A session of its own, so that a timeout kills whatever the program started too.
            process = subprocess.Popen([str(program), *options, str(path)], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise AllocatorFailed(f"iallocator {program.name!r} could not be started: {exc.strerror or exc}") from None
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise AllocatorFailed(f"iallocator {program.name!r} did not answer within {timeout:g} s "
                                  "and was stopped") from None
    if process.returncode != 0:
        said = quote(stderr.decode(errors="replace"), tail=True) or quote(stdout.decode(errors="replace"))
        status = (f"was killed by signal {-process.returncode}" if process.returncode < 0
                  else f"exited with status {process.returncode}")
        raise AllocatorFailed(f"iallocator {program.name!r} {status}: {said or '(no output)'}")
    return stdout.decode(errors="replace")


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    try:
        process.communicate(timeout=REAP_SECONDS)
    except subprocess.TimeoutExpired:
        # Something left the program's session and holds its output open: stop reading it.
        process.kill()
        process.wait()


def choose_with_iallocator(snapshot: Snapshot, request: PlacementRequest, program_name: str, *,
                           search_path: Iterable[str], timeout: float = DEFAULT_TIMEOUT,
                           options: Sequence[str] = ()) -> Decision:
    """The node the IAllocator `program_name` chooses for one instance.

    A refusal (`success: false`) is a Decision without a node whose message is the allocator's
    info and whose rejections say why the barred nodes were not offered. A program that cannot be
    found, fails, times out or answers outside the protocol (a node that does not exist, is
    offline, drained or barred, or the wrong number of nodes) raises AllocatorFailed (409) or, for
    a name that is no program name, BadRequest (400)."""
    message = message_for(snapshot, request)
    program = find_program(program_name, search_path)
    output = run_program(program, message.to_json(), timeout=timeout, options=options)
    answer = parse_answer(output, message, program=program_name)
    if not answer.success:
        barred = barred_nodes(snapshot, request)
        return Decision(None, message=f"iallocator {program_name!r} found no node: {answer.info}",
                        rejections=tuple(Rejection(node, reason) for node, reason in sorted(barred.items())))
    return Decision(answer.nodes[0], message=answer.info)
