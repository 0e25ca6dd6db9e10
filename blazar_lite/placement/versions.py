"""The range of Placement microversions this service speaks (1.0 to 1.39)."""

MIN_VERSION = (1, 0)
MAX_VERSION = (1, 39)
