"""Stock levels and the reorder rule."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Item:
    """One stock-keeping unit."""

    sku: str
    name: str
    units: int
    unit_price: float


class Stock:
    """Items by SKU, with a reorder threshold."""

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.items: dict[str, Item] = {}

    def add(self, item: Item) -> None:
        """Add an item, or more units of one already held."""
        held = self.items.get(item.sku)
        if held is None:
            self.items[item.sku] = item
        else:
            held.units += item.units

    def remove(self, sku: str, units: int) -> None:
        """Take units out; refuses to go below zero."""
        held = self.items[sku]
        if units > held.units:
            raise ValueError(f"only {held.units} units of {sku} left")
        held.units -= units

    def to_reorder(self) -> list[Item]:
        """Items at or below the threshold, by SKU."""
        return sorted(
            (i for i in self.items.values() if i.units <= self.threshold),
            key=lambda i: i.sku,
        )

    def value(self) -> float:
        """Total value of the stock."""
        return sum(i.units * i.unit_price for i in self.items.values())


def load_csv(path: Path, threshold: int) -> Stock:
    """A Stock filled from a CSV file with columns sku, name, units, unit_price."""
    stock = Stock(threshold)
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            stock.add(Item(row["sku"], row["name"], int(row["units"]), float(row["unit_price"])))
    return stock
