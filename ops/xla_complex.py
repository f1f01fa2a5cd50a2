"""XLA's complex numbers (operation semantics: "Element-wise binary arithmetic operations" lists
Complex, 'combining real and imaginary parts into a complex number'; "Element-wise unary
functions" gives Real, 'x -> real(x); if the operand is a floating-point type, returns the same
value', and Imag, 'x -> imag(x); if the operand is a floating-point type, returns 0'), and what
the complex forms of the element-wise ops need: the error bounds of complex multiplication and
exp, the references of complex functions beyond float64, and the region of non-finite complex
operands, on which the text is silent (it does not defer to C11 Annex G).

Complex, Real and Imag copy parts: judged exactly. A complex product is judged by the normwise
bound of Brent, Percival and Zimmermann, "Error bounds on complex floating-point
multiplication", Math. Comp. 76 (2007) 1469-1481: the textbook formula ``(ac - bd) + (ad + bc)i``
in rounding to nearest has ``|fl(xy) - xy| <= sqrt(5) u |xy|``; with a fused multiply-add the
bound is ``2u`` (Jeannerod, Kornerup, Louvet and Muller, Math. Comp. 86 (2017) 881-898), so
``sqrt(5) u`` holds for every common evaluation. Both assume no underflow and no overflow.
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import complex_array, component_dtype
from conform.op_registry import op, region
from conform.ops._lowering import unsupported
from conform.ops.error_bounds import gamma, judged_bound, reaches_max_finite, underflow_term
from conform.ops.regions import RegionContext, broadcast_aligned

#: Arb's working precision for complex128 references: far beyond float64's 53 bits, checked
#: per element (a ball wider than 2**-110 of its value falls back to NumPy's value)
_PRECISION = 256


@region
def complex_nonfinite_operand(ctx: RegionContext) -> np.ndarray:
    """Results of a complex element-wise op with an operand whose real or imaginary part is
    infinite or NaN: XLA's text defines the op on complex numbers and is silent on these (it
    does not defer to C11 Annex G, whose recovery of infinities a textbook formula does not
    make: ``(inf + 0i)(1 + 0i)`` is ``inf + NaN i`` by ``(ac - bd) + (ad + bc)i``)."""
    mask = ctx.none()
    for operand in ctx.inputs:
        if np.iscomplexobj(operand):
            mask = mask | ctx.aligned(~np.isfinite(operand))
    return mask


@region
def negative_zero_on_branch_cut(ctx: RegionContext) -> np.ndarray:
    """Results of a complex function with a branch cut along the negative real axis (sqrt)
    whose operand lies on it with a -0 imaginary part: the text (x -> sqrt(x)) does not say
    whether -0 selects the cut's lower side (C11 Annex G: csqrt(conj z) = conj(csqrt z), so
    sqrt(-4 - 0i) = -2i) or is the number 0 (the principal value, +2i). A negative subnormal
    imaginary part is in the region too: a flushing backend (the ``ftz`` policy) reads it as
    -0, on the cut."""
    mask = ctx.none()
    for operand in ctx.inputs:
        if np.iscomplexobj(operand):
            imag = np.imag(operand)
            tiny = np.finfo(imag.dtype).tiny
            mask = mask | ctx.aligned((operand.real < 0) & (imag > -tiny) & np.signbit(imag))
    return mask


#: the only output types the complex regions can hold elements of (generators/_consistency.py)
COMPLEX_CELLS = frozenset({"complex64", "complex128"})
complex_nonfinite_operand.only_dtypes = COMPLEX_CELLS
negative_zero_on_branch_cut.only_dtypes = COMPLEX_CELLS


@region
def complex_infinite_operand(ctx: RegionContext) -> np.ndarray:
    """Results of a complex element-wise op with an operand that has an infinite part and no
    NaN part, where the text defines the NaN case only (StableHLO's sign: a NaN part gives
    ``(NaN, NaN)``; ``divide(x, abs(x))`` of an infinite ``x`` divides an infinity by an
    infinity, NaN in IEEE arithmetic, though the limit is a number of modulus 1)."""
    mask = ctx.none()
    for operand in ctx.inputs:
        if np.iscomplexobj(operand):
            nan = np.isnan(operand.real) | np.isnan(np.imag(operand))
            mask = mask | ctx.aligned(np.isinf(operand) & ~nan)
    return mask


def complex_sign_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                       subnormals="ieee"):
    """The ``derived`` bound of a complex ``sign(x) = divide(x, convert(abs(x), type(x)))``
    (StableHLO's sign): ``c = |x|`` a hypot within ``hypot_ulp`` ULPs (relative ``2 hypot_ulp
    u``), then ``x / (c + 0i)`` by the textbook complex division ``(a c + b 0) / (c**2 + 0**2)``
    (three roundings per part; Smith's algorithm and a division by the real ``c`` round less),
    ``(a c) / c**2 = a / c`` carrying ``c``'s error once: each part within ``(1 + 2 hypot_ulp
    u)(1 + u)**3 - 1`` of itself, so the modulus of the error within that of ``|sign x| = 1``;
    plus a part below the normal range (``underflow_term``). NaN (``unbounded_evaluation``)
    where ``|x|`` or ``|x|**2`` overflows the type (``abs`` rounds to infinity and the quotient
    to 0, or ``c**2`` does), or ``|x|**2`` falls below its normal range."""
    (z,) = inputs
    part = component_dtype(out_dtype)
    expected = np.asarray(outputs[0])
    relative = (1 + 2 * constants["hypot_ulp"] * u) * (1 + u) ** 3 - 1
    bound = relative * np.abs(expected) + 2 * underflow_term(1, part, subnormals=subnormals)
    with np.errstate(over="ignore", under="ignore"):
        square = np.abs(z) ** 2
    tiny = np.finfo(part).tiny
    unbounded = np.isfinite(z) & (z != 0) & (reaches_max_finite(square, part) | (square < tiny))
    return (judged_bound(bound, expected, unbounded=unbounded),)


def complex_sqrt_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                       subnormals="ieee"):
    """The ``derived`` bound of the principal ``sqrt(a + bi)`` by its standard evaluation
    ``t = sqrt((|a| + |z|) / 2)``, the other part ``q = |b| / (2t)`` (W. Kahan, "Branch cuts
    for complex elementary functions", 1987): ``|z|`` as a hypot within ``hypot_ulp`` ULPs
    (relative ``2 hypot_ulp u``), the sum of two non-negative numbers, the square root and the
    division correctly rounded, the root halving its operand's relative error: each part within
    ``(1 + 2 hypot_ulp u)(1 + u)**3 - 1`` of itself, so the modulus of the error within that
    of ``|sqrt z|``. Where ``(|a| + |z|) / 2`` falls below the normal range it errs by up to
    ``h = underflow_term(1)`` more, which moves ``t`` by up to ``sqrt(h)`` and ``q <= t`` by
    ``q sqrt(h) / (t - sqrt(h))``: ``2 sqrt(h) / (1 - sqrt(h) / t)`` more (infinite, any number,
    where ``sqrt(h) >= t``: a flushed evaluation of the formula bounds nothing there). NaN
    (``unbounded_evaluation``) where ``|a| + |z|`` overflows the type."""
    (z,) = inputs
    part = component_dtype(out_dtype)
    expected = np.asarray(outputs[0])
    relative = (1 + 2 * constants["hypot_ulp"] * u) * (1 + u) ** 3 - 1
    t = np.maximum(np.abs(expected.real), np.abs(expected.imag))
    root_h = math.sqrt(underflow_term(1, part, subnormals=subnormals))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        shift = np.where(root_h < t, 2 * root_h / (1 - root_h / t), np.inf)
        inner = np.abs(z.real) + np.abs(z)
    bound = relative * np.abs(expected) + shift + underflow_term(1, part, subnormals=subnormals)
    unbounded = np.isfinite(z) & (inner >= np.finfo(part).max)
    return (judged_bound(bound, expected, unbounded=unbounded),)


def _reciprocal_error(r, u, roundings):
    """The relative error of a complex reciprocal ``1 / s`` evaluated from ``s`` known to within
    relative ``r``: ``1 / (s (1 + r))`` adds ``r / (1 - r)``, the reciprocal's own evaluation
    ``gamma(roundings)`` per part (the textbook ``(c - di) / (c**2 + d**2)`` rounds three times
    per part, Smith's algorithm at most five; neither cancels: both add terms of one sign);
    infinite (any number) where ``r >= 1``."""
    with np.errstate(all="ignore"):
        relative = (1 + r / (1 - r)) * (1 + gamma(roundings, u)) - 1
    return np.where(r < 1, relative, np.inf)


def complex_logistic_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                           subnormals="ieee"):
    """The ``derived`` bound of ``logistic(z) = 1 / (1 + e**-z)`` for complex ``z``, the
    definition evaluated as written: ``w = e**-z`` within the complex exp bound's relative
    ``p = (1 + 2 exp_ulp u)(1 + 2 trig_ulp u)(1 + u) - 1`` (:func:`complex_exp_bound`), ``s = 1 +
    w`` adding one rounding of its real part, so ``s`` within ``r = (p |w| + u |s|) / |s|``
    (near a pole, ``z = (2k + 1) pi i``, ``|w| / |s|`` grows: the condition of the sum), then the
    reciprocal (:func:`_reciprocal_error`). NaN (``unbounded_evaluation``) where e**-a
    overflows the type, or ``|s|**2`` leaves its normal range (the textbook reciprocal's
    ``c**2 + d**2`` overflows, or loses its precision near a pole)."""
    (z,) = inputs
    part = component_dtype(out_dtype)
    expected = np.asarray(outputs[0])
    p = (1 + 2 * constants["exp_ulp"] * u) * (1 + 2 * constants["trig_ulp"] * u) * (1 + u) - 1
    with np.errstate(all="ignore"):
        w = np.exp(-np.asarray(z, np.complex128))
        s = 1 + w
        relative = _reciprocal_error((p * np.abs(w) + u * np.abs(s)) / np.abs(s), u,
                                     constants["reciprocal_roundings"])
        bound = relative * np.abs(expected) + 2 * underflow_term(1, part, subnormals=subnormals)
        square = np.abs(s) ** 2
    unbounded = np.isfinite(z) & (reaches_max_finite(np.abs(w), part)
                                  | reaches_max_finite(square, part)
                                  | (square < np.finfo(part).tiny))
    return (judged_bound(bound, expected, unbounded=unbounded),)


def complex_rsqrt_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                        subnormals="ieee"):
    """The ``derived`` bound of ``rsqrt(z) = 1.0 / sqrt(z)`` (the text's formula) for complex
    ``z``: the root ``w`` within :func:`complex_sqrt_bound`'s ``e_w`` (relative ``r = e_w /
    |w|``), then the complex reciprocal ``1 / w`` within ``gamma(reciprocal_roundings)`` per part
    (the textbook ``(c - di) / (c**2 + d**2)``: two squares, a sum of non-negative terms and a
    division, three roundings on each part; Smith's ``r = d / c``, ``c + d r``, ``1 / (c + d r)``
    and ``r / (c + d r)``: at most five, its sum of two terms of one sign), ``1 / (w (1 + r))``
    adding ``r / (1 - r)``: the modulus of the error within ``((1 + r / (1 - r))(1 +
    gamma) - 1) |rsqrt z|`` plus a part below the normal range. NaN (``unbounded_evaluation``)
    where the root's bound is, at ``z = 0`` (a division by a zero complex number: NaN by the
    textbook formula, an infinity by C11 Annex G), and where ``|w|**2 = |z|`` leaves the
    normal range (the textbook formula's ``c**2 + d**2`` overflows or loses its precision)."""
    (z,) = inputs
    part = component_dtype(out_dtype)
    expected = np.asarray(outputs[0])
    with np.errstate(all="ignore"):
        root = np.sqrt(np.asarray(z, np.complex128))
    (root_bound,) = complex_sqrt_bound(inputs, attrs, (root,), out_dtype=out_dtype, u=u,
                                       constants=constants, dtypes=dtypes, subnormals=subnormals)
    with np.errstate(all="ignore"):
        relative = _reciprocal_error(np.asarray(root_bound) / np.abs(root), u,
                                     constants["reciprocal_roundings"])
        bound = relative * np.abs(expected) + 2 * underflow_term(1, part, subnormals=subnormals)
    magnitude = np.abs(z)
    unbounded = np.isnan(root_bound) | (np.isfinite(z) & (
        (magnitude < np.finfo(part).tiny) | reaches_max_finite(magnitude, part)))
    return (judged_bound(bound, expected, unbounded=unbounded),)


def complex_product_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                          subnormals="ieee"):
    """The ``derived`` bound of a complex product ``x y``: ``sqrt(5) u |x| |y|`` (Brent,
    Percival and Zimmermann 2007, Theorem 1; 2u with an FMA, Jeannerod et al. 2017), plus the
    underflow of the four products and two sums (each below the normal range adds at most
    half the smallest subnormal, or under ``ftz`` the smallest normal: ``underflow_term``);
    NaN (``unbounded_evaluation``) where a product or a sum of two can overflow. Real
    operands (a real product is correctly rounded) take no bound here."""
    shape = np.shape(outputs[0])
    lhs, rhs = (broadcast_aligned(x, shape, "xla_broadcast", attrs) for x in inputs)
    part = component_dtype(out_dtype)
    a, b, c, d = (np.abs(v) for v in (lhs.real, np.imag(lhs), rhs.real, np.imag(rhs)))
    bound = math.sqrt(5) * u * (np.abs(lhs) * np.abs(rhs)) \
        + underflow_term(6, part, subnormals=subnormals)
    finite = np.isfinite(lhs) & np.isfinite(rhs)
    sums = np.maximum(a * c + b * d, a * d + b * c)
    return (judged_bound(bound, outputs[0], unbounded=finite & reaches_max_finite(sums, part)),)


def _parts_of_products(expected, part, u, first_ulp, second_ulp, subnormals):
    """The bound of a complex result whose every part is one product of two real functions'
    values, within ``first_ulp`` and ``second_ulp`` ULPs (each ULP at most ``2u`` of the value),
    rounded once: each part within ``(1 + 2 first_ulp u)(1 + 2 second_ulp u)(1 + u) - 1`` of
    itself, so the modulus of the error within that of ``|expected|``; plus a part below the
    normal range (``underflow_term``: a product, ``first_ulp + second_ulp + 1`` of the
    smallest subnormal, for each of the two parts)."""
    relative = (1 + 2 * first_ulp * u) * (1 + 2 * second_ulp * u) * (1 + u) - 1
    ulps = first_ulp + second_ulp + 1
    return relative * np.abs(expected) + 2 * underflow_term(1, part, ulps=ulps,
                                                            subnormals=subnormals)


def complex_exp_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                      subnormals="ieee"):
    """The ``derived`` bound of ``exp(x + iy) = e**x cos y + i e**x sin y``, the definition
    evaluated part by part: e**x within ``exp_ulp`` ULPs, cos y and sin y within ``trig_ulp``,
    each product rounded once (:func:`_parts_of_products`). NaN (``unbounded_evaluation``)
    where e**x overflows the type though a part may not (cos y or sin y below 1)."""
    (z,) = inputs
    part = component_dtype(out_dtype)
    expected = np.asarray(outputs[0])
    bound = _parts_of_products(expected, part, u, constants["exp_ulp"], constants["trig_ulp"],
                               subnormals)
    with np.errstate(over="ignore"):
        overflow = np.isfinite(z) & reaches_max_finite(np.exp(z.real), part)
    return (judged_bound(bound, expected, unbounded=overflow),)


