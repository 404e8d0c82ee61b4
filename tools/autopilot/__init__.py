"""Autopilot toolset: weekly plan routes and the topic generator."""
