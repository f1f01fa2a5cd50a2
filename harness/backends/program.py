"""What a backend computes under contract 3: a :class:`Program`, a read-only view of one case.

A case is a program of one node (one op) or of several (a chain of ops, each node's output an
output of the program). The view answers in plain names, strings and tuples, so that an adapter
computes it without knowing conform's spec or case classes; it is made for every case the run
hands a backend, so it copies nothing and works out each member only when it is read.
"""
from __future__ import annotations

from conform.spec.program_nodes import node_cases, program_nodes


class Node:
    """One op applied in a :class:`Program`.

    * ``op``: the op's name (``conform list`` shows them all, ``conform list --format json``
      their signatures),
    * ``attrs``: its attributes (a dict, named as the op's spec names them; do not modify it),
    * ``inputs``: the names of the values it takes, in the op's operand order: program inputs
      (:attr:`Program.input_names`) or outputs of earlier nodes,
    * ``outputs``: the names of the values it makes, in the op's output order,
    * ``out_dtypes``: the dtype name of each of its outputs.
    """

    __slots__ = ("op", "attrs", "inputs", "outputs", "out_dtypes")

    def __init__(self, op: str, attrs: dict, inputs: tuple, outputs: tuple, out_dtypes: tuple):
        self.op, self.attrs, self.inputs = op, attrs, inputs
        self.outputs, self.out_dtypes = outputs, out_dtypes

    def __repr__(self) -> str:
        return (f"Node(op={self.op!r}, attrs={self.attrs!r}, inputs={self.inputs!r}, "
                f"outputs={self.outputs!r}, out_dtypes={self.out_dtypes!r})")


def case_devices(spec, case) -> int:
    """The devices ``case`` of ``spec`` runs on: what the op's ``devices`` hook says (a
    collective's case holds every replica, one device each), else 1."""
    hook = spec.definition.devices
    return 1 if hook is None else int(hook(case.attrs))


class Program:
    """One case as what to compute: the values a backend is handed (``input_names``, in
    ``input_dtypes``), the nodes that compute, and the values it returns (``outputs``, in
    ``out_dtypes``). See the table in docs/adapters.md.

    ``spec`` (the op's or program's spec) and ``case`` (the :class:`conform.generators.Case`)
    are escape hatches into conform's own objects, for conform's model builders and for what
    the other members do not say; they may change between conform versions.
    """

    __slots__ = ("spec", "case", "_nodes")

    def __init__(self, spec, case):
        self.spec, self.case = spec, case
        self._nodes = None

    @property
    def op(self) -> str:
        """The op's name; for a program of several nodes, the program's name (e.g.
        ``chain__exp__tanh``)."""
        return self.spec.op

    @property
    def is_chain(self) -> bool:
        """Whether the case is a program of several ops (else one node, the op itself)."""
        return len(self.nodes) > 1

    @property
    def attrs(self) -> dict:
        """The case's attributes (of the op; a chain's nodes carry their own in ``nodes``)."""
        return self.case.attrs

    @property
    def devices(self) -> int:
        """The number of devices the case runs on (one per replica of a collective; 1 for any
        other op): a backend whose ``device_count`` is smaller never receives it."""
        return case_devices(self.spec, self.case)

    @property
    def dtype(self) -> str:
        """The dtype label the case belongs to (``float32``, or ``float32->int32`` for a
        conversion)."""
        return self.case.dtype

    @property
    def input_names(self) -> tuple[str, ...]:
        """The names of the program's inputs, one per array in ``inputs`` (an op's optional
        input that the case leaves out is not among them, ``attrs["absent_inputs"]`` names
        it; a variadic last input's further arrays are numbered: ``start_indices.1``, ...)."""
        return self.spec.input_names(self.case)

    @property
    def input_dtypes(self) -> tuple[str, ...]:
        """The dtype name of each input."""
        return self.case.input_dtypes

    @property
    def outputs(self) -> tuple[str, ...]:
        """The names of the values to return, in order: the op's outputs, or every node's."""
        return self.spec.outputs

    @property
    def out_dtypes(self) -> tuple[str, ...]:
        """The dtype name of each output (``conform.dtypes.np_dtype`` gives NumPy's)."""
        return self.spec.out_dtypes(self.case)

    @property
    def nodes(self) -> tuple[Node, ...]:
        """The nodes, in the order they compute: one for an op, one per op for a chain."""
        if self._nodes is None:
            self._nodes = self._make_nodes()
        return self._nodes

    def _make_nodes(self) -> tuple[Node, ...]:
        spec, case = self.spec, self.case
        return tuple(Node(node.spec.op, node.attrs, node.inputs, node.outputs,
                          node.spec.out_dtypes(node_at))
                     for node, node_at in zip(program_nodes(spec, case), node_cases(spec, case)))

    def __repr__(self) -> str:
        return (f"Program(op={self.op!r}, input_names={self.input_names!r}, "
                f"input_dtypes={self.input_dtypes!r}, outputs={self.outputs!r}, "
                f"out_dtypes={self.out_dtypes!r}, nodes={self.nodes!r})")


def evaluate(program: Program, inputs, compute) -> list:
    """The program's outputs, node by node: ``compute(node, arrays)`` returns a node's outputs
    (a sequence, one array per name in ``node.outputs``) from the arrays it takes. An adapter
    that computes ops one at a time runs a chain with it."""
    values = dict(zip(program.input_names, inputs))
    for node in program.nodes:
        values.update(zip(node.outputs, compute(node, [values[name] for name in node.inputs])))
    return [values[name] for name in program.outputs]
