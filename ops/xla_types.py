"""The element types each XLA-bound op takes, by the StableHLO constraint classes of its operand.

XLA's operation semantics (seeds/004_c11ff90b720ca9d5.txt) types operands as ``T`` and names
few classes (PRED for comparisons, IsFinite and Select's ``pred``); the element types themselves
are StableHLO's (openxla/stablehlo docs/spec.md, "Types", commit 3c9301c1)::

    TensorElementType ::= BooleanType | IntegerType | FloatType | ComplexType
    SignedIntegerType ::= 'si2' | 'si4' | 'si8' | 'si16' | 'si32' | 'si64'
    UnsignedIntegerType ::= 'ui2' | 'ui4' | 'ui8' | 'ui16' | 'ui32' | 'ui64'
    FloatType ::= 'f4E2M1FN' | 'f6E2M3FN' | 'f6E3M2FN' | 'f8E3M4' | 'f8E4M3' | 'f8E4M3FN'
                | 'f8E4M3FNUZ' | 'f8E4M3B11FNUZ' | 'f8E5M2' | 'f8E5M2FNUZ' | 'f8E8M0FNU'
                | 'bf16' | 'f16' | 'f32' | 'f64'
    ComplexElementType ::= 'f32' | 'f64'

and each op's class is its operand's row in the spec's "Inputs" table (``abs``: "tensor of
signed integer, floating-point, or complex type"; ``add``: "tensor", every element type). The
CHLO ops (acos, erf, lgamma, ...) are not in docs/spec.md: their class is their operand's in
stablehlo/dialect/ChloOps.td (``HLO_AnyFpOrComplexTensor``, ``HLO_AnyFpTensor``).

Types are named as conform (docs/dtypes.md) and ml_dtypes name them: every StableHLO element
type is in conform's vocabulary. A label's first type is the operand's, its last
(after ``->``) the result's.
"""
from __future__ import annotations

BOOL = frozenset({"bool"})
SIGNED = frozenset({"int2", "int4", "int8", "int16", "int32", "int64"})
UNSIGNED = frozenset({"uint2", "uint4", "uint8", "uint16", "uint32", "uint64"})
INTEGER = SIGNED | UNSIGNED
FLOAT = frozenset({"float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
                   "float8_e4m3", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
                   "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "bfloat16", "float16",
                   "float32", "float64"})
COMPLEX = frozenset({"complex64", "complex128"})
#: "tensor": every TensorElementType
ANY = BOOL | INTEGER | FLOAT | COMPLEX

_INT_FLOAT_COMPLEX = INTEGER | FLOAT | COMPLEX
_FLOAT_COMPLEX = FLOAT | COMPLEX


def _each(names: str, stablehlo: str | None, operand: frozenset, result=None) -> dict:
    return {name: (stablehlo or name, operand, result) for name in names.split()}


