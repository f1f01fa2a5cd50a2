"""The two-operand special functions XLA frontends lower to CHLO, as ``jax.lax`` exposes them:
igamma, igammac, polygamma, zeta and nextafter (the one-operand ones and the reasons for Arb
references at every dtype: ops/xla_special.py).

None is in the XLA operation semantics text; each is defined by its ``jax.lax`` function's
documentation and the function's mathematical definition (DLMF, cited per function). Inputs
outside the domain where the definition gives a real value are marked open by the oracle
(``open_elements``, the region ``oracle_marked``), each with the spec's reason.

nextafter is exact: C11 7.12.11.3 (and F.10.8.3), computed on the bit patterns of the case's
type, never by a library's nextafter.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import np_dtype
from conform.op_registry import op
from conform.ops.multiprecision import refined


class _Open:
    """The Arb function's answer at an element the oracle marks open: not finite, so the fast
    path's NaN stands (the element is judged by no value), and nothing is computed for it."""

    @staticmethod
    def is_finite():
        return False


_OPEN = _Open()


def _scipy():
    from scipy import special   # imported on first use: scipy.special costs ~0.7 s per process

    return special


def _igamma_open(a, x):
    """Outside a > 0, x >= 0 (NaN aside: NaN gives NaN), and both infinite: no value."""
    with np.errstate(invalid="ignore"):
        return (a <= 0) | (x < 0) | (np.isinf(a) & np.isinf(x))


def _arb_igamma(a, x):
    """P = 1 - Q where Q < 3/4 (the subtraction loses under 2 bits); below, where x < a, both
    enclosures of P, 1 - Q (it loses log2(1/P) bits: hopeless for P ~ 1e-150000) and Arb's
    regularized lower incomplete gamma (quick there, but no digit for some x near a in the
    thousands, where 1 - Q has them), intersected: the narrower decides."""
    if not (a > 0 and x > 0):
        return _OPEN   # _igamma_open: no value to compute
    upper = x.gamma_upper(a, regularized=1)
    if upper < 0.75:
        return 1 - upper
    lower = x.gamma_lower(a, regularized=1)
    return (1 - upper).intersection(lower) if lower.is_finite() else 1 - upper


def _arb_igammac(a, x):
    """Q, Arb's regularized upper incomplete gamma (quick over the whole domain)."""
    if not (a > 0 and x > 0):
        return _OPEN
    return x.gamma_upper(a, regularized=1)


def _nonnegative(fast):
    """``fast`` with its NaNs' sign bits cleared: P and Q are nonnegative, so a zero Arb cannot
    sign (a huge a) is +0 (SciPy's NaN there may carry a sign bit, which refined would copy)."""
    return lambda *operands: np.abs(fast(*operands))


@op("igamma", version=1)
def oracle_igamma(a, x, *, open_elements=False):
    """igamma(a, x) = P(a, x) = gamma(a, x) / Gamma(a), the regularized lower incomplete gamma
    function (jax.lax.igamma; DLMF 8.2.4), for a > 0 and x >= 0."""
    if open_elements:
        return (_igamma_open(a, x),)
    return (refined(_nonnegative(_scipy().gammainc), _arb_igamma, a, x, ziv=True),)


@op("igammac", version=1)
def oracle_igammac(a, x, *, open_elements=False):
    """igammac(a, x) = Q(a, x) = Gamma(a, x) / Gamma(a) = 1 - P(a, x), the regularized upper
    incomplete gamma function (jax.lax.igammac; DLMF 8.2.4), for a > 0 and x >= 0."""
    if open_elements:
        return (_igamma_open(a, x),)
    return (refined(_nonnegative(_scipy().gammaincc), _arb_igammac, a, x, ziv=True),)


def _cot_derivative(c, m: int):
    """d**m/dz**m cot(pi z) / pi**m as a polynomial in c = cot(pi z): P_0 = c,
    P_{k+1} = -(1 + c**2) P_k'(c) (d/dz cot(pi z) = -pi (1 + cot(pi z)**2))."""
    coeffs = [0, 1]   # P_0(c) = c, lowest power first
    for _ in range(m):
        derived = [k * coeffs[k] for k in range(1, len(coeffs))] or [0]
        grown = derived + [0, 0]
        coeffs = [-(grown[k] + (grown[k - 2] if k >= 2 else 0)) for k in range(len(grown))]
    return sum((c ** k) * v for k, v in enumerate(coeffs) if v)


