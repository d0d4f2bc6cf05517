"""Shop pricing: carts of line items with a bulk discount and coupon codes."""

from .cart import BULK_DISCOUNT, BULK_QUANTITY, Cart, Line
from .coupons import Coupon, parse_coupon

__all__ = ["BULK_DISCOUNT", "BULK_QUANTITY", "Cart", "Coupon", "Line", "parse_coupon"]