def complex_expm1_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                        subnormals="ieee"):
    """The ``derived`` bound of ``expm1(a + bi) = e**(a + bi) - 1`` by the evaluation that keeps
    the real part's cancellation exact, ``(expm1(a) cos b - 2 sin(b/2)**2) + i e**a sin b``
    (``cos b - 1 = -2 sin(b/2)**2``; ``b/2`` and the doubling exact): expm1 and exp within
    ``exp_ulp`` ULPs, sin and cos within ``trig_ulp`` (each ULP at most ``2u`` of the value),
    each product and square rounded once, the difference once: the real part within
    ``p |expm1(a) cos b| + s 2 sin(b/2)**2 + u |re|``, ``p = (1 + 2 exp_ulp u)(1 + 2 trig_ulp
    u)(1 + u) - 1``, ``s = (1 + 2 trig_ulp u)**2 (1 + u) - 1``, the imaginary part within
    ``p |im|``: their sum bounds the modulus of the error; plus the parts below the normal
    range (``underflow_term``). NaN (``unbounded_evaluation``) where e**a overflows the type
    though a part may not."""
    (z,) = inputs
    part = component_dtype(out_dtype)
    expected = np.asarray(outputs[0])
    a, b = np.real(z), np.imag(z)
    exp_rel, trig_rel = 2 * constants["exp_ulp"] * u, 2 * constants["trig_ulp"] * u
    product = (1 + exp_rel) * (1 + trig_rel) * (1 + u) - 1
    square = (1 + trig_rel) ** 2 * (1 + u) - 1
    with np.errstate(all="ignore"):
        real = product * np.abs(np.expm1(a) * np.cos(b)) + square * 2 * np.sin(b / 2) ** 2 \
            + u * np.abs(expected.real)
        bound = real + product * np.abs(expected.imag) + 3 * underflow_term(
            1, part, ulps=constants["exp_ulp"] + constants["trig_ulp"] + 1, subnormals=subnormals)
        overflow = np.isfinite(z) & reaches_max_finite(np.exp(a), part)
    return (judged_bound(bound, expected, unbounded=overflow),)


