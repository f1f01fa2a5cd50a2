"""ONNX's control-flow operators with generated subgraphs (ai.onnx If and Loop; conform builds at
opset 21), written from their operator texts (``onnx.defs.get_schema``).

A branch of If and the body of Loop are short chains of ops from :data:`BODY_OPS`, each lowered
to ONNX by its own op's lowering (``graph.lower``). They are the catalog's ops whose result in
the value type the standard defines exactly: IEEE 754 addition, subtraction, multiplication,
division and square root are correctly rounded (§5.4.1), negation and absolute value copy or
flip a sign bit, and integer arithmetic, minimum and maximum are exact where no result
overflows (``values_if`` and ``values_loop`` halve the integer inputs until none does). So the
oracle evaluates the chain node by node in float64 (exact integers) and rounds each node's
result once to the value type (:func:`as_value`): for +, -, *, / and sqrt of float16, bfloat16
and float32 operands that is the correctly rounded result, since float64's 53 bits are at
least 2p + 2 (Figueroa, "When is double rounding innocuous?", SIGNUM 1995); float64 operations
are float64's own. bool bodies are And, Or, Xor and Not (one truth value each), and the
types ONNX has no arithmetic for (string, float 8 and 4, 2- and 4-bit integers, complex) are
moved by Identity, a copy. Every output is then judged bit for bit (a NaN matches any NaN).
"""
from __future__ import annotations

import numpy as np

from conform.ops.elementwise import unsigned64
from conform.ops.numpy_computation import numpy_chain
from conform.ops.optional_inputs import ABSENT, absent, by_name, onnx_operands
from conform.op_registry import definition, op
from conform.dtypes import FLOAT_FORMATS, int_info, round_to_format

#: The ops a branch or body is drawn from: (arity, dtype classes whose result is exact; see
#: :func:`value_class`). Max and Min are left out for floats (the ONNX text orders neither -0
#: and +0 nor NaN), Div for integers (division by zero), Sqrt for integers (no integer Sqrt),
#: Sub, Neg and Abs for unsigned integers (Neg's schema has no unsigned type; a difference
#: below zero is outside the type). bool bodies are the logical ops, and the types ONNX has no
#: arithmetic for (string, float 8, float 4, 2- and 4-bit integers, complex) move values only:
#: Identity (the ``copy`` op), a copy bit for bit.
BODY_OPS = {
    "onnx_add": (2, ("float", "int", "uint")),
    "onnx_sub": (2, ("float", "int")),
    "onnx_mul": (2, ("float", "int", "uint")),
    "onnx_div": (2, ("float",)),
    "sqrt": (1, ("float",)),
    "negate": (1, ("float", "int")),
    "abs": (1, ("float", "int")),
    "onnx_max": (2, ("int", "uint")),
    "onnx_min": (2, ("int", "uint")),
    "onnx_and": (2, ("bool",)),
    "onnx_or": (2, ("bool",)),
    "onnx_xor": (2, ("bool",)),
    "onnx_not": (1, ("bool",)),
    "copy": (1, ("copy",)),
}
#: The value types of each class (:func:`value_class`); every other type is ``copy``.
VALUE_CLASSES = {"float": ("float16", "bfloat16", "float32", "float64"),
                 "int": ("int8", "int16", "int32", "int64"),
                 "uint": ("uint8", "uint16", "uint32", "uint64"), "bool": ("bool",)}
LOOP_INPUTS = ("v", "w", "x", "m", "cond")
MAX_TRIP = 5


class Overflow(ArithmeticError):
    """An integer result of a body op does not fit the value type (the standard leaves it open)."""


def value_class(dtype: str) -> str:
    """The class of a body's value type: ``float``, ``int``, ``uint``, ``bool``, or ``copy``
    (a type ONNX has no arithmetic for: its bodies move values only)."""
    return next((kind for kind, types in VALUE_CLASSES.items() if dtype in types), "copy")


