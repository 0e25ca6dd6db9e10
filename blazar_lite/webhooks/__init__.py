"""Webhooks: events POSTed to receivers outside the service, signed, and retried until they land."""