def _trig_bound(hyperbolic_of_imag: bool):
    """The ``derived`` bound hook of a complex circular (``hyperbolic_of_imag``: sin, cos) or
    hyperbolic (sinh, cosh) function by its part-by-part definition, each part one product of
    a circular and a hyperbolic function of the operand's parts:
    ``sin(a + bi) = sin a cosh b + i cos a sinh b``, ``cos(a + bi) = cos a cosh b - i sin a
    sinh b``, ``sinh(a + bi) = sinh a cos b + i cosh a sin b``, ``cosh(a + bi) = cosh a cos b +
    i sinh a sin b`` (the addition theorems with ``sin(ib) = i sinh b``, ``cos(ib) = cosh b``):
    sin and cos within ``trig_ulp`` ULPs, sinh and cosh within ``hyperbolic_ulp``, each
    product rounded once (:func:`_parts_of_products`). NaN (``unbounded_evaluation``) where
    cosh of the hyperbolic argument (``b``, or ``a``) overflows the type though a part, its
    product with a sine or cosine below 1, may not."""
    def bound_hook(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                   subnormals="ieee"):
        """The bound per element (see :func:`_trig_bound`)."""
        (z,) = inputs
        part = component_dtype(out_dtype)
        expected = np.asarray(outputs[0])
        bound = _parts_of_products(expected, part, u, constants["trig_ulp"],
                                   constants["hyperbolic_ulp"], subnormals)
        with np.errstate(over="ignore"):
            grows = np.cosh(np.imag(z) if hyperbolic_of_imag else np.real(z))
        overflow = np.isfinite(z) & reaches_max_finite(grows, part)
        return (judged_bound(bound, expected, unbounded=overflow),)
    return bound_hook


