"""ONNX AffineGrid (20+) and GridSample (16: 4-D, bilinear/nearest/bicubic; 20+: N-D,
linear/nearest/cubic), written from their texts (``onnx.defs.get_schema(name, N).doc``).

AffineGrid: positions 'evenly spaced in the original 2D or 3D space, with dimensions ranging
from -1 to 1' (align_corners 1: -1 and 1 are the corner pixels' centres, ``-1 + 2 i / (n - 1)``;
0: their outer edges, ``(2 i + 1) / n - 1``), each mapped by ``theta`` in homogeneous form;
the output's last axis holds ``(x', y'[, z'])``, x along the innermost axis.

GridSample: each grid vector (innermost axis first) is unnormalised per axis of size ``n``
(align_corners 1: ``(g + 1) / 2 (n - 1)``; 0: ``((g + 1) n - 1) / 2``) and X is read at the
integer positions the mode needs; a position outside ``[0, n)`` holds 0 (zeros), the border
element (border), or the element at the position 'reflected by the border' until in bound
(reflection: about the corner pixels' centres, 0 and n - 1, under align_corners 1, about their
outer edges, -1/2 and n - 1/2, under 0: the text's borders -1 and 1). linear weighs the 2**r
neighbours by ``1 - |d|``; nearest takes the nearest position ('rounds to the nearest even index
when the sampling point falls halfway', 20+); cubic weighs 4**r neighbours by Keys' kernel with
a = -0.75 (the text names no coefficient; it points at torch.nn.functional.grid_sample, whose
bicubic is Keys' with a = -0.75).
"""
from __future__ import annotations

import itertools

import numpy as np

from conform.dtypes import FLOAT_FORMATS, complex_array, component_dtype, is_complex
from conform.op_registry import op, region
from conform.ops._lowering import unsupported
from conform.ops.error_bounds import (gamma, judged_bound, parts_magnitude, reaches_max_finite,
                                      underflow_term)
from conform.ops.movement import text_zero
from conform.ops.onnx_detection import lower_with

# --- AffineGrid -----------------------------------------------------------------------------


def base_positions(n: int, align_corners: int) -> np.ndarray:
    """The ``n`` evenly spaced positions of one axis in [-1, 1]."""
    i = np.arange(n, dtype=np.float64)
    if align_corners:
        return -1 + 2 * i / (n - 1) if n > 1 else np.zeros(1)
    return (2 * i + 1) / n - 1


def affine_grid(theta: np.ndarray, size, align_corners: int, magnitudes: bool = False):
    """``(N, [D,] H, W, r)``: ``theta[n] @ (x, y[, z], 1)`` at every position (``magnitudes``:
    the same with every term's magnitude)."""
    spatial = [int(s) for s in np.asarray(size).ravel()[2:]]
    axes = [base_positions(s, align_corners) for s in reversed(spatial)]   # x, y[, z]
    points = np.stack(np.meshgrid(*axes[::-1], indexing="ij")[::-1], axis=-1)
    homogeneous = np.concatenate([points, np.ones(points.shape[:-1] + (1,))], axis=-1)
    if magnitudes:
        homogeneous, theta = np.abs(homogeneous), np.abs(theta)
    return np.einsum("nij,...j->n...i", theta, homogeneous)


def affine_grid_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """|err| <= gamma_(r+1) S + sum_j |theta_ij| d + u |y|: the text's r + 1 terms (Higham 2002,
    Lemma 3.1), S their magnitudes; each position off by d = gamma_4 * 3 (the position formula:
    a product, a quotient and a sum of magnitudes up to 3, in the output's type)."""
    theta, size = inputs
    r = theta.shape[1]
    magnitude = affine_grid(theta, size, attrs.get("align_corners", 0), magnitudes=True)
    drift = np.abs(theta[:, :, :r]).sum(axis=-1) * gamma(4, u) * 3
    drift = drift.reshape(drift.shape[:1] + (1,) * r + drift.shape[1:])
    (y,) = outputs
    bound = gamma(r + 1, u) * magnitude + drift + u * np.abs(y) + underflow_term(r, out_dtype)
    return (judged_bound(bound, y),)


