"""onnxruntime with injected bugs, named by import path in the op tests. Most ignore one
attribute of one op (the model it runs has that attribute at its default), as a kernel that
never reads it would. Each class names the op and the attribute."""
from __future__ import annotations

import dataclasses

import numpy as np

from conform.harness.backends.models import Model
from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend


class _IgnoredAttribute(OnnxRuntimeBackend):
    target_ops: tuple = ()
    attribute = ""
    default = 0

    def prepare(self, *, program, inputs, model=None):
        case = program.case
        if program.op in self.target_ops and case.attrs.get(self.attribute, self.default) != self.default:
            ignored = dataclasses.replace(case, attrs={**case.attrs, self.attribute: self.default})
            model = Model("onnx", program.spec, ignored)
        return super().prepare(program=program, inputs=inputs, model=model)


class FirstIndexBackend(_IgnoredAttribute):
    """ArgMax/ArgMin that always return the first of tied extremes."""
    name = "first-index"
    target_ops, attribute = ("onnx_arg_max", "onnx_arg_min"), "select_last_index"


class InclusiveCumSumBackend(_IgnoredAttribute):
    """CumSum that always includes the element itself (an off-by-one prefix)."""
    name = "inclusive-cum-sum"
    target_ops, attribute = ("onnx_cum_sum",), "exclusive"


class ReducingNoopBackend(_IgnoredAttribute):
    """ReduceLogSumExp/L2/Prod that reduce every axis where noop_with_empty_axes asks for none."""
    name = "reducing-noop"
    target_ops = ("onnx_reduce_log_sum_exp", "onnx_reduce_l2", "onnx_reduce_prod")
    attribute = "noop_with_empty_axes"


class InclusiveLimitRangeBackend(OnnxRuntimeBackend):
    """Range run with limit + delta: one element too many (the limit taken as inclusive)."""
    name = "inclusive-limit-range"

    def prepare(self, *, program, inputs, model=None):
        if program.op == "onnx_range":
            start, limit, delta = inputs
            inputs = [start, np.asarray(limit + delta, dtype=limit.dtype), delta]
        return super().prepare(program=program, inputs=inputs, model=model)


class EqualSplitBackend(OnnxRuntimeBackend):
    """Split that ignores the split sizes and cuts equal chunks (num_outputs) instead."""
    name = "equal-split"

    def prepare(self, *, program, inputs, model=None):
        case = program.case
        if program.op == "onnx_split" and case.attrs["split"] is not None:
            equal = dataclasses.replace(case, attrs={**case.attrs, "split": None,
                                                     "num_outputs": len(case.attrs["split"])})
            model = Model("onnx", program.spec, equal)
        return super().prepare(program=program, inputs=inputs, model=model)