def _tangent_bound(hyperbolic: bool):
    """The ``derived`` bound hook of complex tan (``hyperbolic`` False) or tanh, each the
    quotient of its definition with numerator and denominator multiplied by a conjugate
    (``2a``, ``2b`` exact), evaluated as written: ``tan(a + bi) = (sin 2a + i sinh 2b) / (cos 2a
    + cosh 2b)``, ``tanh(a + bi) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b)``. sin and cos
    within ``trig_ulp`` ULPs, sinh and cosh within ``hyperbolic_ulp`` (each ULP at most ``2u`` of
    the value; ``n`` = twice the larger times ``u``), the denominator ``D`` within ``e = n (|cos|
    + cosh) + u |D|`` (it cancels near a pole: ``pi/2 + k pi``, or ``i`` times it for tanh),
    each part's quotient rounded once: each part, and so the modulus of the error, within
    ``(1 + n)(1 + e / |D|) / (1 - e / |D|)(1 + u) - 1`` of ``|f(z)|``; plus a part below the
    normal range. NaN (``unbounded_evaluation``) where the cosh overflows the type (the
    quotient of two infinities, though ``f(z)`` is near ``±i`` or ``±1``)."""
    def bound_hook(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                   subnormals="ieee"):
        """The bound per element (see :func:`_tangent_bound`)."""
        (z,) = inputs
        part = component_dtype(out_dtype)
        expected = np.asarray(outputs[0])
        n = 2 * max(constants["trig_ulp"], constants["hyperbolic_ulp"]) * u
        with np.errstate(all="ignore"):
            circular, growing = 2 * np.real(z).astype(np.float64), 2 * np.imag(z).astype(np.float64)
            if hyperbolic:
                circular, growing = growing, circular
            denominator = np.cos(circular) + np.cosh(growing)
            e = (n * (np.abs(np.cos(circular)) + np.cosh(growing)) + u * np.abs(denominator)) \
                / np.abs(denominator)
            relative = np.where(e < 1, (1 + n) * (1 + e) / (1 - e) * (1 + u) - 1, np.inf)
            overflow = np.isfinite(z) & reaches_max_finite(np.cosh(growing), part)
        bound = relative * np.abs(expected) + 2 * underflow_term(
            1, part, ulps=2 * constants["trig_ulp"] + 1, subnormals=subnormals)
        return (judged_bound(bound, expected, unbounded=overflow),)
    return bound_hook