def _arb_polygamma(s, x):
    """psi^(m)(x) with s = m + 1 (DLMF 25.11.12: psi^(m)(x) = (-1)**(m+1) m! zeta(m+1, x) for
    m >= 1, x > 0; digamma for m = 0; x < 0 by DLMF 5.15.6's reflection
    psi^(m)(x) = (-1)**m psi^(m)(1 - x) - pi d**m/dx**m cot(pi x))."""
    from flint import arb

    m = float(s) - 1
    if not (m >= 0 and m == int(m)) or (x < 0 and m > MAX_REFLECTED) or \
            (x <= 0 and x.is_integer()):
        return _OPEN   # open (see _polygamma_open): no reference; or a pole (_polygamma_fast)
    m = int(m)
    if x < 0:
        reflected = _arb_polygamma(s, 1 - x)
        return (-1) ** m * reflected - arb.pi() ** (m + 1) * _cot_derivative(x.cot_pi(), m)
    if m == 0:
        return x.digamma()
    return (-1) ** (m + 1) * arb(m + 1).gamma() * _arb_zeta(arb(m + 1), x)


#: The largest order whose reference is computed for x < 0 (the reflection's m-th derivative of
#: cot has O(m**2) terms); larger orders there are open: a gap of conform's reference.
MAX_REFLECTED = 64


def _polygamma_open(m, x):
    """m not a non-negative integer; an even m at a pole (non-positive integer x: two-sided,
    +-inf) or x = -inf (no limit); m > MAX_REFLECTED with x < 0 (no reference)."""
    with np.errstate(invalid="ignore"):
        integer_m = np.isfinite(m) & (m >= 0) & (np.trunc(m) == m)
        pole = np.isfinite(x) & (x <= 0) & (np.trunc(x) == x)
        unreached = (m > MAX_REFLECTED) & (x < 0)
        return ~integer_m | (pole & (np.fmod(m, 2) == 0)) | (x == -np.inf) | unreached


def _polygamma_fast(s, x):
    """Where Arb gives no finite real: an odd m's poles are +inf (each term of
    m! sum_k (x + k)**-(m+1) is positive), psi^(m)(+inf) is +inf for m = 0 and a zero of sign
    (-1)**(m+1) beyond; the open elements NaN."""
    m = s - 1
    pole = np.isfinite(x) & (x <= 0) & (np.trunc(x) == x)
    at_inf = np.where(m == 0, np.inf, np.where(np.fmod(m, 2) == 1, 0.0, -0.0))
    with np.errstate(all="ignore"):
        # elsewhere NaN, signed (-1)**(m+1) for x > 0 and m >= 1 (the sign of every term): a
        # result Arb rounds to zero (huge m) takes its zero's sign from here
        signed = np.copysign(np.nan, np.where((x > 0) & (m >= 1) & (np.fmod(m, 2) == 0), -1, 1))
        value = np.where(pole, np.inf, np.where(x == np.inf, at_inf, signed))
        return np.where(_polygamma_open(m, x), np.nan, value)


def polygamma_values(rng, inputs, attrs):
    """The order m drawn as an integer in [0, 3] where the plan gave none (m is a non-negative
    integer by definition; other values are the open region)."""
    m, x = inputs
    m = np.asarray(m)
    with np.errstate(invalid="ignore"):
        valid = np.isfinite(m) & (m >= 0) & (m <= 3) & (np.trunc(m) == m)
    return [np.where(valid, m, rng.integers(0, 4, m.shape).astype(m.dtype)), x]


@op("polygamma", version=1, values=polygamma_values)
def oracle_polygamma(m, x, *, open_elements=False):
    """polygamma(m, x) = psi^(m)(x), the m-th derivative of digamma (jax.lax.polygamma;
    DLMF 5.15.1), m a non-negative integer."""
    if open_elements:
        return (_polygamma_open(m, x),)
    return (refined(_polygamma_fast, _arb_polygamma, m + 1, x, ziv=True),)


def _zeta_open(x, q):
    """x < 1 (the series diverges; its analytic continuation is another definition), q <= 0
    (a term (k + q)**-x is infinite or not real), -inf or NaN-free infinities that have no
    limit: x = 1 with q = inf."""
    with np.errstate(invalid="ignore"):
        return (x < 1) | (q <= 0) | ((x == 1) & (q == np.inf))


def _zeta_fast(x, q):
    """Where Arb gives no finite real: the pole x = 1 is +inf (the harmonic series diverges);
    x = +inf gives 0 for q > 1, 1 for q = 1 and +inf for q < 1; q = +inf gives +0. Every term
    is positive: a zero Arb cannot sign (x in the hundreds of digits) is +0 (abs: SciPy's NaN
    there may carry a sign bit)."""
    with np.errstate(all="ignore"):
        at_inf = np.where(q > 1, 0.0, np.where(q == 1, 1.0, np.inf))
        value = np.where(x == 1, np.inf, np.where(x == np.inf, at_inf,
                         np.where(q == np.inf, 0.0, np.abs(_scipy().zeta(x, q)))))
        return np.where(_zeta_open(x, q), np.nan, value)


