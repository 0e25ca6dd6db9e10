"""Deployments: shapes of instances, each an instance template with scaling bounds, that a
governor scales (LXD's deployments design)."""
