"""Rewrites only where they pay: prune (placeholders), fold (a summary), and the planner
that decides when, from the provider's cache rules and costs (DESIGN idea 5)."""
