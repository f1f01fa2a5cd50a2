"""Load and validate op specs, with errors that name the file, the line and the field."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from conform.ops import OpDefinition, UnknownOp, definition, package_spec_dirs
from conform.ops.optional_inputs import present
from conform.caches import cached_loads
from conform.numpy_functions import numpy_function_problem
from conform.spec._schema import SCHEMA
from conform.spec._yaml import read_mapping
from conform.spec._errors import SpecError, line_of, validate_document
from conform.spec._design import check_excluded_pairs
from conform.spec._properties import check_properties
from conform.spec.program_nodes import ProgramNode, array_names
from conform.spec._runnable import check_model_hooks, check_runnable, dtype_class
from conform.dtypes import FLOAT_FORMATS, is_complex, result_dtype

if TYPE_CHECKING:
    import yaml

#: The built-in suite's specs: the YAML files beside conform's op modules (``conform.ops``).
BUILTIN_DIR = Path(__file__).parent.parent / "ops"
FLOAT_DTYPES = tuple(FLOAT_FORMATS)


@dataclass(frozen=True)
class OpSpec:
    """One operation, as declared by its YAML spec."""

    op: str
    summary: str
    defined_by: dict
    signature: dict
    dtypes: tuple[str, ...]
    error_model: dict
    bindings: dict
    output_dtype: str = "same"
    values: dict = field(default_factory=dict)
    input_values: dict = field(default_factory=dict)
    edge_values: dict = field(default_factory=dict)
    edge_cases: tuple = ()
    # rows {inputs, output, source} from the standard, overriding the oracle (ops/special_values.py)
    special_values: tuple = ()
    implementation_defined: tuple = ()
    critical_regions: tuple = ()   # entries of spec/critical.py's form
    properties: tuple = ()   # what the standard promises beyond one element (spec/_properties.py)
    excluded_pairs: tuple = ()   # attribute classes the covering design pairs not (spec/_design.py)
    conditioning: dict = field(default_factory=dict)   # ill-conditioned value plans (schema)
    path: str = ""

    def program_nodes(self, case) -> tuple[ProgramNode, ...]:
        """``case`` as a program: one node, the op on the case's present inputs with the
        case's attributes, giving the op's outputs (:mod:`conform.spec.program_nodes`)."""
        return (ProgramNode(self, self.input_names(case), self.outputs, case.attrs),)

    def input_names(self, case) -> tuple[str, ...]:
        """A name for each of ``case``'s input arrays (:func:`~.program_nodes.array_names`)."""
        return array_names(self.present_inputs(case.attrs), len(case.inputs))

    @property
    def node_specs(self) -> tuple:
        """The specs of the ops its cases compute: its own."""
        return (self,)

    @functools.cached_property
    def definition(self) -> OpDefinition:
        """The op's :class:`~conform.ops.OpDefinition` (oracle, lowerings, hooks)."""
        return definition(self.op)

    @property
    def oracle(self) -> str:
        """The name the op's oracle is registered under: the op's own."""
        return self.op

    @functools.cached_property
    def inputs(self) -> tuple[str, ...]:
        return tuple(_input_name(entry) for entry in self.signature["inputs"])

    @functools.cached_property
    def optional_inputs(self) -> tuple[str, ...]:
        """The inputs a case may leave out (``optional: true``)."""
        return tuple(_input_name(e) for e in self.signature["inputs"] if _flag(e, "optional"))

    def present_inputs(self, attrs: dict) -> tuple[str, ...]:
        """The names of the inputs a case with ``attrs`` holds, in order (its ``inputs``): all
        of them but those its ``absent_inputs`` attribute names."""
        return present(self.inputs, attrs) if self.optional_inputs else self.inputs

    @property
    def elementwise(self) -> bool:
        """Whether the op is element-wise as the generic drawer draws it: no draw hook, every
        input of the case's dtype and element-aligned with the output, only fixed attributes.
        Such ops also get the edge-value sweep, the spec's edge cases and exhaustive runs."""
        return _elementwise(self.definition, self.signature)

    def described_signature(self) -> dict:
        """The op's signature as an adapter author needs it (``conform list --format json``):
        each input's name and type (``T``: the case's dtype), the output, how the inputs'
        shapes relate, the rank bounds, the attributes (a fixed value or the domain drawn from),
        and who draws the cases (the generic drawer or the op module's hook)."""
        signature = self.signature
        definition = self.definition
        described = {
            "inputs": [{"name": _input_name(e), "type": t,
                        **{k: True for k in ("optional", "scalar") if _flag(e, k)}}
                       for e, t in zip(signature["inputs"], self.input_types)],
            "outputs": [{"name": n, "type": result_dtype(self.output_dtype, t) if t == "T" else t,
                         **({"sequence": "an ONNX sequence: its elements raveled and concatenated; "
                                         "the next output holds their shapes"}
                            if k in self.sequence_outputs else {})}
                        for k, (n, t) in enumerate(zip(self.outputs, self.output_types))],
            "shapes": signature.get("shapes", "equal") if definition.draw is None else "drawn by the op",
            "attrs": signature.get("attrs", {}),
            "drawn_by": "generic" if definition.draw is None else
            f"{definition.module}.{definition.draw.__name__}: "
            + " ".join((definition.draw.__doc__ or "").split()),
            "dtype_labels": "conversion pairs SRC->DST" if definition.dtype_labels else "dtypes",
        }
        described.update({k: signature[k] for k in ("min_rank", "max_rank") if k in signature})
        if self.optional_inputs:
            described["absent_inputs"] = ("a case leaves out optional inputs: it holds the "
                                          "present ones, in order, and attrs['absent_inputs'] "
                                          "names the absent ones")
        return described

    @functools.cached_property   # (read for every case judged: kept once made)
    def outputs(self) -> tuple[str, ...]:
        """The op's output names, in the order the oracle and every backend return them (one
        output named ``out`` when the signature declares none)."""
        return tuple(_input_name(entry) for entry in self.signature.get("outputs", ("out",)))

    @functools.cached_property
    def output_types(self) -> tuple[str, ...]:
        """Per output, its type: ``T`` (the case's out dtype) or a fixed dtype such as ``int64``."""
        return tuple("T" if isinstance(entry, str) else entry.get("type", "T")
                     for entry in self.signature.get("outputs", ("out",)))

    @functools.cached_property
    def sequence_outputs(self) -> tuple[int, ...]:
        """The numbers of the outputs declared ``sequence: true``: each with the next output is
        one ONNX sequence (its elements raveled and concatenated, then their int64 shapes;
        :mod:`conform.ops.sequence_values`)."""
        return tuple(k for k, entry in enumerate(self.signature.get("outputs", ()))
                     if _flag(entry, "sequence"))

    def out_dtypes(self, case) -> tuple[str, ...]:
        """The dtype of each of ``case``'s outputs."""
        kinds = self.output_types
        if kinds == ("T",):
            return (case.out_dtype,)
        return tuple(case.out_dtype if kind == "T" else kind for kind in kinds)

    @functools.cached_property
    def input_types(self) -> tuple[str, ...]:
        """Per input, its type: ``T`` (the case's dtype), a fixed dtype such as ``bool``, or a
        tuple of dtypes (a type variable such as ONNX's ``Tind``: the op's drawer picks one per
        signature)."""
        return tuple("T" if isinstance(entry, str) else _type_of(entry)
                     for entry in self.signature["inputs"])

    def model_for(self, dtype: str, output: int = 0, case=None) -> dict:
        """The error model for ``dtype`` in output number ``output``: the one the op's
        ``case_model`` hook gives for ``case`` (a Conditional's chosen branch's op's model), else
        the output's own ``error_model`` if it declares one, else the spec's; in it, the dtype's
        own entry, else its class (float/int/bool).

        >>> spec.model_for("float32")   # doctest: +SKIP
        {'ulp': 0.5, 'why': '...'}
        """
        if case is not None and self.definition.case_model is not None:
            found = self.definition.case_model(case, output)
            if found is not None:
                return found
        cls = dtype_class(dtype)
        if case is not None and self.output_dtype == "component" and is_complex(case.dtype):
            dtype, cls = case.dtype, "complex"   # |z|: the operand's model, not its part's
        models = self.error_model
        if output:
            declared = self.signature["outputs"][output]
            models = declared.get("error_model", models) if isinstance(declared, dict) else models
        model = models.get(dtype) or models.get(cls)
        if model is None:
            if cls in ("float", "complex"):
                raise SpecError(self.path, None, "error_model",
                                f"no error model for dtype={dtype} (add '{cls}' or '{dtype}')")
            return _EXACT_BY_DEFAULT
        return model


