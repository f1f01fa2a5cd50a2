"""Every case is a program: the nodes it computes, and the case each node is.

A single-op case is a program of one node (the op on the case's present inputs, with the case's
attributes, giving the op's outputs); a program spec (:mod:`conform.spec.programs`) has several.
The drawer, the oracle, the judge and the model builders walk :func:`program_nodes` alike, with
no branch between the two: :func:`node_cases` gives each node the case it computes, and a
one-node program's node *is* its case (its oracle answer included).
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple


class ProgramNode(NamedTuple):
    """One op applied in a program: its spec, the names of the values it takes (program inputs
    or earlier nodes' outputs), the names of the values it gives, and its attributes (a
    single op's: the case's; a chain's links: the op's fixed ones)."""

    spec: object
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict


def program_nodes(spec, case) -> tuple[ProgramNode, ...]:
    """The nodes ``case`` of ``spec`` computes, in order (``spec.program_nodes``: one for an
    op, one per link for a program)."""
    return spec.program_nodes(case)


def array_names(names: tuple[str, ...], count: int) -> tuple[str, ...]:
    """A name for each of ``count`` input arrays of a case whose present inputs are ``names``:
    those, in order; a variadic last input's further arrays numbered (``start_indices``,
    ``start_indices.1``, ...); none for an optional value the case holds empty."""
    extra = count - len(names)
    if extra <= 0:
        return names[:count]
    last = names[-1] if names else "input"
    return names + tuple(f"{last}.{k}" for k in range(1, extra + 1))


def node_cases(spec, case, values: dict | None = None) -> list:
    """Per node of ``case``'s program, the case it computes: its op on the arrays ``values``
    holds under the names it takes (by default the program's inputs, and for the other values
    an array of the program's first input's shape and dtype: a chain's links keep both).

    A one-node program's node is ``case`` itself."""
    nodes = program_nodes(spec, case)
    if len(nodes) == 1 and nodes[0].inputs == spec.input_names(case):
        return [case]
    known = dict(zip(spec.input_names(case), case.inputs))
    known.update(values or {})
    stand_in = case.inputs[0] if case.inputs else None
    return [node_case(case, node, [known.get(name, stand_in) for name in node.inputs])
            for node in nodes]


def node_case(case, node: ProgramNode, inputs):
    """The case that one node of ``case``'s program is: its op on ``inputs`` (arrays), in the
    case's dtype (a chain's values keep it from end to end), with the node's attributes."""
    dtype = case.out_dtype
    return dataclasses.replace(case, op=node.spec.op, input_dtypes=(dtype,) * len(inputs),
                               inputs=list(inputs), attrs=dict(node.attrs), expectation=None)
