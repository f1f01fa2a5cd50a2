"""Backends made of other backends: :func:`load_backend` loads one by name, :class:`Wrapping`
forwards a wrapped backend's declarations and calls (an adapter overrides what it changes)."""
from __future__ import annotations

from conform.harness.backends.base import Backend
from conform.harness.backends.models import legacy, prepare_case, takes_model

#: What a :class:`Wrapping` subclass takes from the backend it wraps unless it sets it itself.
FORWARDED = ("name", "model_format", "subnormals", "ops", "dtypes", "devices", "device_count",
             "spec_binding", "packs")


def load_backend(name: str) -> Backend:
    """An instance of the backend registered as ``name`` (an entry-point name such as
    ``onnxruntime``, or ``module.path:ClassName``). Call it in the worker (in an adapter's
    ``__init__``), never at import time: that is where a backend may start its runtime."""
    from conform.harness.backends.registry import load_backend_class

    return load_backend_class(name)()


class Wrapping(Backend):
    """A backend that runs another one, named in ``wraps``.

    A subclass setting ``wraps = "onnxruntime"`` gets that backend's declarations (``name``,
    ``model_format``, ``subnormals``, ``ops``, ``dtypes``, ``devices``, ``spec_binding``) for
    each one it does not set itself, when the class is made, so that ``conform list --backend``
    reads them without instantiating it. An instance loads the wrapped backend
    (:attr:`wrapped`; or takes one: ``Wrapping(backend)``) and forwards :meth:`version`,
    :meth:`device`, :meth:`stats`, :meth:`run` and :meth:`prepare` to it, calling it under the
    contract it implements (1, 2 or 3). Override any of them; ``super().prepare(...)`` forwards.
    """

    wraps: str = ""   # the wrapped backend, as `conform run --backend` names it

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.wraps:
            return
        from conform.harness.backends.registry import load_backend_class

        _forward(cls, load_backend_class(cls.wraps), _own(cls))

    def __init__(self, wrapped: Backend | None = None):
        if wrapped is None:
            if not self.wraps:
                raise TypeError(f"{type(self).__name__}: set `wraps` or pass the backend to wrap")
            wrapped = load_backend(self.wraps)
        self.wrapped = wrapped
        if not self.wraps:   # a backend handed over: its declarations, on the instance
            _forward(self, wrapped, _own(type(self)))
        self._takes_model, self._legacy = takes_model(wrapped), legacy(wrapped)

    def version(self) -> str:
        return self.wrapped.version()

    def device(self) -> str:
        return self.wrapped.device()

    def stats(self) -> dict:
        return self.wrapped.stats()

    def run(self, *, program, inputs, model=None):
        return self.prepare(program=program, inputs=inputs, model=model)()

    def prepare(self, *, program, inputs, model=None):
        return prepare_case(self.wrapped, program.spec, program.case, model=model, inputs=inputs,
                            with_model=self._takes_model, old=self._legacy)


def _own(cls) -> set:
    """The names a Wrapping subclass (or a class between it and Wrapping) sets itself."""
    return {key for klass in cls.__mro__ if klass not in Wrapping.__mro__ for key in vars(klass)}


def _forward(target, wrapped, own: set) -> None:
    for key in FORWARDED:
        if key not in own and hasattr(wrapped, key):
            setattr(target, key, getattr(wrapped, key))