#: conform spec name -> (StableHLO or CHLO op, operand types, result types or None: any).
TABLE: dict[str, tuple[str, frozenset, frozenset | None]] = {
    # "tensor or (per-tensor) quantized tensor": every element type
    **_each("add multiply maximum minimum clamp concatenate dynamic_slice dynamic_update_slice "
            "gather pad reshape slice transpose select sort get_dimension_size map "
            "optimization_barrier all_gather all_to_all all_reduce collective_permute "
            "reduce_scatter dot_general select_and_scatter while composite_call custom_call "
            "infeed outfeed send recv", None, ANY),
    **_each("eq ne ge gt le lt", "compare", ANY, BOOL),
    **_each("broadcast broadcast_in_dim", "broadcast_in_dim", ANY),
    **_each("collapse", "reshape", ANY),
    **_each("rev", "reverse", ANY),
    **_each("cross_replica_sum", "all_reduce", ANY),
    **_each("dot", "dot_general", ANY),
    **_each("conv conv_shorthand", "convolution", ANY),
    **_each("reduce_sum reduce_max reduce_min reduce_argmax", "reduce", ANY),
    **_each("reduce_window_sum reduce_window_max", "reduce_window", ANY),
    **_each("scatter scatter_add scatter_max scatter_min scatter_mul", "scatter", ANY),
    **_each("top_k", "chlo.top_k", ANY),
    **_each("call", "call (func.call)", ANY),
    **_each("conditional", "if", ANY),
    **_each("conditional_index", "case", ANY),
    **_each("get_tuple_element", None, ANY),
    **_each("set_dimension_size", None, ANY),
    **_each("convert_element_type", "convert", ANY, ANY),
    **_each("bitcast_convert_type", "bitcast_convert", ANY, ANY),
    # "tensor of integer, floating-point, or complex type"
    **_each("subtract divide remainder power negate", None, _INT_FLOAT_COMPLEX),
    **_each("iota", None, _INT_FLOAT_COMPLEX),   # its result: the label is the result's type
    # "tensor of signed integer, floating-point, or complex type"
    **_each("abs sign", None, SIGNED | FLOAT | COMPLEX),
    # "tensor of floating-point or complex type"
    **_each("atan2 cbrt cholesky triangular_solve real imag", None, _FLOAT_COMPLEX),
    # fft's operand: "tensor of floating-point or complex type", but under RFFT "element_type(
    # result) is a complex type of the same floating-point semantics" (fft's constraint C2) and
    # ComplexElementType is f32 or f64 only: a float16 or float8 operand has no RFFT
    **_each("fft", None, frozenset({"float32", "float64"}) | COMPLEX),
    **_each("cos", "cosine", _FLOAT_COMPLEX),
    **_each("sin", "sine", _FLOAT_COMPLEX),
    **_each("exp exp2", "exponential", _FLOAT_COMPLEX),
    **_each("expm1", "exponential_minus_one", _FLOAT_COMPLEX),
    **_each("log1p", "log_plus_one", _FLOAT_COMPLEX),
    **_each("log logistic rsqrt sqrt tan tanh", None, _FLOAT_COMPLEX),
    # ChloOps.td: HLO_AnyFpOrComplexTensor
    **_each("acos acosh asin asinh atan atanh cosh sinh bessel_i1e", "chlo", _FLOAT_COMPLEX),
    # "tensor of floating-point type"
    **_each("ceil floor is_finite reduce_precision round_nearest_even batch_norm_grad "
            "batch_norm_inference batch_norm_training", None, FLOAT),
    **_each("round", "round_nearest_afz", FLOAT),
    **_each("eq_total_order le_total_order lt_total_order", "compare (TOTALORDER)", FLOAT, BOOL),
    **_each("rng_normal", "rng (NORMAL: C2)", FLOAT),
    # ChloOps.td: HLO_AnyFpTensor
    **_each("erf erf_inv digamma lgamma polygamma zeta nextafter igamma igammac bessel_i0e",
            "chlo", FLOAT),
    # "tensor of integer, boolean, or floating-point type"
    **_each("rng_uniform", "rng (UNIFORM)", INTEGER | BOOL | FLOAT),
    # "tensor of integer or floating-point type" (the output; the state is ui64)
    **_each("rng_bit_generator", None, INTEGER | FLOAT),
    # "tensor of integer type"
    **_each("count_leading_zeros", None, INTEGER),
    **_each("population_count", "popcnt", INTEGER),
    **_each("shift_left shift_right_arithmetic shift_right_logical", None, INTEGER),
    # "tensor of boolean or integer type"
    **_each("bitwise_and", "and", BOOL | INTEGER),
    **_each("bitwise_or", "or", BOOL | INTEGER),
    **_each("bitwise_xor", "xor", BOOL | INTEGER),
    **_each("bitwise_not", "not", BOOL | INTEGER),
    # replica_id's result is "0-dimensional tensor of type ui32"; complex's operands f32/f64
    # (its label names the result's type)
    **_each("replica_id", None, frozenset({"uint32"})),
    **_each("complex", None, COMPLEX),
}


def allowed(name: str) -> tuple[frozenset, frozenset] | None:
    """The (operand, result) element types the text allows for conform spec ``name``, or None
    for a spec the table does not type (AfterAll: a token)."""
    entry = TABLE.get(name)
    if entry is None:
        return None
    _, operand, result = entry
    return operand, (operand if result is None else result)


def xla_allows(spec, label: str) -> bool:
    """Whether the XLA text allows the label's types for the spec (its operand type, the label's
    first, and its result type, the last): what a run on an XLA backend draws."""
    found = allowed(spec.op)
    if found is None:
        return True
    operand, result = found
    parts = label.split("->")
    return parts[0] in operand and (len(parts) == 1 or parts[-1] in result)
