"""The generic drawer: it interprets an op's ``signature`` (the inputs' shape relation, the rank
bounds and the attribute domains) for every op whose module gives no ``draw`` hook.

Shape relations (``signature.shapes``):

* ``equal``: every input has the drawn shape (0-d, empty and >= 8-element shapes included);
* ``onnx_broadcast``: ONNX multidirectional (NumPy) broadcasting: each input drops some leading
  dimensions of the drawn shape and has size 1 in some others;
* ``nnef_broadcast``: NNEF's: a shape stands for itself followed by any number of singleton
  dimensions (NNEF 1.0, ch. 2), so each input drops some *trailing* dimensions and has size 1 in
  some others.

An input declared ``{name, type}`` with a dtype as its type (``bool`` for a condition) has that
dtype; every other input has the case's (type ``T``).

Attribute domains (``signature.attrs``; a plain value is fixed): ``{choice: [...]}``,
``{range: [lo, hi]}``, ``{axis_of: INPUT}`` (in ``[0, rank)``, or ``[-rank, rank)`` with
``negative: true``), ``{axes_of: INPUT, min_size: n}`` (distinct axes, each possibly negative with
``negative: true``) and ``{permutation_of: INPUT}``.
"""
from __future__ import annotations

from conform.generators import kit

st = kit.st

RELATIONS = ("equal", "onnx_broadcast", "nnef_broadcast")


def draw_signature(draw, spec, dtype: str) -> kit.Signature:
    """A signature of ``spec`` under ``dtype`` as its ``signature`` declares it."""
    lo, hi = kit.ranks(spec)
    full = draw(kit.shape(min_rank=lo, max_rank=hi, min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    relation = spec.signature.get("shapes", "equal")
    count = len(spec.inputs)
    shapes = ((full,) * count if relation == "equal"
              else tuple(_broadcastable(draw, full, leading=relation == "onnx_broadcast")
                         for _ in range(count)))
    ranks = dict(zip(spec.inputs, map(len, shapes)))
    attrs = kit.attributes(draw, spec, ranks)
    input_dtypes = tuple(dtype if kind == "T" else kind for kind in spec.input_types)
    return kit.Signature(input_dtypes, shapes, attrs, kit.out_dtype(spec, dtype))


def _broadcastable(draw, full: tuple, *, leading: bool) -> tuple:
    """A shape that broadcasts to ``full``: some dimensions dropped (leading ones for NumPy's
    rule, trailing ones for NNEF's) and some of the rest set to 1."""
    kept = len(full) - draw(st.integers(0, len(full)))
    dims = full[len(full) - kept:] if leading else full[:kept]
    return tuple(1 if size != 1 and draw(st.integers(0, 3)) == 0 else size for size in dims)
