"""Load and validate op specs, with errors that name the file, the line and the field."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conform.spec._cache import cached_loads
from conform.spec._schema import SCHEMA
from conform.spec._yaml import read_mapping

if TYPE_CHECKING:
    import yaml

BUILTIN_DIR = Path(__file__).parent / "ops"
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


class SpecError(Exception):
    """A spec file is malformed. The message names file, line and field."""

    def __init__(self, path: Path | str, line: int | None, field_path: str, message: str):
        self.path, self.line, self.field = str(path), line, field_path
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: field {field_path or '<top>'}: {message}")


@dataclass(frozen=True)
class OpSpec:
    """One operation, as declared by its YAML spec."""

    op: str
    summary: str
    defined_by: dict
    signature: dict
    dtypes: tuple[str, ...]
    oracle: str
    error_model: dict
    bindings: dict
    output_dtype: str = "same"
    values: dict = field(default_factory=dict)
    input_values: dict = field(default_factory=dict)
    edge_values: dict = field(default_factory=dict)
    edge_cases: tuple = ()
    implementation_defined: tuple = ()
    path: str = ""

    @property
    def family(self) -> str:
        return self.signature["family"]

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(self.signature["inputs"])

    def model_for(self, dtype: str) -> dict:
        """The error model for ``dtype``: the dtype's own entry, else its class (float/int/bool).

        >>> spec.model_for("float32")   # doctest: +SKIP
        {'ulp': 0.5, 'why': '...'}
        """
        cls = dtype_class(dtype)
        model = self.error_model.get(dtype) or self.error_model.get(cls)
        if model is None:
            if cls == "float":
                raise SpecError(self.path, None, "error_model",
                                f"no error model for dtype={dtype} (add 'float' or '{dtype}')")
            return _EXACT_BY_DEFAULT
        return model


# One shared dict: the judge groups cases by their model's identity (see judge_many).
_EXACT_BY_DEFAULT = {"exact": True, "why": "integer and boolean results are exact"}


def dtype_class(dtype: str) -> str:
    """'float', 'int' or 'bool' for a dtype name."""
    if dtype in FLOAT_DTYPES:
        return "float"
    return "bool" if dtype == "bool" else "int"


def _line_of(node: yaml.Node, path: list) -> int:
    """1-based line of the YAML node at ``path`` (the deepest node that exists)."""
    import yaml

    for key in path:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if k.value == key), None)
            if nxt is None:
                break
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            break
    return node.start_mark.line + 1


def _validate(data: Any, root: yaml.Node, path: Path, schema: dict = SCHEMA,
              error: type[SpecError] = SpecError) -> None:
    """Raise ``error`` naming file, line and field for the first violation of ``schema``."""
    import jsonschema   # here: a run whose specs come from the cache does not need it

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        location = list(err.absolute_path)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            known = err.schema.get("properties", {})
            location += sorted(k for k in err.instance if k not in known)[:1]
        field_path = ".".join(str(p) for p in location)
        raise error(path, _line_of(root, location), field_path, err.message)


def _check_semantics(data: dict, root: yaml.Node, path: Path) -> None:
    from conform.oracles import ORACLES

    if data["oracle"] not in ORACLES:
        raise SpecError(path, _line_of(root, ["oracle"]), "oracle",
                        f"oracle={data['oracle']!r} is not registered; available: {sorted(ORACLES)}")
    from conform.oracles.regions import REGIONS

    for i, entry in enumerate(data.get("implementation_defined", [])):
        if entry["region"] not in REGIONS:
            raise SpecError(path, _line_of(root, ["implementation_defined", i, "region"]),
                            f"implementation_defined.{i}.region",
                            f"region={entry['region']!r} is unknown; available: {sorted(REGIONS)}")
    outputs = ["bool"] if data.get("output_dtype") == "bool" else data["dtypes"]
    if any(dtype_class(d) == "float" for d in outputs):
        if not any(k == "float" or k in FLOAT_DTYPES for k in data["error_model"]):
            raise SpecError(path, _line_of(root, ["error_model"]), "error_model",
                            "float dtypes are listed but no float error model is given")
    for i, entry in enumerate(data.get("edge_cases", [])):
        unknown = set(entry) - set(data["signature"]["inputs"])
        if unknown or data["signature"]["family"] != "elementwise":
            raise SpecError(path, _line_of(root, ["edge_cases", i]), f"edge_cases.{i}",
                            f"inputs={sorted(entry)} must name inputs of an elementwise op "
                            f"({data['signature']['inputs']})")
    if path.stem != data["op"]:
        raise SpecError(path, _line_of(root, ["op"]), "op",
                        f"op={data['op']!r} does not match the file name {path.name!r}")


def _read_mapping(path: Path, what: str, error: type[SpecError] = SpecError):
    """``(data, node tree)`` of a YAML file that must hold a mapping; ``error`` names the line
    (the shared safe reader, :func:`conform.spec._yaml.read_mapping`)."""
    return read_mapping(path, what, error)


def load_spec(path: Path | str) -> OpSpec:
    """Load and validate one spec file.

    >>> load_spec(BUILTIN_DIR / "add.yaml").op   # doctest: +SKIP
    'add'
    """
    path = Path(path)
    data, root = _read_mapping(path, "a spec")
    _validate(data, root, path)
    _check_semantics(data, root, path)
    return OpSpec(
        op=data["op"], summary=data["summary"], defined_by=data["defined_by"],
        signature=data["signature"], dtypes=tuple(data["dtypes"]), oracle=data["oracle"],
        error_model=data["error_model"], bindings=data["bindings"],
        output_dtype=data.get("output_dtype", "same"), values=data.get("values", {}),
        input_values=data.get("input_values", {}), edge_values=data.get("edge_values", {}),
        edge_cases=tuple(data.get("edge_cases", [])),
        implementation_defined=tuple(data.get("implementation_defined", [])), path=str(path),
    )


def load_specs(directory: Path | str | None = None) -> dict[str, OpSpec]:
    """All specs in ``directory`` (default: the built-in suite), keyed by op name, sorted."""
    directory = Path(directory) if directory else BUILTIN_DIR
    specs = cached_loads(sorted(directory.glob("*.yaml")), load_spec)
    return {s.op: s for s in specs}
