"""Choosing a node for an instance: candidates are filtered, then one chooser decides — a
built-in policy, an external Ganeti IAllocator program, or the placement scriptlet."""
