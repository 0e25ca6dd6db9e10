"""Compute hosts handed to blazar-lite for reservations: their providers, the freepool, extra
capabilities and resource properties."""
