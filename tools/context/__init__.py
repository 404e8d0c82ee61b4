"""Context toolset: who am I (agent.py), plans and platform capabilities."""
