"""XLA While and Conditional (seed 004, "While" and "Conditional"), with generated computations.

A loop body or a branch is a *body*: a short list of catalog ops applied in turn to a value
``v`` (first the computation's first array ``a``): a unary op gives ``op(v)``, a binary op
``op(v, b)``, ``b`` the computation's second array. The case attribute ``body`` (While) or
``branches`` (Conditional, one body per branch) names the ops, like a chain's name spells its
nodes; each entry also carries what its op's spec says (the op's ``jax.lax`` function and fixed
parameters, its implementation-defined regions, whether it orders -0 and +0), so that the
oracle and the lowering need nothing but the case. Body ops are drawn (:func:`body_pool`) from
the ops bound to XLA whose result in the element type the standard defines exactly: element-wise,
of one dtype, judged ``exact`` or correctly rounded (``ulp: 0.5``: IEEE 754 basic operations),
lowered by their ``lax`` function itself (or a hook applying it to operands of one shape).

The oracle evaluates iteration by iteration, each op by its own float64 oracle, and rounds each
op's result once to the element type. For float16, bfloat16 and float32 that equals the correct
rounding of the exact result, since float64 has at least 2p + 2 bits (S. A. Figueroa, "When is
double rounding innocuous?", SIGNUM Newsletter 30(3), 1995: +, -, *, / and sqrt). For float64
the op's float64 oracle is itself IEEE 754 arithmetic on float64 values, correctly rounded with
subnormals honoured, which is the exact result rounded once. Results are judged bit for bit.

Elements whose trajectory meets an op's implementation-defined region (an integer overflow, a
division by zero, a shift out of range) or the sign of a zero that an op leaves open (maximum,
minimum) are open from there on: the oracle marks them (``open_elements``), the spec names the
``oracle_marked`` region.

Subnormals under a flushing backend (``ftz``): a flushed intermediate changes later iterations,
so reading only the inputs as zeros is not enough. The oracle therefore has an ``ftz`` reading,
the judge's flushed reference (``conform.harness.judge.judging.flushed_expectation``): every
input and every op result with its subnormals replaced by zeros of the same sign, as a CPU with
flush-to-zero and denormals-are-zero computes. A flushing backend passes an element matching
either trajectory; an ``ieee`` backend only the one honouring subnormals.
"""
from __future__ import annotations

import functools

import numpy as np

from conform.ops.numpy_computation import numpy_chain
from conform.op_registry import definition, op
from conform.ops.regions import RegionContext, region_mask
from conform.dtypes import (FLOAT_FORMATS, component_dtype, int_info, is_complex, is_integer,
                            np_dtype, result_dtype, round_to_format)
from conform.widening import widen

DRAWN_HERE = frozenset({"scalar"})   # the selector and the counter are 0-d
MAX_BODY = 4        # ops in one body
MAX_TRIPS = 8       # iterations of a While
MAX_BRANCHES = 3    # branch computations of an indexed Conditional (operand pairs in its spec)


# -- bodies -----------------------------------------------------------------------------------

def _bodily(spec, dtype: str) -> bool:
    """Whether ``spec``'s op can be a body op in ``dtype``: XLA-bound, element-wise of one dtype,
    one or two operands of that dtype, lowered by its ``lax`` function (a hook with ``bound``
    applies it to operands of one shape), judged by a model of its own (no accumulation)."""
    found = spec.definition
    lowered = found.lax is None or found.lax_takes_bound
    if not ("xla" in spec.bindings and dtype in spec.dtypes and spec.elementwise
            and spec.output_dtype in ("same", "component")
            and result_dtype(spec.output_dtype, dtype) == dtype and len(spec.outputs) == 1
            and len(spec.inputs) in (1, 2) and not spec.optional_inputs
            and lowered and not spec.signature.get("attrs")
            and all(isinstance(entry, str) for entry in spec.signature["inputs"])):
        return False
    model = spec.model_for(dtype)
    return not model.get("saturate") and bool(
        {"exact", "correctly_rounded", "ulp", "abs_rel"} & set(model))


def exactly_defined(model: dict) -> bool:
    """Whether a model makes an op's result in the type exact: ``exact``, or correctly rounded
    (``correctly_rounded``, or ``ulp: 0.5``: IEEE 754 basic operations)."""
    return bool(model.get("exact") or model.get("correctly_rounded") or model.get("ulp") == 0.5)