# One shared dict: the judge groups cases by their model's identity (see judge_many).
_EXACT_BY_DEFAULT = {"exact": True, "why": "integer and boolean results are exact"}


def _elementwise(definition: OpDefinition, signature: dict) -> bool:
    return (definition.draw is None and definition.feeding == "aligned"
            and all(isinstance(e, str) or (e.get("type", "T") == "T" and not e.get("scalar"))
                    for e in signature["inputs"])
            and not any(isinstance(v, dict) for v in signature.get("attrs", {}).values()))


def _type_of(entry: dict):
    kind = entry.get("type", "T")
    return tuple(kind) if isinstance(kind, list) else kind


def _input_name(entry) -> str:
    return entry if isinstance(entry, str) else entry["name"]


def _flag(entry, key: str) -> bool:
    """Whether the signature input ``entry`` says ``key: true`` (``optional``, ``scalar``)."""
    return not isinstance(entry, str) and bool(entry.get(key))


def _check_semantics(data: dict, root: yaml.Node, path: Path) -> None:
    if path.stem != data["op"]:
        raise SpecError(path, line_of(root, ["op"]), "op",
                        f"op={data['op']!r} does not match the file name {path.name!r}")
    try:
        found = definition(data["op"])
    except UnknownOp as exc:
        raise SpecError(path, line_of(root, ["op"]), "op", str(exc)) from None
    for key in sorted(set(data["signature"]) - {"inputs", "outputs"} - found.honours):
        raise SpecError(path, line_of(root, ["signature", key]), f"signature.{key}",
                        f"{key}={data['signature'][key]!r} would be ignored: the drawer of op "
                        f"{data['op']} ({found.module}) does not read it")
    _check_attribute_domains(data, root, path)
    check_runnable(data, root, path, found)
    _check_input_flags(data, root, path, found)
    operands = data["bindings"].get("onnx", {}).get("operands")
    if operands is not None and len(operands) != len(data["signature"]["inputs"]):
        raise SpecError(path, line_of(root, ["bindings", "onnx", "operands"]),
                        "bindings.onnx.operands", f"operands={operands} names {len(operands)} "
                        f"formal inputs for {len(data['signature']['inputs'])} signature inputs")
    numpy_fn = data["bindings"].get("numpy", {}).get("fn")
    problem = numpy_fn is not None and numpy_function_problem(numpy_fn)
    if problem:
        raise SpecError(path, line_of(root, ["bindings", "numpy", "fn"]), "bindings.numpy.fn", problem)
    from conform.op_registry import regions

    names = _check_outputs(data, root, path)
    models = [data["error_model"]] + [entry["error_model"] for entry in
                                      data["signature"].get("outputs", ())
                                      if isinstance(entry, dict) and "error_model" in entry]
    check_model_hooks(data, root, path, found, models)
    for i, entry in enumerate(data.get("implementation_defined", [])):
        if entry["region"] not in regions():
            raise SpecError(path, line_of(root, ["implementation_defined", i, "region"]),
                            f"implementation_defined.{i}.region",
                            f"region={entry['region']!r} is unknown; available: {sorted(regions())}")
        for k, name in enumerate(entry.get("outputs", ())):
            if name not in names:
                raise SpecError(path, line_of(root, ["implementation_defined", i, "outputs", k]),
                                f"implementation_defined.{i}.outputs.{k}",
                                f"{name!r} names no output (outputs: {list(names)})")
    _check_critical(data, root, path, found)
    check_properties(data, root, path, elementwise=_elementwise(found, data["signature"]),
                     outputs=list(names))
    _check_xla_binding(data, root, path, found)
    _check_special_values(data, root, path, found)
    check_excluded_pairs(data, root, path, [_input_name(e) for e in data["signature"]["inputs"]
                                            if _flag(e, "optional")])
    for i, entry in enumerate(data.get("edge_cases", [])):
        unknown = set(entry) - {_input_name(e) for e in data["signature"]["inputs"]}
        if unknown or not _elementwise(found, data["signature"]):
            raise SpecError(path, line_of(root, ["edge_cases", i]), f"edge_cases.{i}",
                            f"inputs={sorted(entry)} must name inputs of an element-wise op "
                            f"({data['signature']['inputs']})")


