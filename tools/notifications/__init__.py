"""Notifications toolset: routes and the notify service other areas call."""
