"""Content toolset: content item routes, drafts, content rules and usage."""