def body_ops(dtype: str) -> list[str]:
    """The :data:`BODY_OPS` whose result in ``dtype`` is exact."""
    return [name for name, (_, kinds) in BODY_OPS.items() if value_class(dtype) in kinds]


def as_value(result, dtype: str) -> np.ndarray:
    """A body op's exact (float64 or int64) ``result`` as a value of ``dtype``: rounded once to
    nearest even for floats narrower than float64; :class:`Overflow` for an integer result
    out of range; a bool or a moved value as it is."""
    kind = value_class(dtype)
    if kind in ("int", "uint"):
        info = int_info(dtype)
        if np.any(result < info.min) or np.any(result > info.max):
            raise Overflow(f"a {dtype} result is out of range")
        return result
    if kind != "float" or dtype == "float64":
        return result
    return round_to_format(result, FLOAT_FORMATS[dtype])


def run_chain(ops, first, other, dtype: str) -> np.ndarray:
    """The chain ``ops`` applied to ``first`` (each later op to the previous op's result), a
    binary op taking ``other`` as its second operand; each result a value of ``dtype``."""
    value = first
    for name in ops:   # uint64 as stored (the oracle contract widened it to int64)
        operands = unsigned64((value, other)[:BODY_OPS[name][0]], (dtype,))
        if value_class(dtype) in ("int", "uint"):   # int64 wraps silently: float64 says
            with np.errstate(all="ignore"):
                (rough,) = definition(name).oracle(*(np.asarray(o, np.float64) for o in operands))
            if np.any(np.abs(rough) >= 2.0 ** 62):
                raise Overflow(f"a {dtype} result is out of range")
        (result,) = definition(name).oracle(*operands)
        value = as_value(np.asarray(result), dtype)
    return value


def draw_chain(draw, kit, dtype: str) -> list[str]:
    """1 or 2 of :func:`body_ops` in ``dtype``: a branch's or a body's chain."""
    return draw(kit.st.lists(kit.st.sampled_from(body_ops(dtype)), min_size=1, max_size=2))