def _check_xla_binding(data: dict, root: yaml.Node, path: Path, found: OpDefinition) -> None:
    """An XLA binding names its ``lax`` function unless the op module lowers the op itself (or
    the binding says why jax cannot express the op: ``unsupported``)."""
    xla = data["bindings"].get("xla")
    if xla is not None and not {"lax", "unsupported"} & set(xla) and (
            found.lax is None or found.lax_takes_bound):
        raise SpecError(path, line_of(root, ["bindings", "xla"]), "bindings.xla.lax",
                        f"required: the op module {found.module} has no `lax` hook lowering "
                        "the op without it")


def _check_critical(data: dict, root: yaml.Node, path: Path, found: OpDefinition) -> None:
    """Each critical region draws an input of an element-wise float op, and its ``at`` names
    only dtype constants and the op's other inputs (spec/critical.py)."""
    from conform.spec.critical import RegionExpressionError, parse

    names = [_input_name(e) for e in data["signature"]["inputs"]]
    for i, entry in enumerate(data.get("critical_regions", [])):
        drawn = entry.get("input", names[0] if names else None)
        if drawn not in names or not _elementwise(found, data["signature"]):
            raise SpecError(path, line_of(root, ["critical_regions", i]), f"critical_regions.{i}",
                            f"input={drawn!r} must name an input of an element-wise op ({names})")
        try:
            parse(str(entry["at"]), tuple(n for n in names if n != drawn))
        except RegionExpressionError as exc:
            raise SpecError(path, line_of(root, ["critical_regions", i, "at"]),
                            f"critical_regions.{i}.at", str(exc)) from None


