"""Tax and shipping rates for orders."""

VAT_RATE = 0.21
FREE_SHIPPING_OVER = 50.0
SHIPPING_FEE = 4.95


def shipping_fee(net: float) -> float:
    """The shipping fee for an order worth `net` before VAT: free from FREE_SHIPPING_OVER."""
    return 0.0 if net >= FREE_SHIPPING_OVER else SHIPPING_FEE