def halved_until_exact(compute, inputs: list, dtype: str) -> list:
    """``inputs`` (the value operands of an integer case) halved toward zero until ``compute``
    raises no :class:`Overflow` (all zeros always fit); other types' as they are."""
    if value_class(dtype) not in ("int", "uint"):
        return inputs
    for _ in range(70):
        try:
            compute(inputs)
            return inputs
        except Overflow:
            inputs = [x // 2 if x.dtype.kind == "u" else
                      (np.sign(x) * (np.abs(x.astype(np.int64)) // 2)).astype(x.dtype)
                      for x in inputs]
    raise Overflow(f"{dtype} inputs still overflow after halving")   # unreachable


# ---- If ------------------------------------------------------------------------------------

def draw_if(draw, kit, spec, dtype):
    """cond (bool, 0-d or one element of rank 1), x and y of one shape (0-d and empty too), and
    each branch a chain of 1 or 2 body ops over x (binary ops take y)."""
    st = kit.st
    shape = draw(kit.shape(min_rank=0, max_rank=3, max_side=4,
                           min_side=draw(st.sampled_from((1, 1, 1, 0)))))
    attrs = {"then_branch": draw_chain(draw, kit, dtype),
             "else_branch": draw_chain(draw, kit, dtype)}
    cond = draw(st.sampled_from(((), (1,))))
    return kit.Signature(("bool", dtype, dtype), (cond, shape, shape), attrs, dtype)


def values_if(rng, inputs, attrs):
    """cond true half the time; integer x and y halved until neither branch overflows."""
    cond, x, y = inputs
    cond = np.full(cond.shape, rng.random() < 0.5)
    dtype = x.dtype.name

    def both(xs):
        for key in ("then_branch", "else_branch"):
            run_chain(attrs[key], *(np.asarray(v).astype(np.int64) for v in xs), dtype)

    return [cond, *halved_until_exact(both, [x, y], dtype)]


def lower_chain(sub, case, ops, value: str, other: str, name: str) -> str:
    """Add the chain ``ops`` over graph values ``value`` (and ``other`` for binary ops) to
    subgraph ``sub``, each op by its own lowering; returns the last value's name."""
    for k, op_name in enumerate(ops):
        value = sub.lower(case, op_name, [value, other][:BODY_OPS[op_name][0]], f"{name}_{k}",
                          case.out_dtype)
    return value


def onnx_if(case, graph):
    """If over cond, each branch a subgraph reading x and y from the outer scope."""
    cond, x, y = graph.inputs
    dtype, rank = case.out_dtype, np.ndim(case.inputs[1])
    branches = {}
    for key in ("then_branch", "else_branch"):
        def build(sub, ops=case.attrs[key], key=key):
            sub.node("Identity", [lower_chain(sub, case, ops, x, y, key)], sub.outputs[0])

        branches[key] = graph.subgraph(key, [], [(f"{key}_out", dtype, rank)], build)
    graph.node(graph.op_type, [cond], then_branch=branches["then_branch"],
               else_branch=branches["else_branch"])


def _at(value, index) -> np.ndarray | None:
    """``value``'s element at the trailing positions of output ``index`` (an element-wise
    body or branch), or None where ``index`` is shorter than ``value``'s rank."""
    rank = np.ndim(value)
    if len(index) < rank:
        return None
    return np.ravel(np.asarray(value)[tuple(index[len(index) - rank:])])


def _binary(ops) -> bool:
    return any(BODY_OPS[name][0] == 2 for name in ops)


def feed_if(inputs, attrs, index):
    """out[index] comes from x[index] and, where the chosen branch has a binary op, y[index];
    cond chooses and is no term."""
    cond, x, y = inputs
    chosen = attrs["then_branch" if np.ravel(cond)[0] else "else_branch"]
    return [None, _at(x, index), _at(y, index) if _binary(chosen) else None]


def numpy_of_chain(ops, numpy_of):
    """The numpy backend's chain: each op by its own op's NumPy computation in the value type
    (:func:`conform.ops.numpy_computation.numpy_chain`)."""
    return numpy_chain([(name, BODY_OPS[name][0]) for name in ops], numpy_of)


def numpy_if(cond, x, y, *, then_branch, else_branch, numpy_of):
    """The numpy backend: a Python ``if`` on cond's element choosing the chain."""
    chosen = then_branch if np.ravel(cond)[0] else else_branch
    return numpy_of_chain(chosen, numpy_of)(x, y)


@op("onnx_if", version=1, draw=draw_if, values=values_if, onnx=onnx_if, feeding=feed_if,
    numpy=numpy_if)
def oracle_if(cond, x, y, *, then_branch, else_branch, dtypes):
    """'If conditional': the then_branch's outputs where cond is true, else the
    else_branch's; each branch's chain evaluated node by node (:func:`run_chain`)."""
    chosen = then_branch if bool(np.asarray(cond).reshape(-1)[0]) else else_branch
    return (run_chain(chosen, x, y, dtypes[1]),)


# ---- Loop ----------------------------------------------------------------------------------

def draw_loop(draw, kit, spec, dtype):
    """Two loop-carried values v and w and an outer-scope x of one shape, the trip count M
    (int64, 0-d) and cond (bool, 0-d) each present or absent (never both absent: that loop
    never ends), the body's chains ``body`` (v' = chain(v, x)) and ``carry`` (w' =
    chain(w, v_in): the incoming v, not v'), each of 1 or 2 body ops, and ``until``: none (the
    body passes cond on) or k (the body's cond is iteration_num < k; ignored without a cond
    input, as the text's for-loop form says), always some k without M."""
    st = kit.st
    shape = draw(kit.shape(min_rank=0, max_rank=3, max_side=4,
                           min_side=draw(st.sampled_from((1, 1, 1, 0)))))
    gone = draw(st.sampled_from(((), ("m",), ("cond",), ())))
    until = draw(st.sampled_from((None, 0, 1, 3))) if "m" not in gone \
        else draw(st.integers(0, MAX_TRIP - 1))
    attrs = kit.with_absent({"body": draw_chain(draw, kit, dtype),
                             "carry": draw_chain(draw, kit, dtype), "until": until}, gone)
    typed = {"v": (dtype, shape), "w": (dtype, shape), "x": (dtype, shape), "m": ("int64", ()),
             "cond": ("bool", ())}
    kept = [typed[name] for name in LOOP_INPUTS if name not in gone]
    return kit.Signature(tuple(t for t, _ in kept), tuple(s for _, s in kept), attrs, dtype)


def values_loop(rng, inputs, attrs):
    """M in [-1, 5], cond true 6 times in 7, and integer v, w and x halved until no iteration
    overflows."""
    named = by_name(LOOP_INPUTS, inputs, absent(attrs))
    if "m" in named:
        named["m"] = np.asarray(rng.integers(-1, MAX_TRIP + 1), np.int64)
    if "cond" in named:
        named["cond"] = np.asarray(rng.random() < 6 / 7)
    dtype, carried = named["v"].dtype.name, ("v", "w", "x")

    def loop(values):
        trial = dict(named, **{n: x.astype(np.int64) for n, x in zip(carried, values)})
        oracle_loop(*[trial[n] for n in LOOP_INPUTS if n in trial],
                    **{k: v for k, v in attrs.items() if k != ABSENT}, dtypes=(dtype,),
                    absent_inputs=absent(attrs))

    halved = halved_until_exact(loop, [named[n] for n in carried], dtype)
    named.update(zip(carried, halved))
    return [named[n] for n in LOOP_INPUTS if n in named]


def onnx_loop(case, graph):
    """Loop over M, cond, v and w; the body (iteration_num, cond, v, w) -> (cond, v', w', v',
    iteration_num) reads x from the outer scope, its last two outputs scanned."""
    named = by_name(LOOP_INPUTS, graph.inputs, absent(case.attrs))
    dtype, rank, until = case.out_dtype, np.ndim(case.inputs[0]), case.attrs["until"]

    def build(sub):
        i, cond_in, v_in, w_in = sub.inputs
        cond_out, v_out, w_out, v_scan, i_scan = sub.outputs
        value = lower_chain(sub, case, case.attrs["body"], v_in, named["x"], "body")
        sub.node("Identity", [value], v_out)
        sub.node("Identity", [lower_chain(sub, case, case.attrs["carry"], w_in, v_in, "carry")],
                 w_out)
        sub.node("Identity", [value], v_scan)
        sub.node("Identity", [i], i_scan)
        if until is None:
            sub.node("Identity", [cond_in], cond_out)
        else:
            sub.node("Less", [i, sub.const("body_until", until)], cond_out)

    tensor = lambda name: (name, dtype, rank)   # noqa: E731
    body = graph.subgraph("body", [("body_i", "int64", 0), ("body_cond", "bool", 0),
                                   tensor("body_v"), tensor("body_w")],
                          [("body_cond_out", "bool", 0), tensor("body_v_out"),
                           tensor("body_w_out"), tensor("body_v_scan"),
                           ("body_i_scan", "int64", 0)], build)
    operands = onnx_operands([named.get("m"), named.get("cond")])
    graph.node(graph.op_type, operands + [""] * (2 - len(operands)) + [named["v"], named["w"]],
               body=body)


def _trips(named, until) -> int:
    """The number of iterations the loop runs (:func:`iterate` without a body)."""
    return iterate(lambda i, c, v: (c if until is None else i < until, v, None), None,
                   named.get("m"), named.get("cond"))[2]


def feed_loop(inputs, attrs, index, output=0):
    """An element of v_final (output 0) or of an iteration's scan (2) comes from v's element
    at its position and, where the body has a binary op and an iteration ran, x's; of w_final
    (1) from w's, and where ``carry`` is binary v's (and x's from the second iteration on, if
    the body is binary too); iterations (3) from none. M and cond decide how many iterations
    run and are no terms."""
    named = by_name(LOOP_INPUTS, inputs, absent(attrs))
    count = _trips(named, attrs["until"])
    body, carry = _binary(attrs["body"]), _binary(attrs["carry"])
    terms = ({"v"} | ({"x"} if count and body else set())) if output in (0, 2) else \
        {"w"} | ({"v"} if count and carry else set()) | \
        ({"x"} if count > 1 and carry and body else set()) if output == 1 else set()
    return [_at(named[n], index) if n in terms else None for n in LOOP_INPUTS if n in named]


def iterate(step, carried: tuple, trips=None, cond=None) -> tuple[tuple, list, int]:
    """Loop's iteration rule, as the text's C code gives it: ``for (i = 0; i < M && cond;
    ++i)``, without M no bound, without cond no condition, and the body's cond output
    ignored without a cond input ('input (trip_count, \"\") ... cond = ...; // ignored').
    ``step(i, cond_in, carried) -> (cond_out, carried, scanned)``. Returns the final carried
    values, each iteration's scanned values and the number of iterations run."""
    keep, i, scans = True if cond is None else bool(cond), 0, []
    while keep and (trips is None or i < int(trips)):
        cond_out, carried, scanned = step(i, keep, carried)
        scans.append(scanned)
        if cond is not None:
            keep = bool(cond_out)
        i += 1
    return carried, scans, i


def canonical_loop(outputs, case):
    """With no iteration run the scan outputs hold no element and the text gives them no
    element shape (no body ran to give one): an empty scan of the right rank, first dimension
    0, stands for the oracle's (0, *v.shape). Every other output is left as it is."""
    v_final, w_final, scan, iterations = outputs
    expected = (0, *np.shape(case.inputs[0]))
    if scan.size == 0 and scan.ndim == len(expected) and scan.shape[:1] == (0,):
        scan = scan.reshape(expected)
    return [v_final, w_final, scan, iterations]


def numpy_loop(v, w, x, *rest, body, carry, until, numpy_of, absent_inputs=()):
    """The numpy backend: :func:`iterate`'s Python loop over the chains, the scans stacked
    with ``np.stack`` (none: an empty array of v's dtype)."""
    named = by_name(LOOP_INPUTS, (v, w, x, *rest), absent_inputs)
    step_v, step_w = numpy_of_chain(body, numpy_of), numpy_of_chain(carry, numpy_of)

    def step(i, cond_in, carried):
        v_in, w_in = carried
        v_out = step_v(v_in, x)
        return (cond_in if until is None else i < until), (v_out, step_w(w_in, v_in)), v_out

    (v, w), scans, count = iterate(step, (v, w), named.get("m"), named.get("cond"))
    scan = np.stack(scans) if scans else np.zeros((0, *np.shape(v)), v.dtype)
    return v, w, scan, np.arange(count, dtype=np.int64)


@op("onnx_loop", version=1, draw=draw_loop, values=values_loop, onnx=onnx_loop,
    draw_honours=frozenset({"optional", "scalar"}), feeding=feed_loop, canonical=canonical_loop,
    value_dependent_shape=True, numpy=numpy_loop)
def oracle_loop(v, w, x, *rest, body, carry, until, dtypes, absent_inputs=()):
    """'Generic Looping construct' (:func:`iterate`): the body v' = chain(v, x), w' =
    chain(w, v) (the incoming v), its cond output cond_in passed on (``until`` None) or
    iteration_num < until. Returns the final v and w, the scan of each iteration's v' (stacked
    on a new first axis) and of iteration_num."""
    named = by_name(LOOP_INPUTS, (v, w, x, *rest), absent_inputs)

    def step(i, cond_in, carried):
        v_in, w_in = carried
        v_out = run_chain(body, v_in, x, dtypes[0])
        w_out = run_chain(carry, w_in, v_in, dtypes[0])
        return (cond_in if until is None else i < until), (v_out, w_out), v_out

    (v, w), scans, count = iterate(step, (v, w), named.get("m"), named.get("cond"))
    scan = np.stack(scans) if scans else np.zeros((0, *np.shape(v)), np.asarray(v).dtype)
    return v, w, scan, np.arange(count, dtype=np.int64)
