"""A shopping cart: line items, a bulk discount per line, and an optional coupon."""

from __future__ import annotations

from dataclasses import dataclass, field

from .coupons import Coupon

BULK_QUANTITY = 10
"""A line of at least this many units gets the bulk discount."""
BULK_DISCOUNT = 0.10
"""The bulk discount, as a fraction of the line's price."""


@dataclass
class Line:
    """One product in the cart: unit price in cents and quantity."""

    sku: str
    unit_cents: int
    quantity: int = 1

    def subtotal(self) -> int:
        """The line's price in cents, with the bulk discount from BULK_QUANTITY units."""
        cents = self.unit_cents * self.quantity
        if self.quantity > BULK_QUANTITY:
            cents -= round(cents * BULK_DISCOUNT)
        return cents


@dataclass
class Cart:
    """Line items and at most one coupon."""

    lines: list[Line] = field(default_factory=list)
    coupon: Coupon | None = None

    def add(self, sku: str, unit_cents: int, quantity: int = 1) -> Line:
        """Add a line and return it."""
        line = Line(sku, unit_cents, quantity)
        self.lines.append(line)
        return line

    def total(self) -> int:
        """What the customer pays, in cents: line subtotals, then the coupon."""
        cents = sum(line.subtotal() for line in self.lines)
        return self.coupon.apply(cents) if self.coupon else cents