#: the bound hooks of complex tan and tanh
complex_tan_bound, complex_tanh_bound = _tangent_bound(False), _tangent_bound(True)


#: the bound hooks of complex sin and cos (a hyperbolic function of the imaginary part), and
#: of complex sinh and cosh (of the real part)
complex_circular_bound, complex_hyperbolic_bound = _trig_bound(True), _trig_bound(False)


def complex_log_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes,
                      subnormals="ieee"):
    """The ``derived`` bound of ``log z = log|z| + i arg z``, the definition evaluated part by
    part: ``|z|`` as a hypot within ``hypot_ulp`` ULPs (relative ``d = 2 hypot_ulp u``, at most
    ``d / (1 - d)`` absolute after the logarithm), log within ``log_ulp`` and atan2 within
    ``atan2_ulp`` ULPs of their results (each ULP at most ``2u`` of the value): the modulus of
    the error within ``d / (1 - d) (1 + 2 log_ulp u) + 2 log_ulp u |log|z|| + 2 atan2_ulp u
    |arg z|``, plus a result below the normal range (``underflow_term``). The first term is
    absolute: near ``|z| = 1`` the real part cancels and log(hypot) errs by ``d`` there."""
    part = component_dtype(out_dtype)
    expected = np.asarray(outputs[0])
    d = 2 * constants["hypot_ulp"] * u
    log_rel, atan2_rel = 2 * constants["log_ulp"] * u, 2 * constants["atan2_ulp"] * u
    bound = d / (1 - d) * (1 + log_rel) + log_rel * np.abs(expected.real) \
        + atan2_rel * np.abs(expected.imag) \
        + underflow_term(1, part, ulps=constants["atan2_ulp"], subnormals=subnormals)
    return (judged_bound(bound, expected),)


