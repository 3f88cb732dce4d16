"""The units of prof's report columns and a value in one of them as a person reads it.

prof's report JSON names each column's unit (docs/prof.md §3, "JSON"): `UNITS` is that
vocabulary. `format_quantity` is C++'s `format_quantity` (prof/report_format.cpp) in Python, digit
for digit, so the HTML page reads as `pyprof prof`'s text reports do; tests/format_quantity.json
holds the values and the strings both are tested against (prof/reports_test.cpp,
tests/test_report_json.py).
"""

from __future__ import annotations

import math

# Each unit a report column can have: what its raw values are.
UNITS = {
    "text": "not a quantity",
    "count": "a count",
    "id": "an integer identifier (step, rank, seq)",
    "ns": "nanoseconds",
    "FLOPs": "floating-point operations (a multiply-add is 2)",
    "bytes": "bytes",
    "TFLOP/s": "10^12 FLOPs per second",
    "GB/s": "10^9 bytes per second",
    "FLOP/s": "FLOPs per second",
    "B/s": "bytes per second",
    "ratio": "a plain number (FLOP/Byte, p, R2)",
    "%": "percent",
    "per-row": "each row's own: its `unit` key",
}
# Units whose values are numbers (JSON numbers, numeric DataFrame columns).
NUMERIC_UNITS = frozenset(UNITS) - {"text", "per-row"}

_PREFIXED = {
    "ns": ("ns", "µs", "ms", "s"),
    "FLOPs": ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"),
    "bytes": ("B", "kB", "MB", "GB", "TB", "PB", "EB"),
}
_FLOP_RATES = ("FLOP/s", "kFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", "EFLOP/s")
_BYTE_RATES = ("B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s", "EB/s")


def _round(x: float) -> float:
    """std::round: halves away from zero (Python's round() takes them to even)."""
    a = abs(x)
    whole = math.floor(a)
    if a - whole >= 0.5:  # exact: a double's fractional part is a double
        whole += 1
    return math.copysign(whole, x)


def _with_separators(rounded: float) -> str:
    digits = f"{abs(rounded):.0f}"
    out = ""
    for i, d in enumerate(digits):
        if i > 0 and (len(digits) - i) % 3 == 0:
            out += ","
        out += d
    return "-" + out if rounded < 0 else out


def _round_to_3_digits(v: float) -> float:
    scale = math.pow(10.0, 2 - math.floor(math.log10(v)))
    return _round(v * scale) / scale


def _scaled(value: float, names: tuple[str, ...]) -> str:
    magnitude = abs(value)
    prefix = 0
    rounded = _round(magnitude)
    while prefix + 1 < len(names) and rounded >= 1000:
        magnitude /= 1000
        prefix += 1
        rounded = _round_to_3_digits(magnitude) if magnitude > 0 else 0
    if prefix == 0 or rounded >= 1000:
        number = _with_separators(_round(magnitude))
    else:
        number = f"{rounded:.{0 if rounded >= 100 else 1 if rounded >= 10 else 2}f}"
    negative = value < 0 and any(c not in "0.," for c in number)
    return f"{'-' if negative else ''}{number} {names[prefix]}"


def _g3(value: float) -> str:
    """C's %.3g (fmt's {:.3g}): Python's 'g' agrees except for the exponent's digits, which C
    writes at least two of, as Python does."""
    return f"{value:.3g}"


def format_quantity(value, unit: str) -> str:
    """`value` in `unit` for a person: 3 significant digits with a decimal SI prefix ("845 ns",
    "12.3 µs", "17.3 MFLOP", "850 GB/s"), counts with thousands separators, percentages with one
    decimal; None and NaN "na". A unit that is no quantity (text, id, per-row) gives the value
    as it is."""
    if value is None:
        return "na"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    v = float(value)
    if math.isnan(v):
        return "na"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if unit == "count":
        return _with_separators(_round(v))
    if unit in _PREFIXED:
        return _scaled(v, _PREFIXED[unit])
    # Rates go through TFLOP/s and GB/s, the reports' own rate columns, as in C++: the same
    # arithmetic rounds the same way.
    if unit == "FLOP/s":
        v, unit = v / 1e12, "TFLOP/s"
    elif unit == "B/s":
        v, unit = v / 1e9, "GB/s"
    if unit == "TFLOP/s":
        return _scaled(v * 1e12, _FLOP_RATES)
    if unit == "GB/s":
        return _scaled(v * 1e9, _BYTE_RATES)
    if unit == "ratio":
        return f"{v:.0f}" if abs(v) >= 1000 else _g3(v)
    if unit == "%":
        return f"{v:.1f}"
    return str(value)


def human_header(header: str, unit: str) -> str:
    """A column header as text reports print it (C++'s human_header): the raw number's unit
    goes where each cell names its own ("Total(ns)" -> "Total", "TFLOP/s" -> "FLOP/s")."""
    if unit == "ns":
        return header.replace("(ns)", "", 1).rstrip(" ")
    if unit == "TFLOP/s":
        return header.replace("TFLOP/s", "FLOP/s", 1)
    if unit == "GB/s":
        return header.replace("GB/s", "Bytes/s", 1)
    if unit == "B/s":
        return header.replace("B/s", "bandwidth", 1)
    return header