def body_pool(catalog, dtype: str, *, exact: bool = True) -> list[dict]:
    """The body entries of every op of ``catalog`` (specs by name) usable in ``dtype``, sorted
    by op name: ``{op, lax, arity}`` plus the binding's ``params``, the op's ``regions`` and
    ``any_zero_sign`` (its model does not order -0 and +0) where it has them. With ``exact``
    only ops whose result the standard fixes (:func:`exactly_defined`); else also the others,
    whose entries carry their ``model`` (only ever a branch's single op: its result is judged
    under that model, and nothing computes on it)."""
    pool = []
    for name in sorted(catalog):
        spec = catalog[name]
        if not _bodily(spec, dtype) or (exact and not exactly_defined(spec.model_for(dtype))):
            continue
        bound, model = spec.bindings["xla"], spec.model_for(dtype)
        entry = {"op": name, "lax": bound["lax"], "arity": len(spec.inputs)}
        if bound.get("params"):
            entry["params"] = dict(bound["params"])
        regions = [r["region"] for r in spec.implementation_defined]
        if regions:
            entry["regions"] = regions
        if model.get("signed_zero") == "any":
            entry["any_zero_sign"] = True
        if not exactly_defined(model):
            entry["model"] = dict(model)
        pool.append(entry)
    return pool


def draw_body(draw, kit, pool: list[dict]) -> list[dict]:
    """1 to MAX_BODY entries of ``pool``."""
    return draw(kit.st.lists(kit.st.sampled_from(pool), min_size=1, max_size=MAX_BODY))


def _round(values: np.ndarray, dtype: str, ftz: bool) -> np.ndarray:
    """``values`` (an op's widened result) as the element type holds them: rounded once to
    nearest even (float64 as is; a complex number part by part), integers wrapped (past an
    overflow the element is open anyway), PRED as it is; under ``ftz`` subnormals become zeros
    of the same sign."""
    if dtype == "bool":
        return np.asarray(values, bool)
    if is_complex(dtype):
        part, out = component_dtype(dtype), np.empty(np.shape(values), np.complex128)
        out.real, out.imag = _round(values.real, part, ftz), _round(values.imag, part, ftz)
        return out
    if is_integer(dtype):
        info = int_info(dtype)
        span = info.max - info.min + 1
        if info.bits == 64:   # as widened: uint64 kept (an op's int64 result wraps into it)
            return np.asarray(values).astype(np.uint64 if info.min == 0 else np.int64)
        return ((values - info.min) % span + info.min).astype(np.int64)
    out = values if dtype == "float64" else round_to_format(values, FLOAT_FORMATS[dtype])
    return _flushed(out, dtype) if ftz else out


def _flushed(values: np.ndarray, dtype: str) -> np.ndarray:
    """``values`` with those below ``dtype``'s normal range read as zeros of the same sign."""
    tiny = np.abs(values) < FLOAT_FORMATS[dtype].min_normal
    return np.where(tiny, np.copysign(0.0, values), values)


def _node_open(entry: dict, operands, exact, result, dtype: str) -> np.ndarray:
    """Elements of one op's result that its standard leaves open: its regions on its operands
    (``exact``: its oracle's result, before rounding or wrapping), and zeros (``result``: as
    the element type holds it) where its model does not order -0 and +0."""
    mask = np.zeros(result.shape, bool)
    if entry.get("any_zero_sign"):
        mask |= result == 0
    if entry.get("regions"):
        oracle = _typed_oracle(entry["op"], dtype, len(operands))
        typed = [np.asarray(x).astype(np_dtype(dtype)) for x in operands]
        ctx = RegionContext(inputs=typed, expected=exact, out_dtype=dtype,
                            float_oracle=lambda xs: oracle(*xs)[0],
                            oracle_with=lambda xs, **more: oracle(*xs, **more)[0], attrs={})
        mask |= region_mask(entry["regions"], ctx)
    return mask


def _typed_oracle(name: str, dtype: str, arity: int):
    """Op ``name``'s oracle on widened operands of ``dtype``, told their type where it takes
    ``dtypes`` (clz counts in the operand's width; float64 gets a reference beyond float64)."""
    found = definition(name)
    if found.takes_dtypes:
        return functools.partial(found.oracle, dtypes=(dtype,) * arity)
    return found.oracle


