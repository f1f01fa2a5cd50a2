"""The generic drawer: it interprets an op's ``signature`` (the inputs' shape relation, the rank
bounds and the attribute domains) for every op whose module gives no ``draw`` hook.

Shape relations (``signature.shapes``):

* ``equal``: every input has the drawn shape (0-d, empty and >= 8-element shapes included);
* ``onnx_broadcast``: ONNX multidirectional (NumPy) broadcasting: each input drops some leading
  dimensions of the drawn shape and has size 1 in some others;
* ``nnef_broadcast``: NNEF's: a shape stands for itself followed by any number of singleton
  dimensions (NNEF 1.0, ch. 2), so each input drops some *trailing* dimensions and has size 1 in
  some others;
* ``xla_broadcast``: XLA's element-wise binary ops (operation semantics, "Element-wise binary
  arithmetic operations"): either both operands have the drawn shape (the plain variant), or one
  has a lower rank and the attribute ``broadcast_dimensions`` maps its dimensions, in increasing
  order, to dimensions of the other's; the mapped dimensions match in size or one of the two is
  1 (degenerate-dimension broadcasting, on either side). A 0-d operand maps no dimension.

An input declared ``scalar: true`` is 0-d whatever the relation. An input declared
``optional: true`` is present in half the signatures; the absent ones are named in the
attribute ``absent_inputs`` (left out when every input is present), and the signature's dtypes
and shapes are those of the present inputs.

An input declared ``{name, type}`` with a dtype as its type (``bool`` for a condition) has that
dtype, one declared with a list of dtypes (a type variable such as ONNX's ``Tind``) one of them,
drawn per signature; every other input has the case's (type ``T``).

Attribute domains (``signature.attrs``; a plain value is fixed): ``{choice: [...]}``,
``{range: [lo, hi]}``, ``{axis_of: INPUT}`` (in ``[0, rank)``, or ``[-rank, rank)`` with
``negative: true``), ``{axes_of: INPUT, min_size: n}`` (distinct axes, each possibly negative with
``negative: true``; none for a 0-d input, which ``min_size: 0`` admits) and
``{permutation_of: INPUT}``.
"""
from __future__ import annotations

from conform.generators import kit

st = kit.st

RELATIONS = ("equal", "onnx_broadcast", "nnef_broadcast", "xla_broadcast")


def draw_signature(draw, spec, dtype: str) -> kit.Signature:
    """A signature of ``spec`` under ``dtype`` as its ``signature`` declares it."""
    lo, hi = kit.ranks(spec)
    full = draw(kit.shape(min_rank=lo, max_rank=hi, min_side=draw(st.sampled_from((1, 1, 1, 0)))))
    relation = spec.signature.get("shapes", "equal")
    count = len(spec.inputs)
    mapped = {}
    if relation == "equal":
        shapes = (full,) * count
    elif relation == "xla_broadcast":
        shapes, mapped = _xla_broadcast(draw, full, count)
    else:
        shapes = tuple(_broadcastable(draw, full, leading=relation == "onnx_broadcast")
                       for _ in range(count))
    scalar = kit.scalar_inputs(spec)
    if scalar:
        shapes = tuple(() if name in scalar else shape for name, shape in zip(spec.inputs, shapes))
    ranks = dict(zip(spec.inputs, map(len, shapes)))
    attrs = kit.attributes(draw, spec, ranks)
    attrs.update(mapped)
    input_dtypes = tuple(dtype if kind == "T" else draw(st.sampled_from(kind))
                         if isinstance(kind, tuple) else kind for kind in spec.input_types)
    absent = kit.absent_inputs(draw, spec)
    if absent:
        kept = [k for k, name in enumerate(spec.inputs) if name not in absent]
        input_dtypes = tuple(input_dtypes[k] for k in kept)
        shapes = tuple(shapes[k] for k in kept)
    return kit.Signature(input_dtypes, shapes, kit.with_absent(attrs, absent),
                         kit.out_dtype(spec, dtype))


def _xla_broadcast(draw, full: tuple, count: int) -> tuple[tuple, dict]:
    """``(shapes, attrs)`` of XLA's binary element-wise ops: equal shapes (half the signatures,
    and always where ``full`` is 0-d), else one operand of lower rank whose dimensions map to
    the increasing ``broadcast_dimensions`` of the other, sizes equal or degenerate (1) on
    either side of a mapped pair; the result has the shape ``full``."""
    lower = draw(st.integers(-count, count - 1))
    if lower < 0 or not full:
        return (full,) * count, {}
    rank = draw(st.integers(0, len(full) - 1))
    mapped = sorted(draw(st.permutations(range(len(full))))[:rank])
    low, high = [], list(full)
    for dim in mapped:
        side = draw(st.integers(0, 5)) if full[dim] != 1 else 0   # 1: low is 1, 2: high is 1
        low.append(1 if side == 1 else full[dim])
        high[dim] = 1 if side == 2 else full[dim]
    shapes = [tuple(high)] * count
    shapes[lower] = tuple(low)
    return tuple(shapes), {"broadcast_dimensions": mapped}


def _broadcastable(draw, full: tuple, *, leading: bool) -> tuple:
    """A shape that broadcasts to ``full``: some dimensions dropped (leading ones for NumPy's
    rule, trailing ones for NNEF's) and some of the rest set to 1."""
    kept = len(full) - draw(st.integers(0, len(full)))
    dims = full[len(full) - kept:] if leading else full[:kept]
    return tuple(1 if size != 1 and draw(st.integers(0, 3)) == 0 else size for size in dims)
