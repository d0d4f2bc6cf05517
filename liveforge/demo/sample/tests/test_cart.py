"""The cart's documented pricing rules."""

from pricing import Cart, Line, parse_coupon


def test_small_line_pays_full_price():
    """Below the bulk quantity a line costs unit price times quantity."""
    assert Line("pen", 150, 3).subtotal() == 450


def test_bulk_discount_starts_at_ten_units():
    """A line of exactly BULK_QUANTITY units already gets the bulk discount."""
    assert Line("pen", 100, 10).subtotal() == 900


def test_bulk_discount_above_ten_units():
    """Larger lines get the bulk discount too."""
    assert Line("pen", 100, 20).subtotal() == 1800


def test_cart_total_applies_coupon_after_line_discounts():
    """The coupon is taken off the sum of discounted lines."""
    cart = Cart(coupon=parse_coupon("save10"))
    cart.add("pen", 100, 10)
    cart.add("pad", 250, 2)
    assert cart.total() == round((900 + 500) * 0.9)


def test_coupon_never_makes_total_negative():
    """A fixed-amount coupon larger than the total gives zero."""
    cart = Cart(coupon=parse_coupon("MINUS5000"))
    cart.add("pen", 100, 1)
    assert cart.total() == 0
