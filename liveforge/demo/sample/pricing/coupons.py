"""Coupon codes such as "SAVE15" (15 percent off) or "MINUS500" (500 cents off)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Coupon:
    """A percentage or a fixed amount taken off the cart total."""

    code: str
    percent: int = 0
    cents: int = 0

    def apply(self, total_cents: int) -> int:
        """The total after this coupon; never below zero."""
        reduced = total_cents - round(total_cents * self.percent / 100) - self.cents
        return max(reduced, 0)


def parse_coupon(code: str) -> Coupon:
    """Read a coupon code; ValueError for codes that are neither SAVE<n> nor MINUS<n>."""
    upper = code.strip().upper()
    for prefix, field in (("SAVE", "percent"), ("MINUS", "cents")):
        number = upper.removeprefix(prefix)
        if number != upper and number.isdigit():
            return Coupon(upper, **{field: int(number)})
    raise ValueError(f"unknown coupon code {code!r}; expected SAVE<percent> or MINUS<cents>")
