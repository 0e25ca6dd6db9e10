"""Leases and their reservations: dates, reservation filters, and availability over time."""
