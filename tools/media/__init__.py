"""Media toolset: routes, uploads, imports, processing, probe, transform, repair and derivatives."""
