"""Who is calling (noauth or Keystone) and what they may do (policy)."""

from blazar_lite.auth.context import RequestContext

__all__ = ["RequestContext"]
