"""A Python client for blazar-lite's /v1 API, on keystoneauth1 sessions (noauth, token, Keystone).

    client = Client(Credentials(endpoint="http://127.0.0.1:1234/v1"))
    client.hosts.create("compute-1", vcpus=16, memory_mb=65536, local_gb=500, gpu="a100")
    client.flavors.list()
    client.leases.create("lease-1", "now", "2030-01-02 00:00",
                         [{"resource_type": "physical:host", "min": 1, "max": 1}])
    client.instances.create("web-1", vcpus=2, memory_mb=2048, disk_gb=20)
    client.deployments.create("shop")
    client.shapes.create("shop", "web", instance_template={"vcpus": 1, "memory_mb": 512},
                         scaling_minimum=1, scaling_maximum=4)
    client.shape_instances.launch("shop", "web", "web-1")
    client.webhooks.create("https://ops.example.org/hook", events=["lease.before_end", "lease.ended"])
    client.leases.history("lease-1")

A governor holding a deployment key's private key calls the shape instance routes with tokens it
signs, no Keystone login needed:

    key = load_governor_key("governor.key", "gov")
    GovernorClient(key, "shop", "http://127.0.0.1:1234/v1").shape_instances.launch("shop", "web", "web-2")

Every failed request raises ClientError, whose `message` is the service's own.
"""

from __future__ import annotations

from blazar_lite.client.availability import AvailabilityClient
from blazar_lite.client.deployment_keys import DeploymentKeysClient
from blazar_lite.client.deployments import DeploymentsClient, ShapeInstancesClient, ShapesClient
from blazar_lite.client.filters import FiltersClient
from blazar_lite.client.flavors import FlavorsClient
from blazar_lite.client.governor import GovernorClient, GovernorKey, load_governor_key
from blazar_lite.client.hosts import HostsClient
from blazar_lite.client.http import ClientError, Credentials, V1Client, make_session
from blazar_lite.client.instances import InstancesClient
from blazar_lite.client.leases import LeasesClient
from blazar_lite.client.server_config import ServerConfigClient
from blazar_lite.client.webhooks import WebhooksClient


class Client:
    """The service's resources, one manager each, sharing one authenticated session."""

    def __init__(self, credentials: Credentials | None = None, *, timeout: float = 30.0) -> None:
        session, endpoint_filter = make_session(credentials or Credentials(), timeout)
        self.api = V1Client(session, endpoint_filter)
        self.hosts = HostsClient(self.api)
        self.flavors = FlavorsClient(self.api)
        self.leases = LeasesClient(self.api)
        self.instances = InstancesClient(self.api)
        self.filters = FiltersClient(self.api)
        self.config = ServerConfigClient(self.api)
        self.deployments = DeploymentsClient(self.api)
        self.shapes = ShapesClient(self.api)
        self.deployment_keys = DeploymentKeysClient(self.api)
        self.shape_instances = ShapeInstancesClient(self.api)
        self.webhooks = WebhooksClient(self.api)
        self.availability = AvailabilityClient(self.api)


__all__ = ["AvailabilityClient", "Client", "ClientError", "Credentials", "DeploymentKeysClient", "DeploymentsClient",
           "FiltersClient", "FlavorsClient", "GovernorClient", "GovernorKey", "HostsClient", "InstancesClient",
           "LeasesClient", "ServerConfigClient", "ShapeInstancesClient", "ShapesClient", "V1Client", "WebhooksClient",
           "load_governor_key", "make_session"]
