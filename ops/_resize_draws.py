"""How ONNX Resize's cases are drawn (ops/onnx_resize.py registers the ops): an input, the
attributes (honouring the covering design's rows), axes, and per resized axis a scale or a size,
with a crop region for tf_crop_and_resize."""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import FLOAT_FORMATS, is_complex

#: Scales exact in float32 whose products with a side are exact: no reading of floor() differs.
EXACT_SCALES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0)
#: Scales whose float32 value is not the decimal one (drawn where floor(side * scale) is at
#: least 1e-3 from an integer, so that the output's length does not rest on the precision of
#: the product, which the text leaves open and a shape cannot be a per-element region).
OTHER_SCALES = tuple(float(np.float32(s)) for s in (0.6, 0.8, 1.7, 1 / 3, 2 / 3, 2.2))
ROI_STARTS, ROI_ENDS = (0.0, 0.125, 0.25, -0.25), (1.0, 0.75, 0.875, 1.25)


#: extrapolation_value (a float attribute) for non-float types: values the type holds exactly
#: (bool: 0.0 and 1.0, its two values as numbers); text holds none (region
#: resize_text_extrapolation)
EXTRAPOLATION_HELD = {"bool": [0.0, 1.0]}


def _maybe(draw, kit, name, values):
    """One of ``values`` or None (the attribute left out, for its default); the covering
    design's class where it fixes one (``kit.choose``)."""
    return kit.choose(draw, name, (None,) + tuple(values))


def _draw_attrs(draw, kit, dom: dict, dtype: str) -> dict:
    """The attributes: each drawn where the mode reads it, and set where the covering design
    fixes it even where the mode does not read it (the text then ignores it: nearest_mode under
    linear, extrapolation_value without tf_crop_and_resize), apart from exclude_outside 1 under
    nearest (the spec's excluded_pairs say why). Types other than float and complex: nearest
    only (the text does not say how a weighted average becomes an integer, a bool or a text),
    and an extrapolation_value the type holds (:data:`EXTRAPOLATION_HELD`); complex: every
    mode, its real and imaginary parts resized alike (the text's weights are real)."""
    interpolated = dtype in FLOAT_FORMATS or is_complex(dtype)   # complex: parts alike
    modes = dom["mode"] if interpolated else ["nearest"]
    attrs = {"mode": kit.choose(draw, "mode", modes)}
    if attrs["mode"] == "nearest" and kit.designed("mode") is None and draw(kit.st.booleans()):
        attrs["mode"] = None
    mode = attrs["mode"] or "nearest"   # the text's default
    if "coordinate_transformation_mode" in dom:
        attrs["coordinate_transformation_mode"] = _maybe(draw, kit, "coordinate_transformation_mode",
                                                         dom["coordinate_transformation_mode"])
    crop = attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize"
    for name, wanted in (("nearest_mode", mode == "nearest"), ("cubic_coeff_a", mode == "cubic"),
                         ("exclude_outside", mode != "nearest"), ("antialias", mode != "nearest"),
                         ("extrapolation_value", crop)):
        values = dom.get(name) if interpolated or name != "extrapolation_value" \
            else EXTRAPOLATION_HELD.get(dtype, [0.0, 3.0])
        ignored = kit.designed(name) not in (None, *([1] if name == "exclude_outside" else []))
        if values and (wanted or ignored):
            attrs[name] = _maybe(draw, kit, name, values)
    return attrs


def _draw_scale(draw, st, side: int, extent: float) -> float:
    """A scale giving at least one output element, its product with the side clear of ties."""
    usable = [s for s in EXACT_SCALES + OTHER_SCALES
              if side * extent * s >= 1 and (s in EXACT_SCALES or abs(
                  side * extent * s - round(side * extent * s)) > 1e-3)]
    return draw(st.sampled_from(usable))


def _draw_roi(draw, st, side: int, resized: bool) -> tuple:
    """An axis's crop region (start, end): on a resized axis always, and two times in three on
    an axis whose scale is 1 or whose size is its own (its region still moves the samples), where
    the scale-1 output length ``floor(side * (end - start))`` is at least 1."""
    if not resized and not draw(st.integers(0, 2)):
        return 0.0, 1.0
    start, end = draw(st.sampled_from(ROI_STARTS)), draw(st.sampled_from(ROI_ENDS))
    return (start, end) if resized or side * (end - start) >= 1 else (0.0, 1.0)


def _aspect_ok(shape, axes, sizes, policy) -> bool:
    """Whether ``keep_aspect_ratio_policy`` gives every axis at least one element, far from a
    rounding tie (the text's round_int rounds ties up; the precision of the ratio it rounds is
    open, so cases near a tie are not drawn)."""
    if policy in (None, "stretch"):
        return True
    ratios = [n / shape[a] for n, a in zip(sizes, axes)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    widths = [scale * shape[a] for a in axes]
    return all(w >= 0.5 and abs(w - np.floor(w) - 0.5) > 1e-6 for w in widths)


def draw_resize(draw, kit, spec, dtype, *, family: int):
    """An input of rank 1 to 4 (sides 1 to 5), the spec's attributes (each now and then left
    out), ``axes`` (from Resize-18), and per resized axis a scale or an output size (scales or
    sizes, never both), with a roi for tf_crop_and_resize."""
    st = kit.st
    dom = {name: domain["choice"] for name, domain in spec.signature.get("attrs", {}).items()}
    rank = draw(st.sampled_from((1, 2, 2, 3, 4, 4)))
    shape = []   # sides of 1 to 5, at most 32 elements (each side within what is left)
    for _ in range(rank):
        shape.append(draw(st.integers(1, min(5, 32 // math.prod(shape)))))
    attrs = _draw_attrs(draw, kit, dom, dtype)
    axes = list(range(rank))
    if family >= 18 and draw(st.booleans()):
        axes = list(draw(st.permutations(range(rank))))[:draw(st.integers(1, rank))]
        attrs["axes"] = [a - rank if draw(st.booleans()) else a for a in axes]
    # mostly the trailing two axes of a higher rank (an image's), now and then any of them
    trailing = {a for a in axes if a >= rank - 2}
    resized = (trailing if draw(st.integers(0, 2)) else {a for a in axes if draw(st.booleans())}) \
        or {axes[-1]}
    crop = attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize"
    roi = [_draw_roi(draw, st, shape[a], a in resized) if crop else (0.0, 1.0) for a in axes]
    if crop:
        attrs["roi"] = [r[0] for r in roi] + [r[1] for r in roi]
    # a policy other than stretch "is not applicable when the scales input is used"
    sized = kit.designed("keep_aspect_ratio_policy", "stretch") != "stretch"
    if family == 10 or not (sized or draw(st.booleans())):
        attrs["scales"] = [_draw_scale(draw, st, shape[a], r[1] - r[0]) if a in resized else 1.0
                           for a, r in zip(axes, roi)]
        if kit.designed("keep_aspect_ratio_policy") == "stretch":   # the others need sizes
            attrs["keep_aspect_ratio_policy"] = "stretch"
    else:
        attrs["sizes"] = [draw(st.integers(1, 3 * shape[a])) if a in resized else shape[a]
                          for a in axes]
        if "keep_aspect_ratio_policy" in dom:
            policy = _maybe(draw, kit, "keep_aspect_ratio_policy", dom["keep_aspect_ratio_policy"])
            if _aspect_ok(shape, axes, attrs["sizes"], policy):
                attrs["keep_aspect_ratio_policy"] = policy
    return kit.Signature((dtype,), (tuple(shape),), attrs, dtype)
