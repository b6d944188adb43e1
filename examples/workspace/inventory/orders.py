"""Orders: lines of items taken from the stock, and what an order costs."""

from __future__ import annotations

from dataclasses import dataclass

from inventory.rates import VAT_RATE, shipping_fee
from inventory.stock import Stock


@dataclass
class OrderLine:
    """One line of an order: a SKU and how many units of it."""

    sku: str
    units: int


def order_total(stock: Stock, lines: list[OrderLine]) -> float:
    """The price of an order: each line at its unit price, plus VAT and the shipping fee."""
    net = sum(stock.items[line.sku].unit_price * line.units for line in lines)
    return round(net * (1 + VAT_RATE) + shipping_fee(net), 2)
