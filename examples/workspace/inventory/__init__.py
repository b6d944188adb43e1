"""A tiny stock-keeping module (an example workspace for warmloop agents)."""

from inventory.orders import OrderLine, order_total
from inventory.stock import Item, Stock, load_csv

__all__ = ["Item", "OrderLine", "Stock", "load_csv", "order_total"]
