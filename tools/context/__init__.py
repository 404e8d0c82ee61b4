"""Context toolset: who am I (get_context lives with brands), plans and platform capabilities."""
