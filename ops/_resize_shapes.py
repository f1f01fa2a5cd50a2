"""The boundaries of ONNX Resize's output lengths: ``output_dimension = floor(input_dimension *
(roi_end - roi_start) * scale)`` (or the ``sizes`` given), drawn at an output length of 1 and 0,
and a tf_crop_and_resize crop region on an axis whose scale is 1 (the drawer crops only the
axes it rescales, so a crop of an unscaled axis, whose length the roi alone changes, is never
drawn there), given as scales (the crop alone changes the length) and as sizes equal to the
input's length (the crop changes the samples, not the length).
"""
from __future__ import annotations

from conform.dtypes import FLOAT_FORMATS

#: (attributes, input shape) with ``mode`` filled in per type (linear for floats, nearest for
#: integers, whose cases are nearest only).
RESIZE_BOUNDARIES = (
    ({"coordinate_transformation_mode": "asymmetric", "scales": [1.0, 0.25]}, (2, 4)),  # 4 -> 1
    ({"coordinate_transformation_mode": "asymmetric", "scales": [1.0, 0.2]}, (2, 4)),   # 4 -> 0
    ({"coordinate_transformation_mode": "asymmetric", "sizes": [1, 1]}, (2, 4)),        # sizes 1
    # the crop alone shortens axis 1 (scale 1): 4 * (0.75 - 0.25) * 1 = 2, then to 1 element
    ({"coordinate_transformation_mode": "tf_crop_and_resize", "scales": [1.0, 1.0],
      "roi": [0.0, 0.25, 1.0, 0.75]}, (2, 4)),
    ({"coordinate_transformation_mode": "tf_crop_and_resize", "scales": [1.0, 1.0],
      "roi": [0.0, 0.5, 1.0, 0.75]}, (2, 4)),
    # the same crop of the unscaled axis 1 while axis 0 is rescaled (2 -> 4)
    ({"coordinate_transformation_mode": "tf_crop_and_resize", "scales": [2.0, 1.0],
      "roi": [0.0, 0.25, 1.0, 0.75]}, (2, 4)),
    # the crops of axis 1 given as sizes: the crop's own length, sampled at scale 1
    ({"coordinate_transformation_mode": "tf_crop_and_resize", "sizes": [2, 2],
      "roi": [0.0, 0.25, 1.0, 0.75]}, (2, 4)),
    ({"coordinate_transformation_mode": "tf_crop_and_resize", "sizes": [2, 1],
      "roi": [0.0, 0.5, 1.0, 0.75]}, (2, 4)),
    # a crop of an axis whose length does not change (sizes 4 of 4: the middle half of axis 1
    # sampled at 4 points), the other axis left whole, then rescaled (2 -> 4)
    ({"coordinate_transformation_mode": "tf_crop_and_resize", "sizes": [2, 4],
      "roi": [0.0, 0.25, 1.0, 0.75]}, (2, 4)),
    ({"coordinate_transformation_mode": "tf_crop_and_resize", "sizes": [4, 4],
      "roi": [0.0, 0.25, 1.0, 0.75]}, (2, 4)),
)


def resize_boundaries(kit, spec, dtype) -> list:
    """The rows of :data:`RESIZE_BOUNDARIES` under ``dtype``."""
    mode = "linear" if dtype in FLOAT_FORMATS else "nearest"
    return [kit.Signature((dtype,), (shape,), {"mode": mode, **attrs}, dtype)
            for attrs, shape in RESIZE_BOUNDARIES]
