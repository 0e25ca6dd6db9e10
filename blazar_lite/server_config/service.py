"""The server configuration: named keys with string values, stored in the database.

Every key is declared here with a check of its value; an unknown key or a bad value is a 400
and nothing is stored. Each change moves the revision row, which is how other processes learn
that what they cached is stale (cache.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from blazar_lite.exceptions import BadRequest
from blazar_lite.scriptlet import runtime
from blazar_lite.scriptlet.program import CONFIG_KEY as SCRIPTLET_KEY
from blazar_lite.server_config.models import ConfigEntry, ConfigRevision


@dataclass(frozen=True)
class Key:
    name: str
    description: str
    # Raises BadRequest (or a subclass) for a value the key cannot take.
    check: Callable[[str], None]


def _check_scriptlet(value: str) -> None:
    runtime.compile_program(value)


KEYS: dict[str, Key] = {key.name: key for key in (
    Key(SCRIPTLET_KEY, "The instance placement scriptlet (Starlark): defines instance_placement(request, "
                       "candidate_members); see docs on the scriptlet. Empty: no scriptlet.", _check_scriptlet),
)}


def _values(body: object, *, allow_null: bool) -> dict[str, str | None]:
    if not isinstance(body, Mapping) or not isinstance(body.get("config"), Mapping):
        raise BadRequest('The body must be {"config": {"<key>": "<value>", ...}}.')
    extra = sorted(set(body) - {"config"})
    if extra:
        raise BadRequest(f"Unknown field(s) in the body: {', '.join(extra)}; send only config.")
    values: dict[str, str | None] = {}
    for key, value in body["config"].items():
        if key not in KEYS:
            raise BadRequest(f"Unknown server config key {key!r}; known keys: {', '.join(sorted(KEYS))}.")
        if value is None and allow_null:
            values[key] = None
        elif not isinstance(value, str):
            raise BadRequest(f"Server config key {key} takes a string, not {type(value).__name__}"
                             f"{'; send null or an empty string to unset it' if allow_null else ''}.")
        else:
            values[key] = value
    return values


def get_config(session: Session) -> dict[str, str]:
    return dict(session.execute(select(ConfigEntry.key, ConfigEntry.value).order_by(ConfigEntry.key)).all())


def revision(session: Session) -> int:
    return int(session.scalar(select(ConfigRevision.revision).where(ConfigRevision.id == 1)) or 0)


def _advance_revision(session: Session) -> None:
    """Move the revision, first of all: that takes its row lock, so concurrent writers apply one
    after the other. The row is made again if someone removed it (the migration creates it)."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    session.execute(insert(ConfigRevision).values(id=1, revision=1)
                    .on_conflict_do_update(index_elements=["id"], set_={"revision": ConfigRevision.revision + 1}))


def _store(session: Session, wanted: Mapping[str, str]) -> dict[str, str]:
    """Make the stored configuration exactly `wanted` (empty values are unset keys)."""
    wanted = {key: value for key, value in wanted.items() if value != ""}
    for key, value in wanted.items():
        KEYS[key].check(value)
    _advance_revision(session)
    current = {row.key: row for row in session.scalars(select(ConfigEntry))}
    session.execute(delete(ConfigEntry).where(ConfigEntry.key.not_in(list(wanted))))
    for key, value in wanted.items():
        if key in current:
            current[key].value = value
        else:
            session.add(ConfigEntry(key=key, value=value))
    session.flush()
    return get_config(session)


def replace_config(session: Session, body: object) -> dict[str, str]:
    """PUT: the body's config becomes the whole configuration; keys left out are unset."""
    values = _values(body, allow_null=False)
    return _store(session, {key: value or "" for key, value in values.items()})


def update_config(session: Session, body: object) -> dict[str, str]:
    """PATCH: the body's keys are set (null or "" unsets one); other keys keep their values."""
    values = _values(body, allow_null=True)
    merged: dict[str, Any] = get_config(session)
    merged.update({key: value or "" for key, value in values.items()})
    return _store(session, merged)
