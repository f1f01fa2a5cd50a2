"""One-op NNEF graph documents built from a spec's ``nnef`` binding and a case.

A document is NNEF 1.0 text in the flat syntax (NNEF 1.0, chapter 3): every runtime input is an
``external`` tensor, fed by the executor at run time (never a folded constant), and one invocation
of the bound operation computes ``out0`` (and ``out1``, ... for an op with several outputs). An op's ``nnef`` lowering (in its op module) maps
conform's attributes onto the NNEF operation's attributes and raises :class:`Unsupported` where
NNEF cannot express the case.

NNEF tensors hold ``scalar``, ``integer`` or ``logical`` data and the format leaves their precision
to the implementation; the ``nnef`` package's executor stores them as float32, int32 and bool (its
session takes only those NumPy dtypes), so those are the only dtypes claimed here.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from conform.harness.backends.base import Unsupported, binding
from conform.dtypes import np_dtype
from conform.spec.program_nodes import node_cases, program_nodes
from conform.spec import dtype_class

NNEF_TYPES = {"float32": "scalar", "int32": "integer", "bool": "logical"}

#: The parameter a document declares when no input is fed (``constant`` alone): NNEF's grammar
#: (NNEF 1.0 ch. 3, <graph-declaration>: an <identifier-list> of one identifier at least) gives
#: every graph one parameter at least. It is a ``logical`` of shape [1] that nothing reads.
PLACEHOLDER = "unused"


@dataclass
class Document:
    """An NNEF graph document for one case, and how to feed and read it."""

    text: str                     # the graph.nnef text
    op: str                       # the NNEF operation invoked
    inputs: list[int]             # which of the case's inputs are fed, in graph order
    output_shape: tuple | None = None   # reshape the result to this (reductions drop axes)
    notes: list[str] = field(default_factory=list)
    operations: tuple = ()        # every NNEF operation invoked (a program's several)
    files: dict = field(default_factory=dict)   # label -> array read from <label>.dat
    placeholder: bool = False     # an unused logical parameter is fed last (see PLACEHOLDER)
    out_dtypes: tuple = ()        # the case's output dtypes (an integer result is made one)

    @property
    def files_key(self) -> tuple:
        """The tensor files' contents, hashable: part of a compiled model's key (a session
        holds the variables it read)."""
        return tuple((label, a.dtype.str, a.shape, a.tobytes()) for label, a in self.files.items())

    def write(self, directory: Path | str) -> Path:
        """Write ``graph.nnef`` and the tensor files (``<label>.dat``) into ``directory``
        (created); returns the directory."""
        from conform.harness.backends.nnef_tensors import write_tensor

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "graph.nnef").write_text(self.text, encoding="utf-8")
        for label, array in self.files.items():
            write_tensor(directory / f"{label}.dat", array)
        return directory

    def feeds(self, case) -> list[np.ndarray]:
        """The executor's inputs: contiguous arrays of exactly the graph's dtypes."""
        # the executor copies raw bytes: C order is required (np.ascontiguousarray would make
        # 0-d arrays 1-d)
        return [np.asarray(case.inputs[i], dtype=np_dtype(case.input_dtypes[i]), order="C")
                for i in self.inputs] + [np.zeros((1,), np.bool_)] * self.placeholder

    def finish(self, output: np.ndarray) -> np.ndarray:
        """The executor's output in conform's shape (NNEF reductions keep reduced axes as 1)."""
        return output if self.output_shape is None else output.reshape(self.output_shape)

    def results(self, outputs) -> list[np.ndarray]:
        """The consumer's outputs in conform's shapes, an integer result in the case's integer
        dtype where its values are those of that dtype: NNEF leaves the width of ``integer``
        to the consumer and a document declares no result types, so an int64 consumer's
        index (argmax_reduce's, conform's int32) is the same result. One whose values do not
        fit is left as it came (the judge fails its dtype)."""
        finished = [self.finish(output) for output in outputs]
        for k, (output, dtype) in enumerate(zip(finished, self.out_dtypes)):
            wanted = np_dtype(dtype)
            if output.dtype != wanted and output.dtype.kind in "iu" and wanted.kind in "iu":
                narrowed = output.astype(wanted)
                if np.array_equal(narrowed, output):
                    finished[k] = narrowed
        return finished


@dataclass
class Invocation:
    """What a translator returns: positional arguments, attributes, and output handling."""

    args: list[str]
    attrs: dict = field(default_factory=dict)
    inputs: list[int] | None = None     # default: every input of the case
    output_shape: tuple | None = None
    generic: str | None = None          # the conform dtype of a generic fragment's <type> (cast)
    array_result: bool = False          # the outputs are one tensor<?>[] result's elements
    # label -> index of an input read from the tensor file <label>.dat, not fed: declared by a
    # ``variable`` line where it is an operand (or by the op's own line, for ``variable``)
    files: dict = field(default_factory=dict)
    name: str | None = None             # the operation invoked, where not the binding's own


def literal(value) -> str:
    """``value`` as an NNEF literal: numbers, logicals, strings, arrays and tuples."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return _scalar_literal(float(value))
    if isinstance(value, str):
        return "'" + value + "'"
    if isinstance(value, tuple):
        return "(" + ", ".join(literal(v) for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise TypeError(f"no NNEF literal for {value!r}")


def _scalar_literal(value: float) -> str:
    """A decimal literal that reads back as exactly ``value`` (NNEF has no inf/nan literals)."""
    if not math.isfinite(value):
        raise Unsupported(f"NNEF numeric literals cannot spell {value}")
    text = repr(value)  # shortest round-trip decimal of the double, hence of a float32 too
    return text if any(c in text for c in ".e") else text + ".0"


def _nnef_type(dtype: str, types: dict = NNEF_TYPES) -> str:
    found = types.get(dtype)
    if found is None:
        taken = ", ".join(f"{kind} is {name}" for name, kind in types.items())
        raise Unsupported(f"the NNEF consumer has no {dtype} tensors ({taken})")
    return found


def build_document(spec, case, types: dict = NNEF_TYPES) -> Document:
    """The NNEF document computing ``case``'s program with each node's ``nnef`` binding: one
    invocation per node (one for an op, one per op of a chain), every node's result a result of
    the graph. ``types`` maps the conform dtypes the consumer takes to NNEF's ``scalar``,
    ``integer`` and ``logical`` (default: the ``nnef`` package's executor's)."""
    kinds = [_nnef_type(d, types) for d in case.input_dtypes]
    for dtype in spec.out_dtypes(case):   # a result's integer width is the consumer's
        if not (_kind(dtype) == "integer" and "integer" in types.values()):
            _nnef_type(dtype, types)
    nodes = program_nodes(spec, case)
    positions = {name: j for j, name in enumerate(spec.input_names(case))}
    values = {name: f"in{j}" for name, j in positions.items()}
    lines, operations, fed, shape, outputs, variables, files = [], (), {}, None, [], {}, {}
    for node, node_at in zip(nodes, node_cases(spec, case)):
        taken = [values[name] for name in node.inputs]
        given = [f"out{k}" for k in range(len(outputs), len(outputs) + len(node.outputs))]
        line, op, used, shape, call = _invocation_call(node.spec, node_at, taken, given, types)
        for label, k in call.files.items():   # an operand read from a file is a variable
            files[label] = positions[node.inputs[k]]
            if f"in{k}" in call.args:
                variables[files[label]] = label
        computed = {k for k, name in enumerate(node.inputs) if name not in positions}
        if (shape is not None and len(nodes) > 1) or not computed <= set(used):
            raise Unsupported(f"NNEF {op} in a program of several ops must take every computed "
                              "operand and keep its shape")
        fed.update((positions[node.inputs[k]], None) for k in used if k not in computed)
        values.update(zip(node.outputs, given))
        lines.append(line)
        operations += (op,)
        outputs += given
    declared = [_declaration(i, kinds[i], case.inputs[i].shape, variables.get(i)) for i in fed]
    operations += ("variable",) * any(i in variables for i in fed)   # declared by a line
    fed = [i for i in fed if i not in variables]
    names = ", ".join(f"in{i}" for i in fed) or PLACEHOLDER
    if not fed:   # a graph has one parameter at least (PLACEHOLDER)
        declared.append(_declaration(PLACEHOLDER, _nnef_type("bool", types), (1,), None))
    text = (f"version 1.0;\n\ngraph conform_{spec.op}( {names} ) -> ( {', '.join(outputs)} )\n{{\n"
            + "\n".join(declared + lines) + "\n}\n")
    files = {label: np.asarray(case.inputs[i], dtype=np_dtype(case.input_dtypes[i]))
             for label, i in files.items()}
    return Document(text, operations[0], fed, shape, operations=operations, files=files,
                    placeholder=not fed, out_dtypes=tuple(spec.out_dtypes(case)))


def _declaration(index: int | str, kind: str, shape, label: str | None) -> str:
    """The line declaring input ``index`` (``in<index>``, or the name ``index`` itself): an
    ``external`` fed at run time, or a ``variable`` read from the tensor file ``<label>.dat``."""
    name = index if isinstance(index, str) else f"in{index}"
    if label is None:
        return f"    {name} = external<{kind}>(shape = {literal(list(shape))});"
    return (f"    {name} = variable<{kind}>(shape = {literal(list(shape))}, "
            f"label = {literal(label)});")


def _invocation(spec, case, operands: list[str], outputs: list[str], types: dict = NNEF_TYPES):
    """``(line, operation, inputs fed, output shape)``: the line of NNEF invoking ``spec``'s
    operation on ``operands`` (the values of the case's inputs) into ``outputs``."""
    return _invocation_call(spec, case, operands, outputs, types)[:4]


def _invocation_call(spec, case, operands, outputs, types: dict = NNEF_TYPES):
    """:func:`_invocation`'s four, and the :class:`Invocation` the op's lowering returned."""
    bound = binding(spec, "nnef")
    op = bound["op"]
    lower = spec.definition.nnef
    call = (Invocation(list(operands)) if lower is None else lower(case, Invocation))
    fed = list(range(len(case.inputs))) if call.inputs is None else call.inputs
    renamed = {f"in{i}": operands[i] for i in range(len(operands))}
    arguments = [renamed.get(a, a) for a in call.args]
    attrs = {**bound.get("attributes", {}), **call.attrs}
    arguments += [f"{k} = {literal(v)}" for k, v in attrs.items()]
    invoked = call.name or op
    name = invoked if call.generic is None else f"{invoked}<{_nnef_type(call.generic, types)}>"
    results = f"[ {', '.join(outputs)} ]" if call.array_result else \
        outputs[0] if len(outputs) == 1 else f"( {', '.join(outputs)} )"
    return f"    {results} = {name}({', '.join(arguments)});", invoked, fed, call.output_shape, call


class _FormatKinds(dict):
    """Every conform dtype -> the NNEF type its values belong to: the format's own types, not
    a consumer's (``_nnef_type`` refuses none)."""

    def get(self, dtype, default=None):
        return _kind(dtype)


def inexpressible(spec, case) -> str | None:
    """Why the NNEF format cannot express ``case`` (None where it can): the ``Unsupported``
    reason of a node's ``nnef`` lowering (its op module's hook, on the case's attributes and
    values) or of an attribute no NNEF literal spells (NNEF 1.0 ch. 3: no inf or NaN
    literal), with every dtype taken as NNEF's own type (never a consumer's: what a consumer
    lacks stays ``unsupported``). The same for every NNEF consumer: a run on one never draws
    such a case (conform.harness.run.runner). A lowering artefact (``nnef_refuses``: an op
    whose NNEF fragment says nothing of NaN) is expressible and left to the backend."""
    kinds = _FormatKinds()
    try:
        for node, node_at in zip(program_nodes(spec, case), node_cases(spec, case)):
            operands = [f"in{k}" for k in range(len(node.inputs))]
            outputs = [f"out{k}" for k in range(len(node.outputs))]
            _invocation_call(node.spec, node_at, operands, outputs, kinds)
    except Unsupported as exc:
        return str(exc)
    except Exception:   # noqa: BLE001 - a lowering that fails otherwise (on a type no NNEF
        return None     # consumer takes) is the backend's to report when the case runs
    return None


def write_document(directory: Path | str, spec, case) -> Path:
    """Write ``graph.nnef``, its variables' tensor files (``<label>.dat``) and the fed inputs
    as NNEF tensor files (``in<i>.dat``) for a repro.

    The executor reads the fed inputs from the call, not from these files: they make the
    folder a self-contained record of the case.
    """
    from conform.harness.backends.nnef_tensors import write_tensor

    document = build_document(spec, case)
    directory = document.write(directory)
    for index, array in zip(document.inputs, document.feeds(case)):
        write_tensor(directory / f"in{index}.dat", array)
    return directory / "graph.nnef"


@lru_cache(maxsize=None)
def _standard_fragments() -> dict[str, str] | None:
    """The standard fragment declarations shipped with the ``nnef`` package, by name.

    They are read from the package's own stdlib source (a C++ header installed next to the
    module); ``None`` if it is not there. Bodies of compound fragments are dropped: documents are
    executed without lowering, so only the declarations are needed to check an invocation.
    """
    source = _stdlib_source()
    if source is None:
        return None
    fragments = {}
    for match in re.finditer(r"\bfragment\s+(\w+)", source):
        end = _declaration_end(source, match.end())
        fragments[match.group(1)] = source[match.start():end] + ";"
    return fragments


def compound_operations(ops) -> list[str]:
    """Those of ``ops`` that the ``nnef`` package's standard library defines as compound
    fragments (a declaration followed by a body), which an executor may lower."""
    source = _stdlib_source()
    found = []
    for op in dict.fromkeys(ops):
        match = re.search(r"\bfragment\s+" + re.escape(op) + r"\b", source or "")
        if match and source[_declaration_end(source, match.end()):].lstrip().startswith("{"):
            found.append(op)
    return found


@lru_cache(maxsize=None)
def _stdlib_source() -> str | None:
    """The ``nnef`` package's standard library source (its C++ header's raw strings)."""
    import nnef

    header = Path(nnef.__file__).parent / "cpp" / "include" / "nnef" / "comp" / "stdlib_source.h"
    if not header.is_file():
        return None
    return "".join(re.findall(r'R"STDLIB\((.*?)\)STDLIB"', header.read_text(), re.S))


def _declaration_end(source: str, start: int) -> int:
    """The index just past the result list ``-> ( ... )`` of the declaration at ``start``."""
    arrow = source.index("->", start)
    depth, i = 0, source.index("(", arrow)
    while True:
        depth += {"(": 1, ")": -1}.get(source[i], 0)
        i += 1
        if depth == 0:
            return i


def prelude(*ops: str) -> str | None:
    """A minimal standard library for a document invoking ``ops``: ``external`` and each op.

    Parsing the whole standard library costs the executor ~3-5 ms per session; the two
    declarations a one-op document needs cost ~0.1 ms. ``None`` (use the full library) if the
    declarations cannot be found.
    """
    fragments = _standard_fragments()
    wanted = ["external", *dict.fromkeys(ops)]
    if not fragments or any(name not in fragments for name in wanted):
        return None
    return "\n".join(fragments[name] for name in wanted) + "\n"


_TENSOR_PARAMETER = re.compile(r"(\w+)\s*:\s*tensor<(\w+|\?)>(\[\])?")


def _kind(dtype: str) -> str | None:
    """The NNEF tensor type a conform dtype's values belong to (the standard's three), None for
    complex and string values: NNEF 1.0 ch. 3 (seed 000) makes ``scalar`` a real value, and a
    tensor holds ``scalar``, ``integer`` or ``logical`` data."""
    return {"bool": "logical", "int": "integer", "float": "scalar"}.get(dtype_class(dtype))


def types_allow(spec, label: str) -> bool:
    """Whether NNEF's type system takes the inputs of ``spec``'s cases under dtype label
    ``label`` (each node's ``nnef`` fragment's declared tensor parameters, in order:
    ``tensor<scalar>`` takes float values, ``tensor<integer>`` integers, ``tensor<logical>``
    bools, and the parameters of one generic fragment's ``tensor<?>`` one kind; complex and
    string values none, NNEF's ``scalar`` being real). A label it
    refuses is not drawn for an NNEF backend: the standard rules it out, so an ``unsupported``
    case means a consumer lacks what NNEF allows. True where the declaration is not known."""
    fragments = _standard_fragments() or {}
    dtype = label.split("->")[0]
    for node in spec.node_specs:
        bound = node.bindings.get("nnef")
        kinds = [_kind(dtype if kind == "T" else kind[0] if isinstance(kind, tuple) else kind)
                 for kind in node.input_types]
        if bound is not None and None in kinds:   # complex or string values: no NNEF tensor
            return False
        declaration = fragments.get((bound or {}).get("op", ""))
        if declaration is None:
            continue
        parameters = _TENSOR_PARAMETER.findall(declaration.split("->")[0])
        generic = set()
        for k, given in enumerate(kinds):
            if not parameters:
                break
            _, declared, array = parameters[min(k, len(parameters) - 1)]
            if k >= len(parameters) and not array:
                break
            if declared == "?":
                generic.add(given)
            elif declared != given:
                return False
        if len(generic) > 1:
            return False
    return True