def run_body(body, a, b, dtype: str, ftz: bool = False):
    """``(v, open)``: the body applied to ``a`` and ``b`` (widened values of ``dtype``), each
    op's result rounded to ``dtype`` (flushed under ``ftz``), and the elements left open."""
    v, opened = a, np.zeros(np.shape(a), bool)
    for entry in body:
        operands = (v,) if entry["arity"] == 1 else (v, b)
        (exact,) = _typed_oracle(entry["op"], dtype, len(operands))(*operands)
        if "model" in entry:   # a single op judged under its own model: its float64 reference
            v = _flushed(np.asarray(exact), dtype) if ftz else np.asarray(exact)
        else:
            v = _round(np.asarray(exact), dtype, ftz)
        opened = opened | _node_open(entry, operands, np.asarray(exact), v, dtype)
    return v, opened


def _start(arrays, dtype: str, ftz: bool) -> list:
    """The computation's arrays as it reads them, widened (inputs flushed under ``ftz``)."""
    return [_round(widen(np.asarray(x).astype(np_dtype(dtype))), dtype, ftz) for x in arrays]


def _element_type(dtypes) -> str:
    return dtypes[1]   # every op here has a selector or counter first, then arrays of one type


def lax_control(lax, attrs):
    """While (``limit``: ``lax.while_loop``), Conditional with a predicate (``lax.cond``) or a
    branch index (``lax.switch``), or Call (the binding's ``call`` param: a jitted function,
    which the enclosing jit calls; with ``composite`` too, CompositeCall: ``lax.composite`` of
    it), each body made of its ops' ``jax.lax`` functions."""
    def body_of(entries):
        def apply(a, b):
            v = a
            for entry in entries:
                fn = getattr(lax, entry["lax"])
                v = fn(v, **entry.get("params", {})) if entry["arity"] == 1 else \
                    fn(v, b, **entry.get("params", {}))
            return v
        return apply

    if attrs.get("call"):   # Call (ops/xla_call.py): the body a computation of its own
        import jax
        called = jax.jit(body_of(attrs["body"]))   # nested in the backend's jit: a func.call
        if attrs.get("composite"):   # CompositeCall: stablehlo.composite, the body its decomposition
            return lax.composite(called, name="conform.body", version=1)
        return called
    if "limit" in attrs:
        limit, step, rotate = attrs["limit"], body_of(attrs["body"]), attrs["rotate"]

        def loop(counter, a, b):
            def iteration(state):
                i, x, y = state
                return i + np.int32(1), step(x, y), x if rotate else y
            return lax.while_loop(lambda state: state[0] < limit, iteration, (counter, a, b))
        return loop
    branches = [body_of(entries) for entries in attrs["branches"]]

    def choose(selector, *operands):
        fns = [lambda ops, k=k, fn=fn: fn(ops[2 * k], ops[2 * k + 1])
               for k, fn in enumerate(branches)]
        if "index" not in attrs:   # Conditional(pred, true_operand, ..., false_operand, ...)
            return lax.cond(selector, fns[0], fns[1], operands)
        return lax.switch(selector, fns, operands)
    return choose


def numpy_body(entries, numpy_of):
    """The numpy backend's body: its ops applied in turn, each by its own op's NumPy
    computation in the element type (:func:`conform.ops.numpy_computation.numpy_chain`)."""
    return numpy_chain([(entry["op"], entry["arity"]) for entry in entries], numpy_of)


# -- While ------------------------------------------------------------------------------------

def _shape(draw, kit):
    """The arrays' shape: rank 0 to 3, one in five with empty sides."""
    return draw(kit.shape(min_rank=0, max_rank=3, max_side=6,
                          min_side=draw(kit.st.sampled_from([1, 1, 1, 1, 0]))))


def draw_while(draw, kit, spec, dtype):
    """A counter (int32 scalar), two arrays of one shape and dtype, a body of 1 to MAX_BODY ops
    of the catalog, a limit, and whether the tuple rotates (``(a, b) -> (body(a, b), a)``)
    or keeps ``b`` (``(a, b) -> (body(a, b), b)``)."""
    st = kit.st
    shape = _shape(draw, kit)
    attrs = {"limit": draw(st.integers(-3, 10)),
             "body": draw_body(draw, kit, body_pool(kit.catalog(), dtype)),
             "rotate": draw(st.booleans())}
    return kit.Signature(("int32", dtype, dtype), ((), shape, shape), attrs, dtype)