def complex_refined(fast, exact, z, dtypes=None):
    """A complex function of the complex128 ``z``: ``fast`` (NumPy, complex128) where
    ``dtypes`` holds complex64; for complex128 operands each finite element evaluated by
    ``exact`` on Arb complex balls (python-flint ``acb``) at 256 bits and each part rounded to
    the nearest float64 (within half a float64 ULP per part: ``2**-53`` of ``|f(z)|``), where the
    ball is narrower than ``2**-110`` of the value; NumPy's value elsewhere (non-finite operands,
    which are the region :func:`complex_nonfinite_operand`, and operands with a zero part, whose
    sign Arb does not hold: there NumPy's value, within a few float64 ULPs)."""
    with np.errstate(all="ignore"):
        out = np.asarray(fast(z), np.complex128).copy()
    if dtypes is not None and any(d != "complex128" for d in dtypes):
        return out
    import flint

    saved, flint.ctx.prec = flint.ctx.prec, _PRECISION
    try:
        flat = out.reshape(-1)
        for k, value in enumerate(np.asarray(z, np.complex128).reshape(-1).tolist()):
            if not (math.isfinite(value.real) and math.isfinite(value.imag)) \
                    or value.real == 0 or value.imag == 0:   # Arb has no signed zero
                continue
            ball = exact(flint.acb(value.real, value.imag))
            parts = (ball.real, ball.imag)
            if all(p.rad() <= abs(p.mid()) * 2.0 ** -110 or p.rad() == 0 for p in parts):
                near = [float(p.mid()) for p in parts]
                fast_parts = (flat[k].real, flat[k].imag)   # Arb's zero has no sign: NumPy's
                flat[k] = complex(*(n if n else math.copysign(0.0, f)
                                    for n, f in zip(near, fast_parts)))
    finally:
        flint.ctx.prec = saved
    return out


def exact_modulus(z, dtypes=None):
    """``|z| = sqrt(a**2 + b**2)`` in float64 (:func:`complex_refined`: for complex128, on Arb
    balls at 256 bits rounded to nearest; with a zero part NumPy's hypot, then exact)."""
    return complex_refined(np.abs, lambda w: type(w)(abs(w)), z, dtypes=dtypes).real


