"""Java's `toString` of doubles, floats and BigDecimals, as Hudi renders such values in text.

Hudi's key generators make record keys and partition paths of them (`HoodieAvroUtils
.getNestedFieldValAsString`), and its schema evolution writes a number arriving for a string column
as its text (`HoodieAvroUtils.rewritePrimaryTypeWithDiffSchemaType`, `oldValue.toString()`).
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal
from fractions import Fraction


def _shortest_decimal(significand: int, exponent: int, lower_closer: bool) -> tuple[int, int]:
    """(digits, power of ten) of the decimal Java (JDK 19+ spec) prints for significand * 2**exponent.

    Among decimals that round to the value, take those of minimal length (or of length 1 or 2 when
    the minimum is 1) and pick the one closest to the value, even digit on a tie.
    """
    scale = Fraction(2) ** (exponent - 2)
    value, high = Fraction(4 * significand) * scale, Fraction(4 * significand + 2) * scale
    low = Fraction(4 * significand - (1 if lower_closer else 2)) * scale
    inclusive = significand % 2 == 0

    def candidates(t: int) -> tuple[int, int]:
        unit = Fraction(10) ** t
        lo, hi = low / unit, high / unit
        d_min, d_max = math.ceil(lo), math.floor(hi)
        if not inclusive:
            d_min += d_min == lo
            d_max -= d_max == hi
        return d_min, d_max

    def closest(t: int, d_min: int, d_max: int) -> int:
        return min(max(round(value / Fraction(10) ** t), d_min), d_max)  # round() is half-even

    # Start above the largest power of ten that fits and walk down to the first one with a candidate.
    t = math.floor(math.log10(high.numerator) - math.log10(high.denominator)) + 2
    d_min, d_max = candidates(t)
    while d_min > d_max:
        t -= 1
        d_min, d_max = candidates(t)
    digits = closest(t, d_min, d_max)
    if digits < 10:
        t -= 1
        digits = closest(t, *candidates(t))
    while digits % 10 == 0:
        digits //= 10
        t += 1
    return digits, t


def _java_float_text(negative: bool, digits: str, power: int) -> str:
    """Java's layout: plain for 1e-3 <= |d| < 1e7, else `d.dddE<n>`; at least one fraction digit."""
    exp = power + len(digits) - 1
    if -3 <= exp < 7:
        if exp >= 0:
            text = digits[: exp + 1].ljust(exp + 1, "0") + "." + (digits[exp + 1 :] or "0")
        else:
            text = "0." + "0" * (-exp - 1) + digits
    else:
        text = digits[0] + "." + (digits[1:] or "0") + "E" + str(exp)
    return "-" + text if negative else text


def _java_special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-Infinity" if value < 0 else "Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return None


def java_double_to_string(value: float) -> str:
    """`Double.toString` (JDK 19+: shortest decimal that round-trips; JDK <= 18 may print a longer one)."""
    special = _java_special(value)
    if special:
        return special
    shortest = Decimal(repr(abs(value))).normalize().as_tuple()
    if len(shortest.digits) > 1:  # Python's repr is the same shortest-closest decimal
        return _java_float_text(value < 0, "".join(map(str, shortest.digits)), shortest.exponent)
    return _java_binary_text(struct.unpack(">Q", struct.pack(">d", value))[0], 52, 11)


def jdk_dependent_text(value: float, *, double: bool) -> bool:
    """Whether Java 8-17 and Java 19+ may print `value` in other digits. JDK 19 replaced the digit
    generation of `Double.toString` and `Float.toString` (JDK-4511638): the old one sometimes printed a
    longer or a wrong shortest decimal (`2.0E23` as `1.9999999999999998E23`, `7.0E10f` as `7.0000001E10`).
    Both print the same for zero, for whole numbers that fit the significand (below 2^53, 2^24 for a
    float: both print them exactly), and in the plain notation range [10^-3, 10^7), where no difference
    is known; elsewhere (the computerized notation) the text depends on the JVM."""
    if not math.isfinite(value) or value == 0:
        return False
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        return False
    return not (value == int(value) and magnitude < (2 ** 53 if double else 2 ** 24))


def java_float_to_string(value: float) -> str:
    """`Float.toString` of a float32 value, same rules as `java_double_to_string` at float precision."""
    special = _java_special(value)
    if special:
        return special
    return _java_binary_text(struct.unpack(">I", struct.pack(">f", value))[0], 23, 8)


def _java_binary_text(bits: int, fraction_bits: int, exponent_bits: int) -> str:
    """Java's text of a finite non-zero IEEE 754 value given as its bits (sign, exponent, fraction)."""
    sign = bits >> (fraction_bits + exponent_bits)
    exp_field = (bits >> fraction_bits) & ((1 << exponent_bits) - 1)
    fraction = bits & ((1 << fraction_bits) - 1)
    bias = (1 << (exponent_bits - 1)) - 1 + fraction_bits  # 1075 for doubles, 150 for floats
    if exp_field == 0:
        significand, exponent = fraction, 1 - bias
    else:
        significand, exponent = fraction | (1 << fraction_bits), exp_field - bias
    digits, power = _shortest_decimal(significand, exponent, fraction == 0 and exp_field > 1)
    return _java_float_text(bool(sign), str(digits), power)


def java_big_decimal_to_string(unscaled: int, scale: int) -> str:
    """`BigDecimal.toString`: plain unless the scale is negative or the adjusted exponent < -6."""
    coefficient = str(abs(unscaled))
    sign = "-" if unscaled < 0 else ""
    if scale == 0:
        return sign + coefficient
    adjusted = -scale + len(coefficient) - 1
    if scale > 0 and adjusted >= -6:
        if len(coefficient) > scale:
            return sign + coefficient[:-scale] + "." + coefficient[-scale:]
        return sign + "0." + "0" * (scale - len(coefficient)) + coefficient
    text = coefficient[0] + ("." + coefficient[1:] if len(coefficient) > 1 else "")
    return sign + text + "E" + ("+" if adjusted > 0 else "") + str(adjusted)