def draw_affine_grid(draw, kit, spec, dtype):
    """2-D or 3-D: theta ``(N, 2, 3)`` or ``(N, 3, 4)`` and the 1-D int64 size; the sizes
    themselves from ``values_affine_grid``."""
    st = kit.st
    r, n = draw(st.sampled_from([2, 2, 3])), draw(st.integers(1, 2))
    attrs = kit.attributes(draw, spec, {})
    return kit.Signature((dtype, "int64"), ((n, r, r + 1), (r + 2,)), attrs, dtype)


def values_affine_grid(rng, inputs, attrs):
    """Finite theta in [-2, 2]; size (N, C, [D,] H, W), sides 1 to 5 (2 to 5 under
    align_corners 1: one position cannot be both -1 and 1), D 1 to 3."""
    theta, size = inputs
    wide = theta.astype(np.float64)
    theta = np.where(np.isfinite(wide) & (np.abs(wide) <= 2), wide,
                     rng.uniform(-2, 2, theta.shape)).astype(theta.dtype)
    low = 2 if attrs.get("align_corners", 0) else 1
    sides = [int(rng.integers(low, 4 if len(size) == 5 and k == 0 else 6))
             for k in range(len(size) - 2)]
    made = np.array([theta.shape[0], int(rng.integers(1, 4))] + sides, np.int64)
    return [theta, made]


def feed_affine_grid(inputs, attrs, index):
    """grid[n, ..., i] combines row i of theta[n] (with the position's coordinates and 1);
    size only sets the positions."""
    return [inputs[0][index[0], index[-1]], None]


def numpy_affine_grid(theta, size, *, align_corners=0):
    """The numpy backend: ``np.linspace`` positions in theta's type and ``np.matmul``."""
    t = theta.dtype.type
    spatial = [int(s) for s in size[2:]][::-1]
    if align_corners:
        axes = [np.linspace(t(-1), t(1), s, dtype=theta.dtype) if s > 1 else np.zeros(1, theta.dtype)
                for s in spatial]
    else:
        axes = [((np.arange(s) * t(2) + t(1)) / t(s) - t(1)).astype(theta.dtype) for s in spatial]
    grids = list(np.meshgrid(*axes[::-1], indexing="ij"))[::-1]
    points = np.stack(grids + [np.ones_like(grids[0])], axis=-1)
    return np.matmul(points[None, ..., None, :], np.swapaxes(theta, 1, 2)[
        (slice(None),) + (None,) * len(spatial)])[..., 0, :].astype(theta.dtype)


@op("onnx_affine_grid", version=1, draw=draw_affine_grid, draw_honours=frozenset({"attrs"}),
    values=values_affine_grid, feeding=feed_affine_grid, error_bound=affine_grid_bound,
    numpy=numpy_affine_grid, value_dependent_shape=True,
    onnx=lower_with(("theta", "size"), "align_corners"))
def oracle_onnx_affine_grid(theta, size, *, align_corners=0):
    """ONNX AffineGrid-20: ``theta`` applied to the evenly spaced positions of ``size``."""
    return (affine_grid(theta, size, align_corners),)


# --- GridSample -----------------------------------------------------------------------------

#: GridSample-16's mode names -> GridSample-20's.
MODES = {"bilinear": "linear", "bicubic": "cubic", "linear": "linear", "cubic": "cubic",
         "nearest": "nearest"}
KEYS_A = -0.75


def unnormalise(g: np.ndarray, n: int, align_corners: int) -> np.ndarray:
    """The position along an axis of ``n`` elements of the normalised coordinate ``g``."""
    return (g + 1) / 2 * (n - 1) if align_corners else ((g + 1) * n - 1) / 2


