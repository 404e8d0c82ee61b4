"""The endpoint catalogue (one module per API area, each exporting ENDPOINTS) and the service semantics."""
