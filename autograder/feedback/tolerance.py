"""When two values count as equal: a relative and an absolute tolerance, per dtype."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    #: the tolerance of float32 answers, beside a float64 answer's own: the values of a float32 result for a float64
    #: expected one are compared within it (``within_lower_precision``)
    lower: object = field(default=None, compare=False, repr=False)  # a Tolerance, or None

    def close(self, got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
        """Element-wise closeness, NaN equal to NaN, computed in float64."""
        g, e = got.detach().double(), expected.detach().double()
        both_nan = torch.isnan(g) & torch.isnan(e)
        same_inf = torch.isinf(g) & torch.isinf(e) & (torch.sign(g) == torch.sign(e))
        finite = torch.isfinite(g) & torch.isfinite(e)  # inf - inf is nan, and inf <= rtol * inf: not close
        return both_nan | same_inf | (finite & ((g - e).abs() <= self.atol + self.rtol * e.abs()))


#: loose enough to recognise a known mistake's result, or a transposed one
LOOSE = Tolerance(rtol=1e-3, atol=1e-4)


def same(got: torch.Tensor, expected: torch.Tensor, tol: Tolerance) -> bool:
    """The same shape, and every entry within ``tol`` (|got - expected| <= atol + rtol * |expected|)."""
    if tuple(got.shape) != tuple(expected.shape):
        return False
    got, expected = got.detach(), expected.detach()
    # The same test as Tolerance.close (NaN equal to NaN, infinities equal when of the same sign), in one call.
    if got.dtype == expected.dtype and got.dtype in (torch.float32, torch.float64):
        # Bit-for-bit equal is the common case for a correct answer, and 5x cheaper to establish.
        return torch.equal(got, expected) or torch.allclose(got, expected, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
    return torch.allclose(got.double(), expected.double(), rtol=tol.rtol, atol=tol.atol, equal_nan=True)


def tolerance_for_output(output, float32: Tolerance, float64: Tolerance) -> Tolerance:
    """The tolerance of a whole answer: float64's when its output (or first output) is a float64 tensor (knowing
    float32's, for a result in the lower precision)."""
    if isinstance(output, (tuple, list)) and output:
        output = output[0]
    if isinstance(output, torch.Tensor) and output.dtype == torch.float64:
        return replace(float64, lower=float32)
    return float32


def within_lower_precision(got: torch.Tensor, expected: torch.Tensor, tol: Tolerance) -> Tolerance:
    """The tolerance ``got`` is compared within when its dtype is not ``expected``'s: the lower precision's (float32's
    from the course, or one a few steps of the lower dtype's epsilon wide), so that a float32 result whose values are
    right is said once, as its dtype, and not a second time as values that differ by float32's rounding."""
    if got.dtype == expected.dtype or not got.dtype.is_floating_point or not expected.dtype.is_floating_point:
        return tol
    lower = got.dtype if torch.finfo(got.dtype).eps > torch.finfo(expected.dtype).eps else expected.dtype
    if lower == torch.float32 and tol.lower is not None:
        return tol.lower
    eps = torch.finfo(lower).eps
    return Tolerance(rtol=max(tol.rtol, 1e3 * eps), atol=max(tol.atol, 1e2 * eps))