def _check_special_values(data: dict, root: yaml.Node, path: Path, found: OpDefinition) -> None:
    """A ``special_values`` table belongs to an element-wise op, and each row has one known
    matcher per input and a known output (:mod:`conform.ops.special_values`)."""
    from conform.ops.special_values import check_row

    for i, row in enumerate(data.get("special_values", [])):
        problem = None if _elementwise(found, data["signature"]) else \
            "special_values belong to element-wise ops"
        if problem is None:
            try:
                check_row(row, len(data["signature"]["inputs"]))
            except ValueError as exc:
                problem = str(exc)
        if problem:
            raise SpecError(path, line_of(root, ["special_values", i]), f"special_values.{i}",
                            problem)


def _check_outputs(data: dict, root: yaml.Node, path: Path) -> list[str]:
    """Output names are distinct, and every output that can be a float has a float error model
    (its own, or the spec's). Returns the output names."""
    declared = data["signature"].get("outputs", ["out"])
    names = [_input_name(e) for e in declared]
    for k, entry in enumerate(declared):
        where = ["signature", "outputs", k] if "outputs" in data["signature"] else ["error_model"]
        if names.index(names[k]) != k:
            raise SpecError(path, line_of(root, where), f"signature.outputs.{k}",
                            f"output name {names[k]!r} is given twice")
        kind = "T" if isinstance(entry, str) else entry.get("type", "T")
        after = declared[k + 1] if k + 1 < len(declared) else None
        if _flag(entry, "sequence") and (not isinstance(after, dict) or _flag(after, "sequence")
                                         or after.get("type") != "int64"):
            raise SpecError(path, line_of(root, where), f"signature.outputs.{k}.sequence",
                            f"output {names[k]!r} is a sequence's elements: the next output "
                            "must be their shapes, {name, type: int64}")
        rule = data.get("output_dtype", "same")   # component: judged by the operand's model
        dtypes = [kind] if kind != "T" else [result_dtype(rule, d) for d in data["dtypes"]] \
            + (data["dtypes"] if rule == "component" else [])
        own = isinstance(entry, dict) and "error_model" in entry
        models = entry["error_model"] if own else data["error_model"]
        for cls in ("float", "complex"):
            if any(dtype_class(d) == cls for d in dtypes) \
                    and not any(key == cls or dtype_class(key) == cls for key in models):
                field_path = f"signature.outputs.{k}.error_model" if own else "error_model"
                raise SpecError(path, line_of(root, where + (["error_model"] if own else [])),
                                field_path, f"output {names[k]!r} can be a {cls} but no {cls} "
                                            "error model is given" if len(names) > 1 else
                                f"{cls} dtypes are listed but no {cls} error model is given")
    return names