@op("zeta", version=1)
def oracle_zeta(x, q, *, open_elements=False):
    """zeta(x, q) = sum_{k >= 0} (k + q)**-x, the Hurwitz zeta function (jax.lax.zeta;
    DLMF 25.11.1), for x > 1 and q > 0."""
    if open_elements:
        return (_zeta_open(x, q),)
    return (refined(_zeta_fast, _arb_zeta, x, q, ziv=True),)


def _arb_zeta(s, a):
    """zeta(s, a) in Arb; for s >= 4096, where Arb takes up to a second to give up on a result
    far past the float64 range, the first term a**-s alone where it decides the float64 value:
    the other terms sum to at most a**-s (a / (a + 1))**s (1 + (a + 1) / (s - 1)) (DLMF 25.11.1
    bounded by an integral), so a**-s is the value to 2**-120 when that factor is below it, and
    zeta lies in [a**-s, a**-s (1 + a / (s - 1))], past the float64 range when that is."""
    from flint import arb

    if not (s >= 1 and a > 0):
        return _OPEN   # _zeta_open
    if s >= 4096:
        first = a ** -s
        rest = (a / (a + 1)) ** s * (1 + (a + 1) / (s - 1))
        if rest < arb(2) ** -120 or first > arb(2) ** 1030 or \
                first * (1 + a / (s - 1)) < arb(2) ** -1100:
            return first
    return arb.zeta(s, a)


def _bits(dtype: str):
    width = np_dtype(dtype).itemsize * 8
    return np.dtype(f"uint{width}"), np.uint64(1 << (width - 1))


@op("nextafter", version=1)
def oracle_nextafter(x1, x2, *, dtypes):
    """nextafter(x1, x2) (jax.lax.nextafter; C11 7.12.11.3): the next representable value of
    the type after x1 in the direction of x2; x2 where x1 == x2 (so nextafter(+0, -0) = -0);
    NaN where either is NaN; from a zero, the smallest subnormal of x2's sign; past the largest
    finite value, the infinity (C11 F.10.8.3: overflow); from an infinity toward x2, the largest
    finite value. Computed on the type's bit patterns: a step of one in the magnitude's code."""
    dtype = np_dtype(dtypes[0])
    a, b = np.broadcast_arrays(x1.astype(dtype), x2.astype(dtype))
    with np.errstate(invalid="ignore"):
        out = (_stepped_narrow if dtype.itemsize == 1 else _stepped)(a, b, dtypes[0])
        out = np.where(a == b, b.astype(np.float64), out)
        return (np.where(np.isnan(a) | np.isnan(b), np.nan, out),)


def _stepped(a, b, dtype: str) -> np.ndarray:
    """The neighbour of ``a`` toward ``b`` in an IEEE 754 interchange type: one step of the
    magnitude's code away from or toward zero, from a zero the smallest subnormal of ``b``'s
    sign."""
    uint, sign = _bits(dtype)
    code = a.view(uint).astype(np.uint64)
    magnitude, negative = code & ~sign, (code & sign) != 0
    away = (a < b) != negative            # toward larger magnitude
    stepped = np.where(away, magnitude + np.uint64(1), magnitude - np.uint64(1))
    from_zero = np.where(b < 0, sign, np.uint64(0)) | np.uint64(1)
    result = np.where(magnitude == 0, from_zero, stepped | (code & sign))
    return result.astype(uint).view(a.dtype).astype(np.float64)


def _stepped_narrow(a, b, dtype: str) -> np.ndarray:
    """The neighbour of ``a`` toward ``b`` in a type of at most 8 bits, whose codes do not all
    follow IEEE 754's layout (float4 and float6 in a byte's low bits, the fnuz types' one zero,
    float8_e8m0fnu's unsigned powers of two): the next of the type's values (every code's,
    NaN left out, -0 before +0) above or below ``a``; a zero reached from a negative value is
    -0 where the type has it (C11 7.12.11.3 steps the representation: nextafter(-tiny, 1) is
    -0)."""
    values = np.arange(256, dtype=np.uint8).view(np_dtype(dtype)).astype(np.float64)
    values = values[~np.isnan(values)]
    values = np.unique(values.view(np.uint64)).view(np.float64)   # both zeros kept
    values = values[np.lexsort((~np.signbit(values), values))]     # -0 before +0
    x = a.astype(np.float64)
    top = len(values) - 1
    up = values[np.clip(np.searchsorted(values, x, side="right"), 0, top)]
    down = values[np.clip(np.searchsorted(values, x, side="left") - 1, 0, top)]
    return np.where(a < b, up, down)
