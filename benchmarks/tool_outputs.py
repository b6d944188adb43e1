"""Realistic, deterministic tool outputs for the benchmark scenarios: a repository an agent
explores with `list_dir`, `read_file`, `search` and `run_tests`.

Sizes follow what coding agents see: a directory listing is a few hundred characters, a
source file 2-8 KB, a search 1-2 KB of hits, a test run a few KB with a traceback.
"""

from __future__ import annotations

import hashlib

from warmloop import tool

MODULES = (
    "billing/totals.py",
    "billing/tax.py",
    "billing/discounts.py",
    "billing/currency.py",
    "orders/models.py",
    "orders/service.py",
    "orders/api.py",
    "shipping/rates.py",
    "shipping/zones.py",
    "common/money.py",
    "common/config.py",
    "tests/test_totals.py",
)


def _seed(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def source(path: str) -> str:
    """A plausible Python module, 60-200 numbered lines."""
    seed = _seed(path)
    stem = path.rsplit("/", 1)[-1].removesuffix(".py")
    lines = [f'"""{stem}: part of the order pipeline."""', "", "from decimal import Decimal", ""]
    for n in range(seed % 8 + 3):
        name = f"{stem}_{['total', 'rate', 'apply', 'round', 'convert', 'split'][n % 6]}_{n}"
        lines += [
            f"def {name}(order, region='EU'):",
            f'    """Compute the {stem} {n} for an order in `region`."""',
            "    amount = Decimal(0)",
            "    for line in order.lines:",
            f"        amount += line.price * line.quantity * Decimal('{1 + n / 10:.2f}')",
            f"    if region in {{'EU', 'UK'}} and amount > Decimal('{(seed + n) % 500}'):",
            f"        amount -= amount * Decimal('0.0{n % 9 + 1}')",
            "    return amount.quantize(Decimal('0.01'))",
            "",
        ]
    return "\n".join(f"{i + 1:4d}  {line}" for i, line in enumerate(lines))


def listing(path: str) -> str:
    """`ls -l` of a directory of the repository."""
    prefix = path.strip("/")
    found = [m for m in MODULES if m.startswith(prefix)] or list(MODULES)
    return "\n".join(
        f"-rw-r--r--  1 dev dev {_seed(m) % 9000 + 800:6d} Nov 20 10:{_seed(m) % 60:02d} {m}"
        for m in found
    )


def hits(pattern: str) -> str:
    """grep -n output over the repository."""
    out = []
    for module in MODULES:
        seed = _seed(module + pattern)
        for k in range(seed % 4):
            line = seed % 180 + 7 * k
            out.append(f"{module}:{line}:    amount = round_half_even({pattern}(order), 2)  # {k}")
    return "\n".join(out) or "no matches"


def test_run(target: str) -> str:
    """pytest output with one failure and its traceback."""
    seed = _seed(target)
    passed = seed % 40 + 12
    trace = "\n".join(
        f"billing/totals.py:{40 + i}: in total_{i}\n    amount += line.price * line.quantity"
        for i in range(6)
    )
    return (
        f"============================= test session starts ==============================\n"
        f"collected {passed + 1} items\n\n"
        f"{target} {'.' * passed}F\n\n"
        "=================================== FAILURES ===================================\n"
        f"____________________________ test_total_rounding ____________________________\n"
        f"{trace}\n"
        "E       AssertionError: assert Decimal('104.99') == Decimal('105.00')\n"
        f"=========================== 1 failed, {passed} passed in 0.{seed % 90 + 10}s "
        "===========================\n"
    )


@tool
def list_dir(path: str) -> str:
    """List the files of a directory of the repository."""
    return listing(path)


@tool
def read_file(path: str) -> str:
    """Read a file of the repository; returns numbered lines."""
    return source(path)


@tool
def search(pattern: str) -> str:
    """Search the repository for a regular expression; returns file:line: text hits."""
    return hits(pattern)


@tool
def run_tests(target: str) -> str:
    """Run pytest on a test file or directory and return its output."""
    return test_run(target)


TOOLS = [list_dir, read_file, search, run_tests]