def _check_attribute_domains(data: dict, root: yaml.Node, path: Path) -> None:
    """An attribute domain tied to an input's shape names an input, and an axis needs rank >= 1."""
    signature = data["signature"]
    for name, domain in signature.get("attrs", {}).items():
        if not isinstance(domain, dict):
            continue
        if "range" in domain and domain["range"][0] > domain["range"][1]:
            raise SpecError(path, line_of(root, ["signature", "attrs", name, "range"]),
                            f"signature.attrs.{name}.range", f"range={domain['range']!r} has its "
                            "ends reversed: write [low, high]")
        for key in ("axis_of", "axes_of", "permutation_of"):
            if key not in domain:
                continue
            where = (line_of(root, ["signature", "attrs", name, key]), f"signature.attrs.{name}.{key}")
            if domain[key] not in {_input_name(e) for e in signature["inputs"]}:
                raise SpecError(path, *where, f"{key}={domain[key]!r} names no input "
                                              f"(inputs: {signature['inputs']})")
            empty_allowed = key == "axes_of" and domain.get("min_size", 1) == 0
            if key != "permutation_of" and not empty_allowed and signature.get("min_rank", 0) < 1:
                raise SpecError(path, *where, f"{key} draws an axis, which a 0-d input lacks: "
                                              "set signature.min_rank >= 1 (or, for axes_of, "
                                              "min_size: 0)")


def _check_input_flags(data: dict, root: yaml.Node, path: Path, found: OpDefinition) -> None:
    """``optional`` and ``scalar`` inputs: only where the op's drawer reads the flag; the first
    input is never optional; an optional input is named by no edge case and no attribute
    domain (it may be absent), and only ops whose lowering in every bound format is their op
    module's own (a format's default lowering passes every input) have one."""
    inputs = data["signature"]["inputs"]
    names = {_input_name(e) for e in inputs if _flag(e, "optional")}
    for i, entry in enumerate(inputs):
        for key in ("optional", "scalar"):
            if _flag(entry, key) and key not in found.honours:
                raise SpecError(path, line_of(root, ["signature", "inputs", i, key]),
                                f"signature.inputs.{i}.{key}",
                                f"{key}: true would be ignored: the drawer of op {data['op']} "
                                f"({found.module}) does not read it")
    if not names:
        return

    def where(*at):
        return line_of(root, list(at)), ".".join(map(str, at))

    if _flag(inputs[0], "optional"):
        raise SpecError(path, *where("signature", "inputs", 0, "optional"),
                        "the first input cannot be optional: a case holds at least one input")
    for i, entry in enumerate(data.get("edge_cases", [])):
        if names & set(entry):
            raise SpecError(path, *where("edge_cases", i), f"names the optional input(s) "
                            f"{sorted(names & set(entry))}, which a case may leave out")
    for attr, domain in data["signature"].get("attrs", {}).items():
        named = [domain.get(k) for k in ("axis_of", "axes_of", "permutation_of")
                 ] if isinstance(domain, dict) else []
        if names & set(named):
            raise SpecError(path, *where("signature", "attrs", attr), f"draws from the shape "
                            f"of an optional input ({sorted(names & set(named))}), which a case "
                            "may leave out")
    hooks = {"xla": found.lax, "onnx": found.onnx, "nnef": found.nnef}
    for fmt in data["bindings"]:
        if fmt in hooks and fmt != "onnx" and hooks[fmt] is None:
            raise SpecError(path, *where("bindings", fmt), f"a {fmt} binding of an op with "
                            f"optional inputs needs the op module's own {fmt} lowering: the "
                            "default one passes every input")


