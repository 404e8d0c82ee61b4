"""Schedules toolset: routes, preflight, rules engine, repair options, receipts and schedule rows."""