def exact_complex_product(lhs, rhs, dtypes=None):
    """``lhs * rhs`` (complex, broadcast together): NumPy's complex128 product where ``dtypes``
    holds no complex128 (its error, ``sqrt(5) 2**-53`` relative, is far below complex64's);
    for complex128 operands each part of every finite product correctly rounded into float64
    from the exact ``ac - bd`` and ``ad + bc`` (rationals: ``float`` of a ``Fraction`` rounds
    correctly). Non-finite operands keep NumPy's value (the region
    :func:`complex_nonfinite_operand`)."""
    lhs, rhs = np.broadcast_arrays(np.asarray(lhs, np.complex128), np.asarray(rhs, np.complex128))
    with np.errstate(all="ignore"):
        out = (lhs * rhs).copy()
    if dtypes is not None and "complex128" not in dtypes:
        return out
    from fractions import Fraction

    flat = out.reshape(-1)
    pairs = zip(lhs.reshape(-1).tolist(), rhs.reshape(-1).tolist())
    for k, (x, y) in enumerate(pairs):
        parts = (x.real, x.imag, y.real, y.imag)
        if not all(map(math.isfinite, parts)):
            continue
        a, b, c, d = map(Fraction, parts)
        real, imag = a * c - b * d, a * d + b * c
        flat[k] = complex(_rounded(real), _rounded(imag))
    return out


def _rounded(value) -> float:
    """``float(value)`` of a rational, correctly rounded, overflowing to an infinity of its
    sign. (A zero part is +0: the sign of a zero part is left open, ``signed_zero: any``.)"""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


# --- Complex, Real, Imag --------------------------------------------------------------------

def draw_complex(draw, kit, spec, dtype):
    """Complex: two operands of one shape in the component type of ``dtype`` (the complex
    result's type). The ``broadcast_dimensions`` variant is not drawn."""
    shape = draw(kit.shape(min_side=draw(kit.st.sampled_from([1, 1, 1, 0]))))
    part = component_dtype(dtype)
    return kit.Signature((part, part), (shape, shape), {}, dtype)


def draw_part(draw, kit, spec, dtype):
    """Real and Imag: one operand of ``dtype`` (complex, or a float type), the result in its
    component type."""
    shape = draw(kit.shape(min_side=draw(kit.st.sampled_from([1, 1, 1, 0]))))
    return kit.Signature((dtype,), (shape,), {}, component_dtype(dtype))


def numpy_complex(lhs, rhs):
    """The numpy backend: a complex array of the operands' precision, set part by part."""
    return complex_array(lhs, rhs, "complex64" if lhs.dtype == np.float32 else "complex128")


def lax_complex(lax, attrs):
    return lambda lhs, rhs: lax.complex(lhs, rhs)


@op("complex", version=1, draw=draw_complex, numpy=numpy_complex, lax=lax_complex)
def oracle_complex(lhs, rhs):
    """XLA Complex: ``lhs + rhs i``, each part a copy (set part by part: an infinite ``rhs``
    is not multiplied by ``i``)."""
    return (complex_array(lhs, rhs),)


def lax_part(lax, attrs, *, bound):
    """jax.lax.real and lax.imag accept complex operands only: a float operand, which XLA's
    text allows ('if the operand is a floating-point type, returns the same value' / '0'), is a
    jax primitive lowered to ``stablehlo.real`` / ``stablehlo.imag`` itself."""
    import jax
    from jax.extend.core import Primitive
    from jax.extend.mlir.dialects import stablehlo
    from jax.interpreters import mlir

    prim = Primitive(f"xla_{bound.__name__}")
    prim.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
    part = stablehlo.RealOp if bound.__name__ == "real" else stablehlo.ImagOp
    mlir.register_lowering(prim, lambda ctx, x: [part(x).result])
    lowered = jax.jit(prim.bind)   # (a primitive with no eager rule: `conform repro` runs it eagerly)
    # chosen per traced operand: the jax backend reuses one traced function for every dtype
    return lambda x: bound(x) if np.issubdtype(x.dtype, np.complexfloating) else lowered(x)


@op("real", version=1, draw=draw_part, lax=lax_part)
def oracle_real(operand):
    """XLA Real: ``real(x)``; a float operand is returned as it is."""
    return (np.real(operand).astype(np.float64),)


@op("imag", version=1, draw=draw_part, lax=lax_part)
def oracle_imag(operand):
    """XLA Imag: ``imag(x)``; a float operand gives +0 (the text: 'returns 0')."""
    return (np.imag(operand).astype(np.float64) if np.iscomplexobj(operand)
            else np.zeros(np.shape(operand)),)
