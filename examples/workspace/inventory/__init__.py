"""A tiny stock-keeping module (an example workspace for warmloop agents)."""

from inventory.stock import Item, Stock, load_csv

__all__ = ["Item", "Stock", "load_csv"]
