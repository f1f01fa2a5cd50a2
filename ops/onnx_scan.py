"""ONNX Scan (opset 11 onward; conform builds at 21) and SequenceMap (opset 17) with generated
bodies, written from their operator texts (``onnx.defs.get_schema``).

A body is made as If's and Loop's are (ops/onnx_control_flow.py): chains of 1 or 2 of
:data:`~conform.ops.onnx_control_flow.BODY_OPS`, ops whose result in the value type the
standard defines exactly, each lowered to ONNX by its own op's lowering and evaluated by the
oracle node by node, each node's float64 (exact integer) result rounded once to the value type
(:func:`~conform.ops.onnx_control_flow.run_chain`). Every output is then judged bit for bit.

Scan's body (two state variables s and w, scan inputs x_1 ... x_m, m = num_scan_inputs):
``s' = update(s, x_1)``, ``w' = carry(w, x_m)``, scan outputs ``y = s'`` and
``z = emit(x_k, s)`` (k = 2 where m > 1: the incoming s). SequenceMap's body, on the i-th
elements a_i (and b_i of a second sequence) and the tensor t: ``first(a_i, b_i or a_i)`` and
``second(a_i, t or a_i)``.
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops.onnx_control_flow import (BODY_OPS, draw_chain, halved_until_exact, lower_chain,
                                           numpy_of_chain, run_chain)
from conform.ops.sequence_values import pack
from conform.ops.onnx_sequence_edit import sequence_of

MAX_SCAN_INPUTS = 3
MAX_ITERATIONS = 4
SCAN_CHAINS = ("update", "carry", "emit")


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def scan(step, states: tuple, scans, *, input_axes, input_directions, output_axes,
         output_directions, empty_outputs) -> tuple:
    """The text's pseudo-code: for t in [0, sequence_length) the body on the states and
    ``scan_j<axis=axis_j>[t]`` (position ``length - 1 - t`` for direction 1: 'reverse
    direction'), each scan output element concatenated along its axis, 'appending or
    prepending' (direction 1: the last iteration's element first). ``step(states, elements) ->
    (states, outputs)``; ``empty_outputs`` the scan outputs of zero iterations. Returns the
    final states and the scan outputs."""
    length = np.shape(scans[0])[_axis(input_axes[0], np.ndim(scans[0]))]
    produced = []
    for t in range(length):
        elements = [np.take(x, length - 1 - t if d else t, axis=_axis(a, np.ndim(x)))
                    for x, a, d in zip(scans, input_axes, input_directions)]
        states, outputs = step(states, elements)
        produced.append(outputs)
    if not produced:
        return (*states, *empty_outputs)
    stacked = []
    for k, (axis, direction) in enumerate(zip(output_axes, output_directions)):
        parts = [outputs[k] for outputs in produced]
        parts = parts[::-1] if direction else parts
        stacked.append(np.stack(parts, axis=_axis(axis, np.ndim(parts[0]) + 1)))
    return (*states, *stacked)


def scan_attrs(attrs: dict, m: int, k: int = 2) -> dict:
    """The axes and directions attributes as the text reads them, defaults filled in: axis 0
    and direction 0 for every one of the m scan inputs and k scan outputs 'if omitted'."""
    get = lambda key, count: list(attrs.get(key) or [0] * count)   # noqa: E731
    return {"input_axes": get("scan_input_axes", m),
            "input_directions": get("scan_input_directions", m),
            "output_axes": get("scan_output_axes", k),
            "output_directions": get("scan_output_directions", k)}


def _empty_scans(shape, attrs: dict, dtype) -> list:
    axes = scan_attrs(attrs, 1)["output_axes"]
    return [np.zeros(np.insert(np.asarray(shape, int), _axis(a, len(shape) + 1), 0)
                     .astype(int).tolist(), dtype) for a in axes]


def draw_scan(draw, kit, spec, dtype):
    """States s and w of one element shape E (rank 0 to 2, empty sides too), 1 to 3 scan inputs
    E with a scan axis of 0 to 4 iterations inserted (every input at its own axis, negative
    too), each optional axes and directions attribute given or omitted, and the body's chains
    ``update``, ``carry`` and ``emit`` (1 or 2 body ops each)."""
    st = kit.st
    element = draw(kit.shape(min_rank=0, max_rank=2, max_side=3,
                             min_side=draw(st.sampled_from((1, 1, 1, 0)))))
    rank, m = len(element), draw(st.integers(1, MAX_SCAN_INPUTS))
    length = draw(st.sampled_from((0, 1, 2, 3, MAX_ITERATIONS)))
    axis = st.integers(-rank - 1, rank)
    attrs = {"num_scan_inputs": m, **{c: draw_chain(draw, kit, dtype) for c in SCAN_CHAINS}}
    for key, count, values in (("scan_input_axes", m, axis), ("scan_output_axes", 2, axis),
                               ("scan_input_directions", m, st.integers(0, 1)),
                               ("scan_output_directions", 2, st.integers(0, 1))):
        if draw(st.booleans()):
            attrs[key] = draw(st.lists(values, min_size=count, max_size=count))
    input_axes = scan_attrs(attrs, m)["input_axes"]
    shapes = [element, element] + [
        tuple(np.insert(np.asarray(element, int), _axis(a, rank + 1), length).astype(int).tolist())
        for a in input_axes]
    return kit.Signature((dtype,) * (2 + m), tuple(shapes), attrs, dtype)


def values_scan(rng, inputs, attrs):
    """Integer states and scan inputs halved until no iteration overflows."""
    dtype = inputs[0].dtype.name
    return halved_until_exact(
        lambda xs: oracle_scan(*[x.astype(np.int64) for x in xs], dtypes=(dtype,), **attrs),
        list(inputs), dtype)


def _scan_step(chains: dict, run):
    """The body: ``(s, w), xs -> (s', w'), (s', z)`` with ``run(chain, first, other)``."""
    def step(states, xs):
        s, w = states
        s_out = run(chains["update"], s, xs[0])
        return (s_out, run(chains["carry"], w, xs[-1])), (s_out, run(chains["emit"],
                                                                     xs[min(1, len(xs) - 1)], s))
    return step


def onnx_scan(case, graph):
    """Scan over s, w and the scan inputs; the body (s, w, x_1 ... x_m) -> (s', w', y, z)."""
    dtype, rank, m = case.out_dtype, np.ndim(case.inputs[0]), case.attrs["num_scan_inputs"]
    tensor = lambda name: (name, dtype, rank)   # noqa: E731

    def build(sub):
        s, w, *xs = sub.inputs
        s_out, w_out, y, z = sub.outputs
        value = lower_chain(sub, case, case.attrs["update"], s, xs[0], "update")
        sub.node("Identity", [value], s_out)
        sub.node("Identity", [value], y)
        sub.node("Identity", [lower_chain(sub, case, case.attrs["carry"], w, xs[-1], "carry")],
                 w_out)
        sub.node("Identity", [lower_chain(sub, case, case.attrs["emit"], xs[min(1, m - 1)], s,
                                          "emit")], z)

    body = graph.subgraph("body", [tensor("body_s"), tensor("body_w")]
                          + [tensor(f"body_x{j}") for j in range(m)],
                          [tensor(f"body_{n}") for n in ("s_out", "w_out", "y", "z")], build)
    attrs = {k: v for k, v in case.attrs.items() if k.startswith(("scan_", "num_"))}
    graph.node(graph.op_type, graph.inputs, body=body, **attrs)


def canonical_scan(outputs, case):
    """With zero iterations no body ran and the text gives the scan outputs ('[] denotes an
    empty tensor') no element shape: an empty scan output of the right rank stands for the
    oracle's (E with a 0 at its axis). Every other output is left as it is."""
    s, w, *scans = outputs
    m = case.attrs["num_scan_inputs"]
    first = case.inputs[2]
    if np.shape(first)[_axis(scan_attrs(case.attrs, m)["input_axes"][0], np.ndim(first))]:
        return list(outputs)
    expected = _empty_scans(np.shape(case.inputs[0]), case.attrs, None)
    return [s, w, *[x.reshape(e.shape) if np.size(x) == 0 and np.ndim(x) == e.ndim else x
                    for x, e in zip(scans, expected)]]


def _slice_element(x, axis: int, direction: int, t: int, length: int, at) -> float:
    """Scan input ``x``'s element read at iteration ``t``, at ``at`` within its slice."""
    element = np.take(x, length - 1 - t if direction else t, axis=_axis(axis, np.ndim(x)))
    return np.asarray(element)[tuple(at)]


def feed_scan(inputs, attrs, index, output=0):
    """The body is element-wise, so an element of an output at position ``at`` of E reads the
    inputs there only: s_final (output 0) from s and, where ``update`` is binary, x_1 at every
    iteration; w_final (1) from w and, where ``carry`` is binary, x_m at every iteration; y (2)
    at iteration t from s and x_1 at iterations 0 ... t; z (3) at iteration t from x_k at t
    and, where ``emit`` is binary, s and (``update`` binary) x_1 at iterations 0 ... t - 1."""
    m = attrs["num_scan_inputs"]
    given = scan_attrs(attrs, m)
    length = np.shape(inputs[2])[_axis(given["input_axes"][0], np.ndim(inputs[2]))]
    binary = {c: any(BODY_OPS[name][0] == 2 for name in attrs[c]) for c in SCAN_CHAINS}
    at, t = list(index), length
    if output >= 2:   # a scan output: its axis holds the iteration
        axis = _axis(given["output_axes"][output - 2], len(index))
        p = at.pop(axis)
        t = length - 1 - p if given["output_directions"][output - 2] else p
    states = {0: output in (0, 2) or (output == 3 and binary["emit"]), 1: output == 1}
    reads: dict = {}   # scan input -> the iterations whose slice feeds the element
    if output in (0, 2) and binary["update"]:
        reads[0] = set(range(length if output == 0 else t + 1))
    if output == 1 and binary["carry"]:
        reads[m - 1] = set(range(length))
    if output == 3:
        reads[min(1, m - 1)] = {t}
        if binary["emit"] and binary["update"]:
            reads.setdefault(0, set()).update(range(t))
    fed = [np.ravel(inputs[k][tuple(at)]) if states[k] else None for k in (0, 1)]
    for j in range(m):
        fed.append(np.asarray([_slice_element(inputs[2 + j], given["input_axes"][j],
                                              given["input_directions"][j], i, length, at)
                               for i in sorted(reads[j])]) if reads.get(j) else None)
    return fed


def numpy_scan(s, w, *xs, num_scan_inputs, update, carry, emit, numpy_of, **attrs):
    """The numpy backend: :func:`scan`'s Python loop over the chains' NumPy computations."""
    chains = {"update": numpy_of_chain(update, numpy_of), "carry": numpy_of_chain(carry, numpy_of),
              "emit": numpy_of_chain(emit, numpy_of)}
    step = _scan_step(chains, lambda chain, a, b: chain(a, b))
    return scan(step, (s, w), xs, **scan_attrs(attrs, num_scan_inputs),
                empty_outputs=_empty_scans(np.shape(s), attrs, s.dtype))


@op("onnx_scan", version=1, draw=draw_scan, values=values_scan, onnx=onnx_scan,
    feeding=feed_scan, canonical=canonical_scan, numpy=numpy_scan)
def oracle_scan(s, w, *xs, num_scan_inputs, update, carry, emit, dtypes, **attrs):
    """'Scan' (:func:`scan`): the states carried through the iterations, s' = update(s, x_1),
    w' = carry(w, x_m); scan outputs y = s' and z = emit(x_k, s) (the incoming s). Returns
    the final s and w and the scan outputs y and z."""
    chains = {"update": update, "carry": carry, "emit": emit}
    step = _scan_step(chains, lambda chain, a, b: run_chain(chain, a, b, dtypes[0]))
    return scan(step, (s, w), xs, **scan_attrs(attrs, num_scan_inputs),
                empty_outputs=_empty_scans(np.shape(s), attrs, np.asarray(s).dtype))


# ---- SequenceMap -----------------------------------------------------------------------------

def _mapped(inputs, sequences: int, extra: bool):
    """(the sequences' elements, one list per sequence, the tensor input or None)."""
    items = list(inputs)
    tensor = items.pop() if extra else None
    n = len(items) // sequences
    return [items[k * n:(k + 1) * n] for k in range(sequences)], tensor


def draw_sequence_map(draw, kit, spec, dtype):
    """1 or 2 sequences of 0 to 4 elements (each element its own shape of one rank, 0 to 2, the
    second sequence's i-th element of the first's shape), a tensor input t (0-d, or all sides 1:
    it broadcasts to every element) or none (always one with empty sequences: a case holds an
    input of its type), and the chains ``first`` and ``second``."""
    st = kit.st
    rank, sequences = draw(st.integers(0, 2)), draw(st.integers(1, 2))
    shapes = [draw(kit.shape(min_rank=rank, max_rank=rank, max_side=3, min_side=0))
              for _ in range(draw(st.sampled_from((0, 1, 2, 3, 4))))]
    extra = draw(st.booleans()) or not shapes
    tensor = [draw(st.sampled_from(((), (1,) * rank)))] if extra else []
    attrs = {"sequences": sequences, "extra": extra, "first": draw_chain(draw, kit, dtype),
             "second": draw_chain(draw, kit, dtype)}
    every = shapes * sequences + tensor
    return kit.Signature((dtype,) * len(every), tuple(every), attrs, dtype)


def values_sequence_map(rng, inputs, attrs):
    """Integer elements halved until no body op overflows."""
    dtype = inputs[0].dtype.name if inputs else "float32"
    return halved_until_exact(
        lambda xs: oracle_sequence_map(*[x.astype(np.int64) for x in xs], dtypes=(dtype,),
                                       **attrs), list(inputs), dtype)


def sequence_map(body, sequences, tensors=(), outputs: int = 1) -> list[list]:
    """The text's rule: for each position i of the first sequence, ``body`` (returning a tuple
    of ``outputs`` values) applied to the i-th element of every sequence and to every tensor
    input whole; per body output, the list of its values in the order of the positions (empty
    lists for an empty first sequence)."""
    results = [body(*[s[i] for s in sequences], *tensors) for i in range(len(sequences[0]))]
    return [[r[k] for r in results] for k in range(outputs)]


def _map(run, elements, tensor) -> tuple:
    """The generated body on each position: (first(a_i, b_i or a_i), second(a_i, t or a_i)),
    with ``run(chain_name, first, other)``; the two output sequences as lists."""
    def body(a, *rest):
        b = rest[0] if len(elements) == 2 else a
        return run("first", a, b), run("second", a, a if tensor is None else tensor)

    return sequence_map(body, elements, outputs=2)


def onnx_sequence_map(case, graph):
    """SequenceMap over the sequences (SequenceConstruct, or SequenceEmpty) and t; the body
    (a, [b], [t]) -> (first(a, b or a), second(a, t or a))."""
    dtype, sequences, extra = case.out_dtype, case.attrs["sequences"], case.attrs["extra"]
    elements, tensor = _mapped(graph.inputs, sequences, extra)
    rank = max([np.ndim(x) for x in case.inputs] or [0])
    operands = [sequence_of(graph, items, dtype, f"sequence{k}")
                for k, items in enumerate(elements)] + ([tensor] if extra else [])
    inputs = [("body_a", dtype, rank)] + ([("body_b", dtype, rank)] if sequences == 2 else []) \
        + ([("body_t", dtype, np.ndim(case.inputs[-1]))] if extra else [])

    def build(sub):
        a, other, t = sub.inputs[0], sub.inputs[sequences - 1], \
            sub.inputs[-1] if extra else sub.inputs[0]
        sub.node("Identity", [lower_chain(sub, case, case.attrs["first"], a, other, "first")],
                 sub.outputs[0])
        sub.node("Identity", [lower_chain(sub, case, case.attrs["second"], a, t, "second")],
                 sub.outputs[1])

    body = graph.subgraph("body", inputs, [("body_first", dtype, rank),
                                           ("body_second", dtype, rank)], build)
    graph.node(graph.op_type, operands, body=body)


def feed_sequence_map(inputs, attrs, index, output=0):
    """Output 0 (``first``) holds first(a_i, b_i or a_i) raveled: its element ``index`` comes
    from a_i's element at that offset and, where ``first`` is binary, b_i's; output 2
    (``second``) from a_i's and, where ``second`` is binary, t's; the shapes from none."""
    sequences, extra = attrs["sequences"], attrs["extra"]
    elements, _ = _mapped(inputs, sequences, extra)
    fed: list = [None] * len(inputs)
    if output not in (0, 2) or not elements[0]:
        return fed
    ends = np.cumsum([np.size(a) for a in elements[0]])
    i = int(np.searchsorted(ends, index[0], side="right"))
    offset = index[0] - (ends[i - 1] if i else 0)
    n, chain = len(elements[0]), attrs["first" if output == 0 else "second"]
    fed[i] = np.ravel(elements[0][i])[offset:offset + 1]
    if any(BODY_OPS[name][0] == 2 for name in chain):
        if output == 0 and sequences == 2:
            fed[n + i] = np.ravel(elements[1][i])[offset:offset + 1]
        elif output == 2 and extra:
            fed[-1] = np.ravel(inputs[-1])
    return fed


def numpy_sequence_map(*inputs, sequences, extra, first, second, numpy_of):
    """The numpy backend: a Python loop over the positions, each chain by its ops' NumPy
    computations; the output sequences packed."""
    chains = {"first": numpy_of_chain(first, numpy_of), "second": numpy_of_chain(second, numpy_of)}
    elements, tensor = _mapped(inputs, sequences, extra)
    firsts, seconds = _map(lambda name, a, b: chains[name](a, b), elements, tensor)
    dtype = inputs[0].dtype if inputs else None
    return (*pack(firsts, dtype), *pack(seconds, dtype))


@op("onnx_sequence_map", version=1, draw=draw_sequence_map, values=values_sequence_map,
    onnx=onnx_sequence_map, feeding=feed_sequence_map,
    numpy=numpy_sequence_map)
def oracle_sequence_map(*inputs, sequences, extra, first, second, dtypes):
    """'Applies a sub-graph to each sample in the input sequence(s)': 'For each i-th element in
    the output, a sample will be extracted from the input sequence(s) at the i-th position and
    the sub-graph will be applied to it', a tensor input given to every application; 'The
    length of the first input sequence will determine the number of samples in the outputs'.
    Returns each output sequence packed (values, shapes)."""
    chains = {"first": first, "second": second}
    elements, tensor = _mapped(inputs, sequences, extra)
    firsts, seconds = _map(lambda name, a, b: run_chain(chains[name], a, b, dtypes[0]),
                           elements, tensor)
    return (*pack(firsts), *pack(seconds))
