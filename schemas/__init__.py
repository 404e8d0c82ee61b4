"""Pydantic models and static data: envelopes, errors, scopes, resources, request bodies, platform rules."""
