"""The inventory as other domains see it: one interface, an embedded implementation on our tables.

Hosts, leases and instances talk to Placement only through `PlacementBackend`, so a deployment can
later point them at a remote Placement service (an implementation on keystoneauth1) without
changing them. Every method runs inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from blazar_lite.placement import (
    aggregates,
    allocations,
    candidates,
    class_inventory,
    inventories,
    providers,
    resource_classes,
    traits,
    usages,
)
from blazar_lite.placement.class_inventory import ClassInventory
from blazar_lite.placement.models import ResourceProvider
from blazar_lite.placement.providers import ProviderView
from blazar_lite.placement.versions import MAX_VERSION

Resources = Mapping[str, int]


class PlacementBackend(Protocol):
    def ensure_provider(self, name: str, uuid: str | None = None,
                        parent_provider_uuid: str | None = None) -> ProviderView:
        """The provider named `name`, created when it does not exist yet (adopted when it does)."""

    def provider(self, uuid: str) -> ProviderView: ...

    def provider_by_name(self, name: str) -> ProviderView | None: ...

    def delete_provider(self, uuid: str) -> None: ...

    def set_inventories(self, provider_uuid: str, inventory: Mapping[str, Mapping[str, Any]]) -> None:
        """Make the provider's inventory exactly `inventory` ({class: {total, ...}})."""

    def inventories(self, provider_uuid: str) -> dict[str, dict[str, Any]]: ...

    def class_inventory(self, provider_uuid: str, resource_class: str) -> ClassInventory:
        """The provider's inventory of one class, the units of it in use and the provider's
        generation, read together so that `set_class_inventory` can change it."""
        ...

    def set_class_inventory(self, current: ClassInventory, fields: Mapping[str, Any] | None) -> None:
        """Make the inventory of `current`'s class exactly `fields` (None: none), the provider's
        other classes untouched; ConcurrentUpdate when the provider changed since `current` was read."""

    def ensure_resource_class(self, name: str) -> bool: ...

    def delete_resource_class(self, name: str) -> None: ...

    def set_traits(self, provider_uuid: str, names: list[str]) -> None: ...

    def set_aggregates(self, provider_uuid: str, aggregate_uuids: list[str]) -> None: ...

    def aggregates(self, provider_uuid: str) -> list[str]: ...

    def aggregate_members(self, aggregate_uuids: list[str]) -> dict[str, list[str]]:
        """The uuids of the providers in each of these aggregates (an empty list for one without)."""
        ...

    def labels(self, provider_uuids: list[str]) -> dict[str, tuple[list[str], list[str]]]:
        """(aggregate uuids, trait names) of each of these providers, read together."""
        ...

    def allocate(self, consumer_uuid: str, allocation: Mapping[str, Resources], project_id: str,
                 user_id: str, consumer_type: str | None = None) -> None:
        """Make `allocation` ({provider uuid: {class: amount}}) the consumer's whole holding;
        409 when it does not fit."""

    def release(self, consumer_uuid: str) -> None:
        """Remove whatever the consumer holds (nothing held is not an error)."""

    def usages(self, provider_uuid: str) -> dict[str, int]: ...

    def room(self, provider_uuids: list[str]) -> dict[str, dict[str, tuple[int, int]]]:
        """{provider uuid: {class: (capacity, used)}} for these providers, in one round trip."""
        ...

    def compute_nodes_outside(self, aggregate_uuids: list[str]) -> list[tuple[str, str, dict[str, tuple[int, int]]]]:
        """(uuid, name, {class: (capacity, used)}) of the root providers with VCPU inventory in
        none of these aggregates, by name."""
        ...

    def roomiest_compute_nodes_outside(self, aggregate_uuids: list[str], needed: Mapping[str, int],
                                       limit: int) -> list[tuple[str, str, int]]:
        """(uuid, name, consumers) of at most `limit` of those nodes with room for `needed` now:
        fewest consumers first, then most free MEMORY_MB, then by name."""
        ...

    def consumer_counts(self, provider_uuids: list[str]) -> dict[str, int]:
        """How many consumers hold allocations on each provider (absent: none)."""
        ...

    def allocation_candidates(self, query: Mapping[str, list[str]]) -> candidates.CandidatesResult:
        """Candidates for a request written as Placement's query parameters."""


