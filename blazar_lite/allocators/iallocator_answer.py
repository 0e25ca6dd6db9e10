"""Answers of Ganeti IAllocator programs, read and checked against the message they answer.

An answer is `{"success": bool, "info": str, "result": ...}` (older allocators say `nodes` for
`result`). `success: false` is a refusal, kept with the allocator's `info`. A successful answer
whose result does not fit the request (the wrong number of nodes, a node the message does not
have, an offline or drained one, an instance nobody asked about) raises `AllocatorFailed`: a
broken allocator must never get to place anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from blazar_lite.allocators.iallocator_message import Message, group_of, read_message
from blazar_lite.allocators.iallocator_request import (
    Allocate,
    AllocateSecondary,
    ChangeGroup,
    MultiAllocate,
    NodeEvacuate,
    Relocate,
)
from blazar_lite.allocators.snapshot import UP
from blazar_lite.exceptions import AllocatorFailed

# How much of an allocator's own words an error quotes.
QUOTE_LIMIT = 500


def quote(text: str, *, tail: bool = False) -> str:
    """`text` stripped and cut to QUOTE_LIMIT characters (its end when `tail`: where errors are)."""
    text = text.strip()
    if len(text) <= QUOTE_LIMIT:
        return text
    return "..." + text[-QUOTE_LIMIT:] if tail else text[:QUOTE_LIMIT] + "..."


@dataclass(frozen=True)
class Move:
    """Where an instance of a multi-instance request goes: its nodes (primary first) and, for
    node-evacuate and change-group, the group they are in."""

    instance: str
    nodes: tuple[str, ...]
    group: str | None = None


@dataclass(frozen=True)
class Answer:
    """A checked answer. `nodes` for allocate, relocate and allocate-secondary; `moves`, `failed`
    ((instance, reason) pairs) and, for node-evacuate and change-group, `jobs` otherwise."""

    success: bool
    info: str
    nodes: tuple[str, ...] = ()
    moves: tuple[Move, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()
    jobs: tuple[Any, ...] = ()


class _Misfit(Exception):
    """The result does not fit the request; the message says how."""


def parse_answer(output: str | bytes, message: Message | Mapping[str, Any], *, program: str) -> Answer:
    """The answer `program` printed for `message` (a Message, or the JSON one it was sent).

    Raises AllocatorFailed, quoting the program's name and its `info`, when the output is not an
    answer or its result does not fit the request."""
    if not isinstance(message, Message):
        message = read_message(message)
    try:
        answer = json.loads(output)
    except ValueError:
        text = output.decode(errors="replace") if isinstance(output, bytes) else output
        raise AllocatorFailed(f"iallocator {program!r} did not answer in JSON: {quote(text)!r}") from None
    if not isinstance(answer, dict) or not isinstance(answer.get("success"), bool):
        raise AllocatorFailed(f"iallocator {program!r} answered without a true/false `success`: "
                              f"{quote(json.dumps(answer))}")
    info = answer.get("info", "")
    if not isinstance(info, str):
        info = json.dumps(info)
    if not answer["success"]:
        return Answer(False, info)
    result = answer["result"] if "result" in answer else answer.get("nodes")
    try:
        return _read_result(result, message, info)
    except _Misfit as misfit:
        raise AllocatorFailed(f"iallocator {program!r} answered a result that does not fit the "
                              f"{message.request.type} request: {misfit}; its info: {quote(info)!r}") from None


def _read_result(result: Any, message: Message, info: str) -> Answer:
    request = message.request
    if isinstance(request, Allocate | Relocate):
        barred = request.relocate_from if isinstance(request, Relocate) else ()
        allowed = request.restrict_to_nodes if isinstance(request, Allocate) else None
        nodes = _nodes(result, message, "result", request.required_nodes, barred, allowed)
        return Answer(True, info, nodes=nodes)
    if isinstance(request, AllocateSecondary):
        # Ganeti's reference allocator answers one node name rather than a list.
        nodes = _nodes([result] if isinstance(result, str) else result, message, "result", 1,
                       message.instances().get(request.name, ()))
        return Answer(True, info, nodes=nodes)
    if isinstance(request, MultiAllocate):
        placed, failed = _items(result, 2)
        required = {allocate.name: allocate for allocate in request.instances}
        moves = []
        for index, item in enumerate(_items(placed)):
            name, nodes = _items(item, 2, f"result[0][{index}]")
            allocate = _asked(name, required, f"result[0][{index}][0]")
            moves.append(Move(name, _nodes(nodes, message, f"result[0][{index}][1]", allocate.required_nodes,
                                           (), allocate.restrict_to_nodes)))
        answer = Answer(True, info, moves=tuple(moves), failed=_failed(failed, required))
    elif isinstance(request, NodeEvacuate | ChangeGroup):
        moved, failed, jobs = _items(result, 3)
        required = dict.fromkeys(request.instances)
        placements = message.instances()
        moves = []
        for index, item in enumerate(_items(moved)):
            where = f"result[0][{index}]"
            name, group, nodes = _items(item, 3, where)
            _asked(name, required, f"{where}[0]")
            moves.append(_move(message, name, group, nodes, placements.get(name, ()), where))
        answer = Answer(True, info, moves=tuple(moves), failed=_failed(failed, required), jobs=tuple(_items(jobs)))
    else:
        raise _Misfit(f"{request.type} answers are not understood")
    answered = [move.instance for move in answer.moves] + [name for name, _ in answer.failed]
    if len(set(answered)) != len(answered):
        raise _Misfit(f"an instance is answered twice: {answered}")
    if missing := [name for name in required if name not in answered]:
        raise _Misfit(f"no answer for {', '.join(missing)}")
    return answer


def _items(value: Any, length: int | None = None, where: str = "result") -> list[Any]:
    if not isinstance(value, list) or (length is not None and len(value) != length):
        shape = "a list" if length is None else f"a list of {length}"
        raise _Misfit(f"{where} must be {shape}, not {quote(json.dumps(value))}")
    return value


def _asked(name: Any, required: Mapping[str, Any], where: str) -> Any:
    if not isinstance(name, str) or name not in required:
        raise _Misfit(f"{where} names {name!r}, which the request did not ask about")
    return required[name]


def _nodes(value: Any, message: Message, where: str, length: int | None, barred: Sequence[str] = (),
           allowed: Sequence[str] | None = None, kept: Sequence[str] = ()) -> tuple[str, ...]:
    """Distinct nodes of the message that take new work; `kept` ones (an instance's current
    nodes) may stay whatever their state."""
    nodes = _items(value, length, where)
    if length is None and not nodes:
        raise _Misfit(f"{where} names no node")
    if len(set(map(str, nodes))) != len(nodes):
        raise _Misfit(f"{where} names a node twice: {nodes}")
    for node_name in nodes:
        node = message.snapshot.node(node_name) if isinstance(node_name, str) else None
        if node is None:
            raise _Misfit(f"{where} names {node_name!r}, which is not a node of the message")
        if node_name in kept:
            continue
        if node.status != UP:
            raise _Misfit(f"{where} names {node_name!r}, which is {'offline' if node.offline else 'drained'}")
        if node_name in barred:
            raise _Misfit(f"{where} names {node_name!r}, which the instance is to leave")
        if allowed is not None and node_name not in allowed:
            raise _Misfit(f"{where} names {node_name!r}, outside the nodes the request is restricted to")
    return tuple(nodes)


def _move(message: Message, name: str, group: Any, nodes: Any, current: tuple[str, ...], where: str) -> Move:
    # The group may be named by name (as Ganeti's reference allocator does) or by uuid.
    uuids = [uuid_ for uuid_, group_name in message.groups.items() if group in (uuid_, group_name)]
    if not isinstance(group, str) or not uuids:
        raise _Misfit(f"{where}[1] names {group!r}, which is not a node group of the message")
    chosen = _nodes(nodes, message, f"{where}[2]", None, kept=current)
    outside = [node for node in chosen if group_of(message.snapshot.node(node), message.groups) not in uuids]
    if outside:
        raise _Misfit(f"{where}[2] names {', '.join(outside)}, outside group {group!r}")
    return Move(name, chosen, group)


def _failed(value: Any, required: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    # Failures come as names or as [name, reason] pairs, depending on the allocator.
    failed = []
    for index, item in enumerate(_items(value, None, "the failed list")):
        name, reason = (item, "") if isinstance(item, str) else _items(item, 2, f"failed[{index}]")
        _asked(name, required, f"failed[{index}]")
        failed.append((name, reason if isinstance(reason, str) else json.dumps(reason)))
    return tuple(failed)
