"""The Placement-style inventory: providers, classes, inventories, traits, aggregates, allocations."""