class EmbeddedPlacement:
    """PlacementBackend on this service's own tables, inside the given session's transaction."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def ensure_provider(self, name: str, uuid: str | None = None,
                        parent_provider_uuid: str | None = None) -> ProviderView:
        existing = self.provider_by_name(name)
        if existing is not None:
            return existing
        return providers.create_provider(self.session, name, uuid, parent_provider_uuid)

    def provider(self, uuid: str) -> ProviderView:
        return providers.show_provider(self.session, uuid)

    def provider_by_name(self, name: str) -> ProviderView | None:
        uuid = self.session.scalar(select(ResourceProvider.uuid).where(ResourceProvider.name == name))
        return None if uuid is None else providers.show_provider(self.session, uuid)

    def delete_provider(self, uuid: str) -> None:
        providers.delete_provider(self.session, uuid)

    def set_inventories(self, provider_uuid: str, inventory: Mapping[str, Mapping[str, Any]]) -> None:
        inventories.replace_inventories(self.session, provider_uuid, None, inventory)

    def inventories(self, provider_uuid: str) -> dict[str, dict[str, Any]]:
        return inventories.get_inventories(self.session, provider_uuid)[1]

    def class_inventory(self, provider_uuid: str, resource_class: str) -> ClassInventory:
        return class_inventory.read_class_inventory(self.session, provider_uuid, resource_class)

    def set_class_inventory(self, current: ClassInventory, fields: Mapping[str, Any] | None) -> None:
        class_inventory.write_class_inventory(self.session, current, fields)

    def ensure_resource_class(self, name: str) -> bool:
        return resource_classes.ensure_resource_class(self.session, name)

    def delete_resource_class(self, name: str) -> None:
        resource_classes.delete_resource_class(self.session, name)

    def set_traits(self, provider_uuid: str, names: list[str]) -> None:
        traits.ensure_traits(self.session, names)
        traits.set_provider_traits(self.session, provider_uuid, None, names)

    def set_aggregates(self, provider_uuid: str, aggregate_uuids: list[str]) -> None:
        aggregates.set_provider_aggregates(self.session, provider_uuid, aggregate_uuids)

    def aggregates(self, provider_uuid: str) -> list[str]:
        return aggregates.get_provider_aggregates(self.session, provider_uuid)[1]

    def aggregate_members(self, aggregate_uuids: list[str]) -> dict[str, list[str]]:
        return aggregates.aggregate_members(self.session, aggregate_uuids)

    def labels(self, provider_uuids: list[str]) -> dict[str, tuple[list[str], list[str]]]:
        return providers.labels_of(self.session, provider_uuids)

    def allocate(self, consumer_uuid: str, allocation: Mapping[str, Resources], project_id: str,
                 user_id: str, consumer_type: str | None = None) -> None:
        allocations.replace_consumer_allocations(self.session, consumer_uuid, allocation, project_id, user_id,
                                                 consumer_type=consumer_type)

    def release(self, consumer_uuid: str) -> None:
        if allocations.get_consumer_allocations(self.session, consumer_uuid).allocations:
            allocations.delete_consumer_allocations(self.session, consumer_uuid)

    def usages(self, provider_uuid: str) -> dict[str, int]:
        return usages.provider_usages(self.session, provider_uuid)

    def room(self, provider_uuids: list[str]) -> dict[str, dict[str, tuple[int, int]]]:
        return usages.provider_room(self.session, provider_uuids)

    def compute_nodes_outside(self, aggregate_uuids: list[str]) -> list[tuple[str, str, dict[str, tuple[int, int]]]]:
        return usages.roots_with_class_outside(self.session, "VCPU", aggregate_uuids)

    def roomiest_compute_nodes_outside(self, aggregate_uuids: list[str], needed: Mapping[str, int],
                                       limit: int) -> list[tuple[str, str, int]]:
        return usages.roomiest_roots_outside(self.session, "VCPU", aggregate_uuids, needed, limit)

    def consumer_counts(self, provider_uuids: list[str]) -> dict[str, int]:
        return usages.consumer_counts(self.session, provider_uuids)

    def allocation_candidates(self, query: Mapping[str, list[str]]) -> candidates.CandidatesResult:
        request = candidates.parse_candidates_request(dict(query), MAX_VERSION[1])
        return candidates.find_allocation_candidates(self.session, request)
