"""Every domain's models, imported so that Base.metadata describes the whole schema."""

from blazar_lite.db.base import Base
from blazar_lite.deployments import models as deployment_models
from blazar_lite.flavors import models as flavor_models
from blazar_lite.hosts import models as host_models
from blazar_lite.instances import models as instance_models
from blazar_lite.leases import models as lease_models
from blazar_lite.placement import models as placement_models
from blazar_lite.server_config import models as server_config_models
from blazar_lite.webhooks import models as webhook_models

__all__ = ["Base", "deployment_models", "flavor_models", "host_models", "instance_models", "lease_models",
           "placement_models", "server_config_models", "webhook_models"]