def padded(p: np.ndarray, n: int, padding_mode: str, align_corners: int):
    """``(index, inside)``: the element an integer position ``p`` reads, and False where it
    holds 0 (zeros padding outside ``[0, n)``)."""
    inside = (p >= 0) & (p < n)
    if padding_mode == "reflection":
        if align_corners:   # about the corner centres 0 and n - 1: period 2 (n - 1)
            period = max(2 * (n - 1), 1)
            m = np.abs(p) % period
            p = np.where(m > n - 1, period - m, m)
        else:               # about the outer edges -1/2 and n - 1/2: period 2 n
            m = p % (2 * n)
            p = np.where(m >= n, 2 * n - 1 - m, m)
        inside = np.ones_like(inside)
    elif padding_mode == "border":
        inside = np.ones_like(inside)
    return np.clip(p, 0, n - 1).astype(np.int64), inside


def keys(d: np.ndarray) -> tuple:
    """Keys' cubic kernel at ``|d|`` (a = -0.75) and the sum of its monomials' magnitudes."""
    d, a = np.abs(d), KEYS_A
    inner = ((a + 2) * d - (a + 3)) * d * d + 1
    outer = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    inner_m = abs(a + 2) * d ** 3 + abs(a + 3) * d ** 2 + 1
    outer_m = abs(a) * (d ** 3 + 5 * d ** 2 + 8 * d + 4)
    return (np.where(d <= 1, inner, np.where(d < 2, outer, 0.0)),
            np.where(d <= 1, inner_m, np.where(d < 2, outer_m, 0.0)))


def axis_taps(pos: np.ndarray, mode: str) -> list:
    """Per tap of one axis: ``(position, weight, weight's monomial magnitude)``."""
    if mode == "nearest":   # half to even (np.rint)
        return [(np.rint(pos), np.ones_like(pos), np.zeros_like(pos))]
    base = np.floor(pos)
    if mode == "linear":
        return [(base + k, 1 - np.abs(pos - base - k), np.zeros_like(pos)) for k in (0, 1)]
    return [(base + k, *keys(pos - base - k)) for k in (-1, 0, 1, 2)]


def grid_terms(x, grid, attrs: dict):
    """Per combination of taps: ``(weight, weights' error magnitude parts, values)`` with
    values ``(N, C, O...)`` and weights ``(N, 1, O...)``."""
    r, ac = x.ndim - 2, int(attrs.get("align_corners", 0))
    mode, padding = MODES[attrs.get("mode", "linear")], attrs.get("padding_mode", "zeros")
    per_axis = [axis_taps(unnormalise(grid[..., r - 1 - a], x.shape[2 + a], ac), mode)
                for a in range(r)]
    batch = np.arange(x.shape[0]).reshape((-1,) + (1,) * r)
    terms = []
    for combo in itertools.product(*per_axis):
        reads = [padded(p, x.shape[2 + a], padding, ac) for a, (p, _, _) in enumerate(combo)]
        values = np.moveaxis(x[(batch, slice(None)) + tuple(i for i, _ in reads)], -1, 1)
        inside = np.logical_and.reduce([ok for _, ok in reads])[:, None]
        weight = np.prod([w for _, w, _ in combo], axis=0)[:, None]
        terms.append((weight, [(w[:, None], m[:, None]) for _, w, m in combo],
                      np.where(inside, values, text_zero(values))))
    return terms


def grid_sample(x, grid, attrs: dict) -> np.ndarray:
    """``Y``: the weighted sum of each output's taps (an integer, bool or string X's nearest:
    the tap's element itself, 0 or False outside under zeros padding (text: the region
    grid_sample_text_zero); an integer's or bool's linear and cubic values are open,
    :func:`interpolated_integers`)."""
    if x.dtype.kind in "iubO":
        ((_, _, values),) = grid_terms(x, grid, {**attrs, "mode": "nearest"})
        return values.astype(x.dtype)
    if x.dtype.kind == "c":   # each part weighted alike (no complex product: 0 * inf)
        return complex_array(grid_sample(x.real, grid, attrs), grid_sample(x.imag, grid, attrs))
    return sum(w * v for w, _, v in grid_terms(x, grid, attrs))


def interpolated_integers(x, grid, attrs: dict) -> np.ndarray:
    """Every output of an integer or bool X under linear or cubic: the text weights X's
    elements by float weights and gives no rounding of the result to X's type."""
    shape = (x.shape[0], x.shape[1]) + grid.shape[1:-1]
    interpolating = MODES[attrs.get("mode", "linear")] != "nearest"
    return np.full(shape, x.dtype.kind in "iub" and interpolating)


