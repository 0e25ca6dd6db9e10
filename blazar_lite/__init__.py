"""blazar-lite: reservations and leases for compute capacity."""

__version__ = "0.1.0"
