"""The endpoint framework (endpoint, catalogue, toolsets, tool schemas, links), THE list of areas (areas.py),
one package or module per API area named for its toolset, shared services (services/) and the operator CLI
back end (operator/). docs/architecture.md walks the layout."""
