"""Shared services the areas use: auth, signing, fetch (SSRF protection), redaction, provider accounts."""
