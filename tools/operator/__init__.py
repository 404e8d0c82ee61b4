"""The operator CLI back end (workspaces, brands, keys, sandbox accounts, demo seed). It sits above the
areas: the CLI and test fixtures call it; no endpoint does."""
