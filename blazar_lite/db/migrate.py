"""Schema changes through Alembic only, plus the reference data every database needs."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

ALEMBIC_DIR = Path(__file__).resolve().parents[2] / "alembic"


def alembic_config(url: str) -> Config:
    if not (ALEMBIC_DIR / "env.py").is_file():
        raise RuntimeError(f"migrations not found in {ALEMBIC_DIR}: install blazar-lite from its source tree")
    config = Config()
    config.set_main_option("script_location", str(ALEMBIC_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to `revision`, make sure the standard classes and traits exist, and
    refresh the planner's statistics (SQLite)."""
    config = alembic_config(engine.url.render_as_string(hide_password=False))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    from blazar_lite.placement.reference_data import sync_standard_names

    sync_standard_names(engine)
    from blazar_lite.db.maintenance import refresh_statistics

    refresh_statistics(engine)


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