def values_while(rng, inputs, attrs):
    """The counter set ``limit - trips`` for trips in [0, MAX_TRIPS], or (one in eight) past
    the limit: no iteration."""
    trips = int(rng.integers(0, MAX_TRIPS + 1))
    start = attrs["limit"] - trips if rng.random() >= 0.125 else attrs["limit"] + 1
    return [np.asarray(start, np.int32), *inputs[1:]]


def feed_while(inputs, attrs, index):
    """Elements feeding one element of an output: for an element of ``a_out`` or ``b_out`` the
    elements of ``a`` and ``b`` at its index (every body op is element-wise); the counter sets
    the trip count and is no term (None), and the counter's output is fed by no array element
    (with 0-d arrays the index cannot tell the outputs apart: their elements are listed)."""
    _, a, b = inputs
    if len(index) != a.ndim:
        return [None, None, None]
    return [None, a[tuple(index)].reshape(1), b[tuple(index)].reshape(1)]


def numpy_while(counter, a, b, *, limit, body, rotate, numpy_of):
    """The numpy backend: a Python ``while`` loop, the counter an int32 NumPy scalar."""
    step, i = numpy_body(body, numpy_of), counter
    while i < limit:
        a, b = step(a, b), (a if rotate else b)
        i = i + np.int32(1)
    return np.asarray(i), a, b


@op("while", version=1, draw=draw_while, draw_honours=DRAWN_HERE, values=values_while,
    lax=lax_control, uses_catalog=True, feeding=feed_while, numpy=numpy_while)
def oracle_while(counter, a, b, *, limit, body, rotate, dtypes, ftz=False,
                 open_elements=False):
    """While(counter < limit) {counter + 1, body(a, b), a or b}: the tuple after the last
    iteration (the init itself if the condition fails at once)."""
    dtype, raw = _element_type(dtypes), (a, b)
    a, b = _start([a, b], dtype, ftz)
    i, opened_a, opened_b = int(counter), np.zeros(a.shape, bool), np.zeros(b.shape, bool)
    while i < limit:
        v, opened = run_body(body, a, b, dtype, ftz)
        opened = opened | opened_a | (opened_b if any(e["arity"] == 2 for e in body) else False)
        a, b, opened_a, opened_b = v, (a if rotate else b), opened, \
            (opened_a if rotate else opened_b)
        i += 1
    if open_elements:
        if not ftz:   # what either reading leaves open is open (the judge accepts either)
            flushed = oracle_while(counter, *raw, limit=limit, body=body, rotate=rotate,
                                   dtypes=dtypes, ftz=True, open_elements=True)
            opened_a, opened_b = opened_a | flushed[1], opened_b | flushed[2]
        return np.zeros((), bool), opened_a, opened_b
    return np.asarray(i, np.int64), a, b


# -- Conditional ------------------------------------------------------------------------------

def _draw_branches(draw, kit, dtype: str, count: int) -> list:
    """``count`` computations: one in three a single op of any model (its own, exp or tanh
    with their ULP bounds), else a body of exactly defined ops."""
    exact, single = body_pool(kit.catalog(), dtype), body_pool(kit.catalog(), dtype, exact=False)
    return [[draw(kit.st.sampled_from(single))] if draw(kit.st.integers(0, 2)) == 0
            else draw_body(draw, kit, exact) for _ in range(count)]


def branch_model(case, output: int):
    """The chosen computation's op's model where it is a single op judged by its own (not
    exactly defined) model; None: the spec's (exact)."""
    chosen = case.attrs["branches"][chosen_branch(case.inputs[0], len(case.attrs["branches"]),
                                                  "index" in case.attrs)]
    return chosen[0].get("model") if len(chosen) == 1 else None


def draw_conditional(draw, kit, spec, dtype):
    """A predicate (bool scalar) and an operand pair for each of the two branches, all arrays
    of one shape and dtype."""
    shape = _shape(draw, kit)
    attrs = {"branches": _draw_branches(draw, kit, dtype, 2)}
    return kit.Signature(("bool",) + (dtype,) * 4, ((),) + (shape,) * 4, attrs, dtype)


