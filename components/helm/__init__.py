"""Helm add-ons: one generic release component, the pinned chart table, one module per chart."""