def read_yaml_mapping(path: Path, what: str, error: type[SpecError] = SpecError,
                      shape: type = dict):
    """``(data, node tree)`` of a YAML file that must hold a mapping (or a list: ``shape``);
    ``error`` names the line (the shared safe reader, :func:`conform.spec._yaml.read_mapping`)."""
    return read_mapping(path, what, error, shape)


def load_spec(path: Path | str) -> OpSpec:
    """Load and validate one spec file.

    >>> load_spec(BUILTIN_DIR / "add.yaml").op   # doctest: +SKIP
    'add'
    """
    path = Path(path)
    data, root = read_yaml_mapping(path, "a spec")
    validate_document(data, root, path, SCHEMA)
    _check_semantics(data, root, path)
    return OpSpec(
        op=data["op"], summary=data["summary"], defined_by=data["defined_by"],
        signature=data["signature"], dtypes=tuple(data["dtypes"]), error_model=data["error_model"], bindings=data["bindings"],
        output_dtype=data.get("output_dtype", "same"), values=data.get("values", {}),
        input_values=data.get("input_values", {}), edge_values=data.get("edge_values", {}),
        edge_cases=tuple(data.get("edge_cases", [])),
        special_values=tuple(data.get("special_values", [])),
        implementation_defined=tuple(data.get("implementation_defined", [])), path=str(path),
        critical_regions=tuple(data.get("critical_regions", [])),
        properties=tuple(data.get("properties", [])),
        excluded_pairs=tuple(data.get("excluded_pairs", [])),
        conditioning=data.get("conditioning", {}),
    )


class Specs(dict):
    """Op specs by op name. A program's name (:mod:`conform.spec.programs`) gives its spec too,
    made on first use from the ops it names, though it is not among the keys: iterating lists
    the ops."""

    def _program(self, name):
        made = self.__dict__.setdefault("programs", {})
        if name not in made:
            from conform.spec.programs import program_spec

            try:
                made[name] = program_spec(name, self)
            except KeyError:
                made[name] = None
        return made[name]

    def __missing__(self, name):
        found = self._program(name) if isinstance(name, str) else None
        if found is None:
            raise KeyError(name)
        return found

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or (isinstance(name, str)
                                                 and self._program(name) is not None)

    def get(self, name, default=None):
        return self[name] if name in self else default


def load_specs(directory: Path | str | None = None) -> dict[str, OpSpec]:
    """The built-in suite's specs, those of installed op packages (``conform.ops`` entry points)
    and, with ``directory``, the specs in that folder, keyed by op name, sorted. A spec in
    ``directory`` replaces the built-in spec of the same op; a folder that does not exist or
    holds no spec is an error.
    """
    files = {path.stem: path for folder in [BUILTIN_DIR, *package_spec_dirs()]
             for path in sorted(folder.glob("*.yaml"))}
    if directory is not None:
        directory = Path(directory)
        own = sorted(directory.glob("*.yaml")) if directory.is_dir() else []
        if not own:
            raise SpecError(directory, None, "", "no op spec (*.yaml) in this folder"
                            if directory.is_dir() else "spec folder does not exist")
        files.update((path.stem, path) for path in own)
    specs = cached_loads([files[name] for name in sorted(files)], load_spec, types=(OpSpec,))
    return Specs((s.op, s) for s in specs)