@region
def grid_sample_text_zero(ctx) -> np.ndarray:
    """A string X under zeros padding: the outputs read outside X, where 'zeros: use 0 for
    out-of-bound grid locations' gives a value the text does not define for text (found as
    the zeros of nearest over an X of ones)."""
    x, grid = ctx.inputs
    if x.dtype != object or ctx.attrs.get("padding_mode", "zeros") != "zeros":
        return ctx.none()
    return ctx.oracle_with([np.ones(x.shape), grid.astype(np.float64)]) == 0


def near_tie(x, grid, attrs: dict, dtype: str, opset: int) -> np.ndarray:
    """nearest: outputs whose position along some axis is a rounding tie (open at opset 16,
    whose text names no tie rule) or within ``8 u (|pos| + n)`` of one without being computed
    exactly (a grid value off the 1/64 grid, or too wide for the grid's type): either way."""
    from conform.dtypes import FLOAT_FORMATS

    r, ac = x.ndim - 2, int(attrs.get("align_corners", 0))
    out = np.zeros((x.shape[0], x.shape[1]) + grid.shape[1:-1], bool)
    if MODES[attrs.get("mode", "linear")] != "nearest":
        return out
    precision = FLOAT_FORMATS[dtype].precision if dtype in FLOAT_FORMATS else 53
    for a in range(r):
        g, n = grid[..., r - 1 - a], x.shape[2 + a]
        pos = unnormalise(g, n, ac)
        gap = np.abs(pos - np.floor(pos) - 0.5)
        exact = (g * 64 == np.round(g * 64)) & ((np.abs(g) + 1) * n * 64 < 2.0 ** precision)
        tie = gap == 0
        close = gap <= 8 * 2.0 ** -precision * (np.abs(pos) + n)
        out |= ((close & ~exact) | (tie & (opset < 20)))[:, None]
    return out


def grid_sample_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
    """nearest: 0 (a copy). linear and cubic: |err| <= sum_t (W~_t - |W_t| + gamma_k W~_t) |v_t|
    + r s d + u |y| (+ the products' underflow). W~_t = prod_a (|w_a| + e_a), e_a a cubic
    weight's error (weight_roundings roundings of its monomials' magnitudes; linear's 1 - |d| is
    within gamma_2 |w| of its exact value, counted in k); k = 2 r + T roundings per term (the
    weights and their product, the product with X, the T-term sum in any order: Higham 2002,
    Lemma 3.1); d = gamma_8 ((|g| + 1) n + 1) the error of a position (the unnormalising
    formula, and a reflection's arithmetic), s the interpolant's slope along an axis: at most
    2 M (linear) or 6 (1.5)**(r - 1) M (cubic: Keys' kernel's slope is at most 1.35 and its
    weights' magnitudes sum to at most 1.5), M the largest |X| of the batch. NaN (region
    unbounded_evaluation) where the terms' magnitudes, each weighted by its largest per-axis
    weight (the partial sums of an evaluation one axis at a time), times 1 + gamma_k reach
    max_finite: some orders overflow there."""
    x, grid = inputs
    (y,) = outputs
    mode = MODES[attrs.get("mode", "linear")]
    if mode == "nearest":
        return (judged_bound(np.zeros(y.shape), y),)
    parts = 2 if is_complex(out_dtype) else 1   # complex: its parts alike (parts_magnitude)
    out_dtype = component_dtype(out_dtype)
    r = x.ndim - 2
    terms = grid_terms(x, grid, attrs)
    k = 2 * r + len(terms)
    e = gamma(int(constants.get("weight_roundings", 6)), u)
    bound, total = np.zeros(y.shape), np.zeros(y.shape)
    for weight, per_axis, values in terms:
        wide = np.prod([np.abs(w) + e * m for w, m in per_axis], axis=0)
        magnitude = parts_magnitude(values)
        bound = bound + (wide - np.abs(weight) + gamma(k, u) * wide) * magnitude
        # a separable evaluation (one axis at a time) holds partial sums weighted by one axis
        total = total + np.max([np.abs(w) + e * m for w, m in per_axis], axis=0) * magnitude
    x_magnitude = parts_magnitude(x)
    largest = x_magnitude.max(axis=tuple(range(1, x.ndim))) if x.size else np.zeros(x.shape[0])
    slope = (2.0 if mode == "linear" else 6 * 1.5 ** (r - 1)) * largest
    sizes = np.array(x.shape[2:][::-1], np.float64)    # the grid's innermost-first order
    d = gamma(8, u) * ((np.abs(grid) + 1) * sizes + 1)
    drift = slope.reshape((-1,) + (1,) * r) * d.sum(axis=-1)
    bound = bound + drift[:, None] + u * parts_magnitude(y) \
        + parts * underflow_term(2 * len(terms), out_dtype)
    unbounded = reaches_max_finite(total, out_dtype, gamma_n=gamma(k, u))
    return (judged_bound(bound, y, unbounded=unbounded),)