def draw_conditional_index(draw, kit, spec, dtype):
    """A branch index (int32 scalar), 1 to MAX_BRANCHES branches, and MAX_BRANCHES operand
    pairs (those of absent branches are inputs no branch reads)."""
    shape = _shape(draw, kit)
    count = draw(kit.st.integers(1, MAX_BRANCHES))
    attrs = {"index": True, "branches": _draw_branches(draw, kit, dtype, count)}
    return kit.Signature(("int32",) + (dtype,) * (2 * MAX_BRANCHES),
                         ((),) + (shape,) * (2 * MAX_BRANCHES), attrs, dtype)


def values_conditional_index(rng, inputs, attrs):
    """The index in [0, N) three times in four, else outside it: negative, N, or the int32
    extremes (the text's default branch)."""
    count = len(attrs["branches"])
    if rng.random() < 0.75:
        index = int(rng.integers(0, count))
    else:
        index = int(rng.choice([-1, -2, count, count + 1, -2**31, 2**31 - 1]))
    return [np.asarray(index, np.int32), *inputs[1:]]


def chosen_branch(selector, count: int, index: bool) -> int:
    """The branch the text runs: the true one (0) if the predicate holds, else 1; for an index,
    branch_computations[index], or the last (the default) for an index < 0 or >= N."""
    if not index:
        return 0 if bool(selector) else 1
    k = int(selector)
    return k if 0 <= k < count else count - 1


def _conditional(selector, operands, branches, index, dtypes, ftz, open_elements):
    dtype = _element_type(dtypes)
    k = chosen_branch(selector, len(branches), index)
    a, b = _start(operands[2 * k:2 * k + 2], dtype, ftz)
    v, opened = run_body(branches[k], a, b, dtype, ftz)
    if open_elements and not ftz:   # what either reading leaves open is open
        opened = opened | run_body(branches[k], *_start(operands[2 * k:2 * k + 2], dtype, True),
                                   dtype, True)[1]
    return (opened,) if open_elements else (v,)


def numpy_conditional(selector, *operands, branches, numpy_of, index=False):
    """The numpy backend: a Python branch choosing the computation (:func:`chosen_branch`),
    run on its own operand pair."""
    k = chosen_branch(selector, len(branches), index)
    return numpy_body(branches[k], numpy_of)(operands[2 * k], operands[2 * k + 1])


@op("conditional", version=1, draw=draw_conditional, draw_honours=DRAWN_HERE, lax=lax_control,
    uses_catalog=True, case_model=branch_model, numpy=numpy_conditional)
def oracle_conditional(pred, true_a, true_b, false_a, false_b, *, branches, dtypes, ftz=False,
                       open_elements=False):
    """Conditional(pred, (true_a, true_b), true_computation, (false_a, false_b),
    false_computation): the computation ``pred`` picks, on its own operand."""
    return _conditional(pred, (true_a, true_b, false_a, false_b), branches, False, dtypes, ftz,
                        open_elements)


def switch_clamps(inputs, attrs) -> str | None:
    """Why jax cannot express a branch index outside [0, N): ``lax.switch`` clamps the index
    into [0, N - 1] before it lowers to XLA's Conditional (jax.lax.switch: "the index is
    clamped"), so XLA's text for such an index (the last branch) is never what runs; a
    negative index runs branch 0. Judging it would judge jax's clamp, not the Conditional."""
    count = len(attrs["branches"])
    index = int(np.asarray(inputs[0]))
    if 0 <= index < count:
        return None
    return (f"lowering artefact: jax's lax.switch clamps branch index {index} into [0, "
            f"{count - 1}] before XLA's Conditional sees it (an index outside [0, N) is not "
            "expressible through lax.switch)")


@op("conditional_index", version=1, draw=draw_conditional_index, draw_honours=DRAWN_HERE,
    values=values_conditional_index, lax=lax_control, lax_refuses=switch_clamps,
    uses_catalog=True, case_model=branch_model, numpy=numpy_conditional)
def oracle_conditional_index(branch_index, *operands, index, branches, dtypes, ftz=False,
                             open_elements=False):
    """Conditional(branch_index, branch_computations, branch_operands): computation
    ``branch_index`` on its operand pair, the last one for an index outside [0, N)."""
    return _conditional(branch_index, operands, branches, index, dtypes, ftz, open_elements)
