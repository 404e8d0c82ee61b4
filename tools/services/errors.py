"""Errors shared by the operator layer and the areas it drives (so an area need not import tools.operator)."""

from __future__ import annotations


class OperatorError(ValueError):
    """A refused operator command; the message says what to change."""