def draw_grid_sample(draw, kit, spec, dtype, *, opset: int):
    """X of rank r + 2 (r = 2 at opset 16; 1 to 3 from 20), sides 1 to 4; a grid of 1 to 3
    outputs per axis; the spec's attributes, mode nearest for a string X, and at opset 16 for
    any X but a float one (no text there gives an interpolated integer, bool or text); a
    complex X in every mode, its parts sampled alike, the grid in the parts' type."""
    st = kit.st
    r = 2 if opset < 20 else draw(st.sampled_from([1, 2, 2, 3]))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    sides = [draw(st.integers(1, 4 if r < 3 else 3)) for _ in range(r)]
    outs = [draw(st.integers(1, 3)) for _ in range(r)]
    attrs = kit.attributes(draw, spec, {})
    interpolated = dtype in FLOAT_FORMATS or is_complex(dtype)   # complex: parts alike
    if not interpolated and (opset < 20 or dtype == "string"):
        attrs["mode"] = "nearest"   # the one mode whose value the text gives them: a copy
    grid = component_dtype(dtype)   # T2: float types only (complex X: its parts' type)
    grid = grid if grid in FLOAT_FORMATS else "float32"
    return kit.Signature((dtype, grid), ((n, c, *sides), (n, *outs, r)), attrs, dtype)


def values_grid_sample(rng, inputs, attrs):
    """Finite X for linear and cubic (a zero weight times an infinity is NaN in one evaluation
    and nothing in another: the text does not say); grid values on a 1/32 grid, most in
    [-1.25, 1.25], some in [-3.5, 3.5] (repeated reflections), ties of nearest among them."""
    x, grid = inputs
    if MODES[attrs.get("mode", "linear")] != "nearest":
        wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
        fill = rng.uniform(-4, 4, x.shape) + (1j * rng.uniform(-4, 4, x.shape)
                                              if x.dtype.kind == "c" else 0)
        x = np.where(np.isfinite(wide), wide, fill).astype(x.dtype)
    reach = np.where(rng.random(grid.shape) < 0.8, 40, 112)
    made = rng.integers(-reach, reach + 1) / 32
    return [x, made.astype(grid.dtype)]


def feed_grid_sample(inputs, attrs, index):
    """Y[n, c, o...] combines the elements of channel c of batch n at the taps of its grid
    vector's position (after padding; a zeros-padding tap outside X holds 0, no element), each
    once, row-major; and reads that grid vector."""
    x, grid = inputs
    vector = grid[(index[0],) + tuple(index[2:])]
    r, ac = x.ndim - 2, int(attrs.get("align_corners", 0))
    mode, padding = MODES[attrs.get("mode", "linear")], attrs.get("padding_mode", "zeros")
    per_axis = [[padded(np.asarray(p), x.shape[2 + a], padding, ac) for p, _, _ in axis_taps(
        unnormalise(np.asarray(vector[r - 1 - a]), x.shape[2 + a], ac), mode)] for a in range(r)]
    reads = {tuple(int(i) for i, _ in combo) for combo in itertools.product(*per_axis)
             if all(ok for _, ok in combo)}
    flat = sorted(np.ravel_multi_index(tuple(zip(*reads)), x.shape[2:])) if reads else []
    return [x[index[0], index[1]].ravel()[np.asarray(flat, np.int64)], vector]


