"""The op registry: every op conform knows, each defined by one op module.

An op module holds everything op-specific about the ops it defines: the oracle, the lowering to
each model format, how its signatures are drawn and which input elements feed an output element.
It declares each op with :func:`op` (explicitly, with a version). The shared stages (drawing,
oracles, model builders, the jax backend, repro, the judge) look an op up here and name no op.

Op modules are discovered, so adding one edits no shared file: every public module (a name not
starting with ``_``) of the built-in package :data:`BUILTIN_PACKAGE`, and every module an entry
point of the ``conform.ops`` group names (a package: it and its public modules; YAML specs beside
it join the suite). The same discovery finds the implementation-defined regions that modules
declare with :func:`region`.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Callable

#: The package of the op modules shipped with conform: each of its public modules is imported.
BUILTIN_PACKAGE = "conform.ops"
ENTRY_POINT_GROUP = "conform.ops"
#: How a drawer finds the input elements feeding one output element (see ``OpDefinition.feeding``).
FEEDING_KINDS = ("aligned", "moved")
#: The spec ``signature`` fields the generic element-wise drawer reads.
#: (``optional`` and ``scalar`` are flags of ``signature.inputs`` entries: a draw hook naming them
#: in ``draw_honours`` draws the presence of optional inputs and 0-d scalar inputs itself.)
GENERIC_DRAW_HONOURS = frozenset({"min_rank", "max_rank", "attrs", "shapes", "optional", "scalar"})


@dataclass(frozen=True, eq=False)
class OpDefinition:
    """One op's implementation-side knowledge (its YAML spec declares the rest).

    * ``oracle(*inputs, **attrs) -> tuple``: the reference, on widened inputs (conform.widening.widen).
    * ``draw(draw, kit, spec, dtype) -> Signature``: draws dtypes, shapes and attributes (``draw`` is
      Hypothesis's, ``kit`` is :mod:`conform.generators.kit`); None: the generic element-wise drawer.
      ``draw_honours`` names the spec's ``signature`` fields (``min_rank``, ``max_rank``, ``attrs``)
      the hook reads: a spec giving any other is rejected.
    * ``dtype_labels(spec) -> list``: the dtype labels a spec runs under (default: its dtypes).
    * ``fill(rng, signature, plan) -> list``: the case's input arrays, from NumPy's ``rng`` (the
      case's fill seed), where the value plans cannot say them (default: each input filled by
      the value plan ``plan`` from the spec's ranges and edge values); e.g. inputs whose values
      set the output's shape (Range's start, limit and delta: a bounded element count).
    * ``feeding``: ``"aligned"`` (out[i] is computed from each input's element i, or a scalar),
      ``"moved"`` (each output element is a copy of one input element: traced through the oracle),
      or ``fn(inputs, attrs, index)`` giving, per input, the elements combined into out[index]
      (with an ``output`` keyword it is told the output's number, for ops whose outputs are
      fed differently).
    * ``accumulation_length(shapes, attrs) -> int``: terms summed into one output element.
    * ``accumulation_magnitude(inputs, attrs) -> tuple``: per output, the ``S`` that the
      accumulation model multiplies by ``gamma_n`` (on the widened inputs; default: the oracle on
      ``|inputs|``, the sum of the terms' magnitudes), for ops whose error bound is not
      ``gamma_n`` times that sum (a prefix shorter than ``n``, a log of a sum).
    * ``onnx(case, graph)``: adds the nodes computing ``out0`` to ``graph`` (default: one node of
      the binding's ``op_type`` over every input); ``onnx_shape_dependent``: the model depends on
      the input shapes (not only attributes), so models are keyed by them.
    * ``value_dependent_shape``: the outputs' shapes depend on input values, not only on the
      input shapes and attributes (Compress's condition, OneHot's depth): shape inference from
      the input shapes leaves those dimensions unknown.
    * ``nnef(case, invocation) -> invocation(...)``: the NNEF invocation (default: every input).
    * ``lax(lax, attrs) -> fn(*inputs)``: the jax.lax computation, jitted by the jax backend and
      written into repro scripts as source (so it may use only ``lax``, ``np`` and its arguments;
      default: ``lax.<binding>(*inputs, **attrs)``); a hook with a ``bound`` keyword gets the
      binding's lax function there (``lax(lax, attrs, bound=lax.<binding>)``), one with a
      ``dtypes`` keyword the input dtype names (to raise ``Unsupported`` there, when it is
      built, where jax.lax cannot express a type: never while the function is traced).
    * ``lax_refuses(inputs, attrs) -> reason | None``: why the ``lax`` lowering cannot express
      this case's input values faithfully (a lowering artefact: ``lax.switch`` clamps its
      index before XLA's Conditional sees it), checked by the jax backend before it runs the
      case, which is then unsupported with that reason; None where it can.
    * ``onnx_refuses(inputs, attrs) -> reason | None``: as ``lax_refuses``, for the ``onnx``
      lowering (a model is built once per signature, so values are checked apart): where the
      ONNX operator the lowering uses leaves open what the op defines (an XLA op's NaN rule on
      an ONNX node whose text is silent on NaN), checked by the onnxruntime backend;
      ``nnef_refuses`` alike for the ``nnef`` lowering, checked by the nnef backend.
    * ``numpy(*inputs, **attrs)``: the numpy backend's computation with NumPy itself, on the
      inputs in their own dtypes, returning arrays in the outputs' dtypes; it never calls an
      oracle (default: the spec's ``bindings.numpy`` function, else unsupported; see
      :mod:`conform.ops.numpy_computation`). A hook with a ``bound`` keyword also gets the NumPy function
      the binding names; one with a ``numpy_of`` keyword a function giving another op's NumPy
      computation by name (a loop body's ops, each computed by its own).
    * ``values(rng, inputs, attrs) -> inputs``: the case's input arrays (as the value plan
      filled them) with those whose valid values depend on the drawn signature replaced (indices
      in range for the drawn shapes, unique scatter indices, a condition); ``rng`` is the case's
      seeded NumPy generator, so the values are a pure function of the fill seed.
    * ``error_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes) -> tuple``: for the
      ``derived`` error model, per output the absolute bound on each element's error (an array
      shaped like the output; None for an output not judged by it), derived from the rounding
      errors of the computation the standard defines. ``inputs`` and ``outputs`` are the widened
      inputs and the oracle's float64 outputs, ``u`` the unit roundoff of the model's type (the
      output type's, or the finer ``accumulator_at_least``), ``constants`` the model's, ``dtypes``
      the inputs' dtype names. A hook with a ``subnormals`` keyword gets the subnormal policy of
      the reference it bounds (``ieee``, or ``ftz`` for the judge's flushed reference, which it
      then computes for every case). Its terms: :mod:`conform.ops.error_bounds`.
    * ``distribution(inputs, attrs, outputs, *, out_dtypes, dtypes) -> tuple``: for the ``statistical``
      error model (a random op), per output the law its text states
      (:mod:`conform.ops.distributions`), on the widened inputs; ``outputs`` are the backend's
      (an output the text defines given another, as Dropout's output given its mask). The
      judge tests the backend's outputs against it (:mod:`conform.harness.judge.statistical`).
    * ``devices(attrs) -> int``: the devices a case runs on, where the op needs more than one
      (a collective's case holds every replica, one device each; default 1); a backend with
      fewer (``Backend.device_count``) finds the case unsupported.
    * ``case_model(case, output) -> dict | None``: the error model of one case's output where
      it depends on the case (a Conditional's result is judged under the chosen branch's op's
      model, carried in the case's attributes); None: the spec's.
    * ``uses_catalog``: the draw hook reads other ops' specs (``kit.catalog()``: a loop body
      made of catalog ops), so a cached corpus of the op is keyed by every spec, not its own.
    * An oracle with an ``ftz`` keyword computes, given ``ftz=True``, what a backend flushing
      subnormals (inputs and every intermediate result read as zeros of the same sign) computes;
      under the ``ftz`` policy the judge accepts it beside the ``ieee`` answer.
    * ``rounded64(*inputs, **attrs) -> tuple``: for the ``correctly_rounded`` error model, per
      output the correct rounding (to nearest, ties to even) into float64 of the exact result,
      computed without the hardware's float64 operation (exact rational or integer arithmetic:
      :mod:`conform.ops._exact`), on the widened inputs; used where the output is float64, the
      oracle's float64 value being itself a rounding there (narrower outputs round the oracle's
      value once). A hook with a ``dtypes`` keyword gets the inputs' dtype names.
    * ``midpoints(rng, spec, dtype) -> (inputs, attrs, out_dtype) | None``: a case's inputs
      (arrays of their dtypes) whose exact results are rounding midpoints of the output type,
      with results one ULP beside them, for the ``correctly_rounded`` model (a wrong tie rule
      fails there); ``attrs`` add to the spec's fixed ones. Drawn in every suite (the case
      ``<op>.<dtype>.midpoint``); helpers in :mod:`conform.ops._midpoints`.
    * ``boundaries(kit, spec, dtype) -> list``: signatures (``kit.Signature``, or
      ``kit.Boundary`` where input values set the shape: a signature and its values) at the boundaries
      of the shape arithmetic the op's text gives (an output length of 0 or 1, exactly one
      window fitting, one element too few), each a case the text defines: drawn in every suite
      (the cases ``<op>.<dtype>.boundary<k>``) and judged as any other.
    * ``invalid(kit, spec, dtype) -> list``: inputs the op's text forbids (``kit.MustReject``:
      a signature, the sentence of the text that forbids it, the output shapes a model
      declares, and a function breaking the filled inputs): drawn in every suite (the cases
      ``<op>.<dtype>.invalid<k>``); the expected answer is a refusal, and a backend returning
      a value is ``accepts_invalid``.
    * ``canonical(outputs, case) -> outputs``: for ops whose answer is a set of equally valid
      answers (the order of tied elements, of unordered unique values), maps a backend's outputs
      to the one member of the set the oracle returns; the judge applies it before comparing.
      It may reorder what the backend returned but must never repair a wrong value. A hook with
      a ``subnormals`` keyword gets the judge's subnormal policy (``ieee`` or ``ftz``: a
      flushing backend compares subnormals as zeros, so it has more ties).
    * ``from_onnx(inputs, attrs, opset) -> (inputs, attrs)``: the inverse of the ONNX lowering,
      for an op whose spec spells an ONNX node differently from the generic rule of
      :mod:`conform.generators.onnx_examples` (renamed attributes, an input drawn as an
      attribute of another form): given the node's inputs (None for an omitted one) and its
      attributes at ``opset`` (schema defaults filled in), the case's inputs and attributes;
      raises that module's ``NotExpressible`` (a ``ValueError``) for a node the spec does not
      draw. Used to reproduce the onnx package's node-test examples with the oracle. A hook
      with an ``outputs`` keyword is given the node's output count, and may map a node of
      fewer outputs of a variadic formal than the spec gives (the case's further outputs
      then unrequested: empty ones, say).
    """

    name: str
    version: int
    oracle: Callable[..., tuple]
    draw: Callable | None = None
    draw_honours: frozenset = frozenset()
    dtype_labels: Callable | None = None
    fill: Callable | None = None
    feeding: str | Callable = "aligned"
    accumulation_length: Callable | None = None
    accumulation_magnitude: Callable | None = None
    onnx: Callable | None = None
    onnx_shape_dependent: bool = False
    value_dependent_shape: bool = False
    nnef: Callable | None = None
    lax: Callable | None = None
    lax_refuses: Callable | None = None
    onnx_refuses: Callable | None = None
    nnef_refuses: Callable | None = None
    numpy: Callable | None = None
    values: Callable | None = None
    canonical: Callable | None = None
    error_bound: Callable | None = None
    distribution: Callable | None = None
    uses_catalog: bool = False
    case_model: Callable | None = None
    devices: Callable | None = None
    rounded64: Callable | None = None
    midpoints: Callable | None = None
    boundaries: Callable | None = None
    invalid: Callable | None = None
    from_onnx: Callable | None = None
    module: str = field(default="", compare=False)

    @functools.cached_property
    def takes_dtypes(self) -> bool:
        """Whether the oracle has a ``dtypes`` keyword: it then receives the inputs' original
        dtype names (an oracle sees widened arrays, and some answers depend on the type, such
        as an empty reduction's 'minimum value of the data type')."""
        return "dtypes" in inspect.signature(self.oracle).parameters

    @functools.cached_property
    def oracle_flushes(self) -> bool:
        """Whether the oracle has an ``ftz`` keyword: it then has a reading of its own for a
        backend that flushes subnormals (``ftz=True``: its intermediate results flushed too, as
        a loop's are), which the judge's flushed reference uses in place of the oracle on
        flushed inputs alone."""
        return "ftz" in inspect.signature(self.oracle).parameters

    @functools.cached_property
    def canonical_takes_subnormals(self) -> bool:
        """Whether the ``canonical`` hook has a ``subnormals`` keyword (the judge's policy)."""
        return self.canonical is not None and \
            "subnormals" in inspect.signature(self.canonical).parameters

    @functools.cached_property
    def error_bound_takes_subnormals(self) -> bool:
        """Whether the ``error_bound`` hook has a ``subnormals`` keyword (the policy)."""
        return self.error_bound is not None and \
            "subnormals" in inspect.signature(self.error_bound).parameters

    @functools.cached_property
    def lax_takes_bound(self) -> bool:
        """Whether the ``lax`` hook has a ``bound`` keyword: it then receives the binding's
        ``jax.lax`` function (one hook serving several ops, e.g. XLA's binary ops)."""
        return self.lax is not None and "bound" in inspect.signature(self.lax).parameters

    @functools.cached_property
    def lax_takes_dtypes(self) -> bool:
        """Whether the ``lax`` hook has a ``dtypes`` keyword: it then receives the input dtype
        names."""
        return self.lax is not None and "dtypes" in inspect.signature(self.lax).parameters

    def __post_init__(self):
        if not callable(self.feeding) and self.feeding not in FEEDING_KINDS:
            raise ValueError(f"op {self.name}: feeding={self.feeding!r} is not one of "
                             f"{FEEDING_KINDS} or a function")

    @property
    def honours(self) -> frozenset:
        """The spec ``signature`` fields this op's drawer reads."""
        return GENERIC_DRAW_HONOURS if self.draw is None else self.draw_honours

    @property
    def qualified_name(self) -> str:
        """``<op>_v<version>``."""
        return f"{self.name}_v{self.version}"

    def __call__(self, *inputs, **attrs) -> tuple:
        return self.oracle(*inputs, **attrs)


def op(name: str, *, version: int, **hooks) -> Callable[[Callable], OpDefinition]:
    """Declare the decorated oracle as op ``name`` (``version`` counts changes of its meaning).

    >>> @op("double", version=1)
    ... def oracle_double(x):
    ...     return (2 * x,)
    >>> oracle_double.qualified_name
    'double_v1'
    """
    def define(oracle: Callable) -> OpDefinition:
        return OpDefinition(name, version, oracle, module=oracle.__module__, **hooks)

    return define


class UnknownOp(KeyError):
    """No op module defines the op."""

    def __str__(self) -> str:
        return str(self.args[0])


def _definitions_in(module: ModuleType, found: dict[str, OpDefinition]) -> None:
    for value in vars(module).values():
        if isinstance(value, OpDefinition) and value.module == module.__name__:
            other = found.get(value.name)
            if other is not None and other is not value:
                raise ImportError(f"op {value.name!r} is defined twice: in {other.module} and "
                                  f"{value.module}")
            found[value.name] = value


def _public_modules(package: ModuleType) -> list[ModuleType]:
    """``package``'s public modules (names not starting with ``_``), in name order."""
    names = sorted(info.name for info in pkgutil.iter_modules(package.__path__)
                   if not info.name.startswith("_"))
    return [importlib.import_module(f"{package.__name__}.{name}") for name in names]


def _entry_point_modules() -> list[ModuleType]:
    from importlib.metadata import entry_points

    modules = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            modules.append(importlib.import_module(entry.value))
        except Exception as exc:
            raise ImportError(f"op package {entry.name!r} ({entry.value}) of entry-point group "
                              f"{ENTRY_POINT_GROUP} failed to import: {exc}") from exc
    return modules


_REGISTRY: dict[str, OpDefinition] = {}
_REGIONS: dict[str, Callable] = {}
_PACKAGES: list[ModuleType] = []
_MODULES: list[str] = []


def _with_submodules(module: ModuleType) -> list[ModuleType]:
    return [module, *_public_modules(module)] if hasattr(module, "__path__") else [module]


def _load() -> dict[str, OpDefinition]:
    if not _REGISTRY:
        found: dict[str, OpDefinition] = {}
        builtin = _public_modules(importlib.import_module(BUILTIN_PACKAGE))
        installed = _entry_point_modules()
        modules = builtin + [m for package in installed for m in _with_submodules(package)]
        for module in modules:
            _definitions_in(module, found)
        _PACKAGES[:] = installed
        _MODULES[:] = [module.__name__ for module in modules]
        _REGISTRY.update(sorted(found.items()))
    return _REGISTRY


def definitions() -> dict[str, OpDefinition]:
    """Every registered op, by name."""
    return _load()


def definition(name: str) -> OpDefinition:
    """The definition of op ``name``; :class:`UnknownOp` lists the registered ops if none."""
    found = _load().get(name)
    if found is None:
        raise UnknownOp(f"op {name!r} has no definition in any op module; registered: "
                        f"{', '.join(_load())}")
    return found


def op_modules() -> list[str]:
    """The names of the modules discovery imported (built-in, then installed), in order."""
    _load()
    return list(_MODULES)


def package_spec_dirs() -> list[Path]:
    """The folders of installed op packages (entry points), whose YAML specs join the suite."""
    _load()
    return [Path(module.__file__).parent for module in _PACKAGES if hasattr(module, "__path__")]


def region(function: Callable) -> Callable:
    """Declare ``function(ctx) -> mask`` as the implementation-defined region named after it (a
    spec's ``implementation_defined`` entries name regions; ``ctx`` is a
    :class:`conform.ops.regions.RegionContext`). Returns ``function`` unchanged.

    >>> @region
    ... def nowhere_at_all(ctx):
    ...     return ctx.none()
    >>> regions()["nowhere_at_all"] is nowhere_at_all
    True
    """
    other = _REGIONS.get(function.__name__)
    if other is not None and other.__module__ != function.__module__:
        raise ImportError(f"region {function.__name__!r} is declared twice: in {other.__module__} "
                          f"and {function.__module__}")
    _REGIONS[function.__name__] = function
    return function


def regions() -> dict[str, Callable]:
    """Every declared region, by name (discovering the op modules first)."""
    _load()
    return _REGIONS
