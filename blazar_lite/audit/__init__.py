"""Checks that what must hold in the database does: `blazar-lite check`."""