def numpy_grid_sample(x, grid, *, mode="linear", padding_mode="zeros", align_corners=0):
    """The numpy backend: in X's type, per axis the kernel's taps (``np.rint``, ``np.floor``),
    padding by ``np.clip`` and ``np.abs``/``np.mod`` reflection, and ``np.take_along_axis``
    over the flattened spatial axes (an integer or bool X: unsupported, its positions would be
    computed in X's type; a string X too)."""
    if x.dtype.kind in "iubO":
        raise unsupported("NumPy would compute the positions in X's own (integer, bool or text) type")
    if x.dtype.kind == "c":   # a real weight scales each part (numpy would multiply 0 * inf)
        return complex_array(*(numpy_grid_sample(p, grid, mode=mode, padding_mode=padding_mode,
                                                 align_corners=align_corners)
                               for p in (x.real, x.imag)), dtype=x.dtype.name)
    t, r = x.dtype.type, x.ndim - 2
    mode, one = MODES[mode], t(1)
    flat = x.reshape(x.shape[:2] + (-1,))
    out = np.zeros(x.shape[:2] + grid.shape[1:-1], x.dtype)
    axes = []
    for a in range(r):
        n, g = x.shape[2 + a], grid[..., r - 1 - a].astype(x.dtype)
        pos = (g + one) / t(2) * t(n - 1) if align_corners else ((g + one) * t(n) - one) / t(2)
        axes.append((n, pos))
    shapes = [[-1, 0] if mode == "linear" else [-1] if mode == "nearest" else [-2, -1, 0, 1]
              for _ in range(r)]
    for combo in itertools.product(*shapes):
        weight, index, ok = np.ones_like(axes[0][1]), 0, True
        for (n, pos), k in zip(axes, combo):
            p = np.rint(pos) if mode == "nearest" else np.floor(pos) - t(k)
            if mode != "nearest":
                weight = weight * _kernel(np.abs(pos - p), mode, t)
            i, inside = padded(p.astype(np.int64), n, padding_mode, align_corners)
            index, ok = index * n + i, ok & inside
        picked = np.take_along_axis(flat, index.reshape(len(x), 1, -1), axis=2).reshape(out.shape)
        out += np.where(ok[:, None], weight[:, None] * picked, t(0)).astype(x.dtype)
    return out


def _kernel(d, mode, t):
    if mode == "linear":
        return t(1) - d
    a = t(KEYS_A)
    return np.where(d <= 1, ((a + t(2)) * d - (a + t(3))) * d * d + t(1),
                    ((a * d - t(5) * a) * d + t(8) * a) * d - t(4) * a).astype(d.dtype)


def _register_grid_sample(name: str, opset: int):
    def oracle(x, grid, *, open_elements=False, dtypes=(), **attrs):
        if open_elements:
            tie = near_tie(x, grid, attrs, dtypes[1] if len(dtypes) > 1 else "float64", opset)
            return (tie | interpolated_integers(x, grid, attrs),)
        return (grid_sample(x, grid, attrs),)

    oracle.__doc__ = f"ONNX GridSample-{opset}: X read at the unnormalised grid positions."
    oracle.__name__ = oracle.__qualname__ = f"oracle_{name}"

    def draw(draw_, kit, spec, dtype):
        return draw_grid_sample(draw_, kit, spec, dtype, opset=opset)

    draw.__doc__ = draw_grid_sample.__doc__
    return op(name, version=1, draw=draw, draw_honours=frozenset({"attrs"}),
              values=values_grid_sample, feeding=feed_grid_sample, error_bound=grid_sample_bound,
              numpy=numpy_grid_sample,
              onnx=lower_with(("x", "grid"), "mode", "padding_mode", "align_corners"))(oracle)


oracle_onnx_grid_sample_opset16 = _register_grid_sample("onnx_grid_sample_opset16", 16)
oracle_onnx_grid_sample = _register_grid_sample("onnx_grid_sample", 20)
