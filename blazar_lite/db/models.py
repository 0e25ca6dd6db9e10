"""Every domain's models, imported so that Base.metadata describes the whole schema."""

from blazar_lite.db.base import Base
from blazar_lite.placement import models as placement_models

__all__ = ["Base", "placement_models"]
