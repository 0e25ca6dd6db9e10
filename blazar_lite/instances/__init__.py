"""Instances: Placement consumers, on demand or inside a reservation, real or forthcoming."""
