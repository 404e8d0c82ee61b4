"""Post metrics (issue 34): collected on a decaying cadence from networks that offer them, read over REST, MCP
and the console. `collect` reads, `summary` aggregates, `routes` declares the endpoints."""
