"""ONNX ImageDecoder (ai.onnx, opset 20), written from the operator's text
(``onnx.defs.get_schema("ImageDecoder", 20).doc``): "Loads and decodes and image from a file.
If it can't decode for any reason (e.g. corrupted encoded stream, invalid format, it will
return an empty matrix)." Formats: BMP, JPEG, JPEG2000, TIFF, PNG, WebP and the portable
formats (PBM, PGM, PPM, ...); "Decoded images follow a channel-last layout: (Height, Width,
Channels)"; ``pixel_format`` "RGB" (default), "BGR" or "Grayscale"; uint8 in, uint8 out.

The suite encodes its own images: a case's attributes name the picture (``source``: gray,
colour or bilevel; ``height``, ``width`` and ``pixel_seed``, from which :func:`source_pixels`
makes its pixels) and the ``image_format``; the fill hook encodes the picture with Pillow,
drawing the encoder's options (compression, effort, progression order, quality) from the
case's seed, so that the cases of one signature are the same picture coded several ways. The
oracle never decodes: a lossless format gives the source pixels back, arranged by
``pixel_format`` (a gray picture is the same picture in each format: ``(v, v, v)`` in RGB and
BGR, ``v`` in Grayscale; a bilevel one is black 0 and white 255, Netpbm's PBM "1 is black").
What the text leaves open is declared: the grayscale value of a colour pixel (the text names
no conversion) and the pixels of a lossy format (:func:`image_decoder_lossy_pixels`); bytes
that are no image, or a PNG cut inside its image data, give the empty matrix.
"""
from __future__ import annotations

import io

import numpy as np

from conform.op_registry import op, region

#: image_format -> (Pillow's format name, the sources drawn for it); every format the text
#: lists that Pillow writes (WebP keeps colour only: a gray picture is stored as colour)
FORMATS = {"png": ("PNG", ("gray", "colour", "bilevel")),
           "bmp": ("BMP", ("gray", "colour", "bilevel")),
           "tiff": ("TIFF", ("gray", "colour", "bilevel")),
           "pnm": ("PPM", ("gray", "colour", "bilevel")),   # PGM, PPM and PBM
           "webp_lossless": ("WEBP", ("colour",)),
           "jpeg2000": ("JPEG2000", ("gray", "colour")),     # reversible 5/3 wavelet: lossless
           "jpeg": ("JPEG", ("gray", "colour")),
           "webp_lossy": ("WEBP", ("colour",))}
#: formats whose pixels the text and the codecs' standards leave open (see the region)
LOSSY = frozenset({"jpeg", "webp_lossy"})
#: streams that are no decodable image: the text's "empty matrix"
UNDECODABLE = ("not_an_image", "truncated_png")
#: Pillow's mode of each source
MODES = {"gray": "L", "colour": "RGB", "bilevel": "1"}
#: sides drawn: 1, odd and even, a JPEG block's 8 and past it
SIDES = (1, 2, 3, 5, 8, 13)
PIXEL_FORMATS = ("RGB", "BGR", "Grayscale")


def channels(pixel_format: str) -> int:
    """The decoded image's channel count: 1 for Grayscale, 3 for RGB and BGR."""
    return 1 if pixel_format == "Grayscale" else 3


def source_pixels(source: str, height: int, width: int, pixel_seed: int) -> np.ndarray:
    """The picture a case encodes, uint8 ``(height, width, 1 or 3)``: noise over [0, 255],
    a flat picture, or the extremes 0 and 255 only (by ``pixel_seed % 3``); a bilevel picture
    is 0 and 255."""
    rng = np.random.default_rng(pixel_seed)
    shape = (height, width, 3 if source == "colour" else 1)
    pattern = pixel_seed % 3
    if source == "bilevel" or pattern == 2:
        return (rng.integers(0, 2, shape) * 255).astype(np.uint8)
    if pattern == 1:
        return np.broadcast_to(rng.integers(0, 256, shape[2:]), shape).astype(np.uint8)
    return rng.integers(0, 256, shape).astype(np.uint8)


def arranged(pixels: np.ndarray, pixel_format: str) -> np.ndarray:
    """Pixels ``(H, W, 1 or 3)`` (RGB, or one gray value) as int64 ``(H, W, C)`` in
    ``pixel_format``: RGB as is, BGR reversed, a gray value v as ``(v, v, v)`` or ``v``; a
    colour picture in Grayscale gives its first channel (a region: the text names no
    conversion)."""
    pixels = np.asarray(pixels).astype(np.int64)
    if pixel_format == "Grayscale":
        return pixels[..., :1]
    rgb = np.broadcast_to(pixels, pixels.shape[:2] + (3,))
    return rgb[..., ::-1] if pixel_format == "BGR" else rgb


def _encoder_options(rng, image_format: str, source: str, height: int, width: int) -> dict:
    """Pillow's save options for one coding of the picture, drawn from ``rng``."""
    pick = lambda options: options[int(rng.integers(len(options)))]  # noqa: E731
    if image_format == "png":
        return {"compress_level": int(rng.integers(0, 10))}
    if image_format == "tiff":
        extra = ("group4",) if source == "bilevel" else ()
        return {"compression": pick((None, "tiff_lzw", "tiff_adobe_deflate", "packbits") + extra)}
    if image_format == "webp_lossless":
        return {"lossless": True, "method": int(rng.integers(0, 7)), "quality": int(rng.integers(0, 101))}
    if image_format == "webp_lossy":
        return {"lossless": False, "quality": int(rng.integers(1, 101))}
    if image_format == "jpeg":
        return {"quality": int(rng.integers(1, 101)), "subsampling": int(rng.integers(0, 3))}
    if image_format == "jpeg2000":
        levels = 1 + int(np.log2(min(height, width)))
        return {"irreversible": False, "num_resolutions": int(rng.integers(1, min(levels, 6) + 1)),
                "progression": pick(("LRCP", "RLCP", "RPCL", "PCRL", "CPRL"))}
    return {}


def encode(pixels: np.ndarray, source: str, image_format: str, options: dict) -> bytes:
    """``pixels`` (``(h, w, c)`` uint8) coded by Pillow in ``image_format`` with ``options``."""
    from PIL import Image

    plane = pixels[..., 0] if pixels.shape[2] == 1 else pixels
    picture = Image.fromarray(plane > 127) if source == "bilevel" else Image.fromarray(plane, MODES[source])
    stream = io.BytesIO()
    picture.save(stream, FORMATS[image_format][0], **options)
    return stream.getvalue()


def truncated_png(rng, pixels: np.ndarray, source: str) -> bytes:
    """The PNG of ``pixels`` cut inside the first half of its first IDAT chunk's data: the
    image data are incomplete (a corrupted stream, whatever the decoder)."""
    whole = encode(pixels, source, "png", {"compress_level": int(rng.integers(0, 10))})
    at = whole.index(b"IDAT")
    size = int.from_bytes(whole[at - 4:at], "big")
    return whole[:at + 4 + int(rng.integers(0, size // 2 + 1))]


def not_an_image(rng) -> bytes:
    """Bytes that begin with no image format's signature (a zero byte, then text), then noise."""
    return b"\x00conform: not an image\n" + rng.integers(0, 256, int(rng.integers(0, 64)), np.uint8).tobytes()


def fill_image(rng, signature, plan):
    """The encoded stream: the case's picture coded with options drawn from ``rng``, or for the
    undecodable formats bytes that are no image and a truncated PNG."""
    attrs = signature.attrs
    fmt, source = attrs["image_format"], attrs["source"]
    pixels = source_pixels(source, attrs["height"], attrs["width"], attrs["pixel_seed"])
    if fmt == "not_an_image":
        data = not_an_image(rng)
    elif fmt == "truncated_png":
        data = truncated_png(rng, pixels, source)
    else:
        data = encode(pixels, source, fmt, _encoder_options(rng, fmt, source, *pixels.shape[:2]))
    return [np.frombuffer(data, np.uint8).copy()]


def draw_image(draw, kit, spec, dtype):
    """An image format (or an undecodable stream), a source its format holds, a size, a
    pixel seed and ``pixel_format`` (absent: its default RGB)."""
    st = kit.st
    fmt = draw(st.sampled_from(tuple(FORMATS) + UNDECODABLE))
    sources = FORMATS[fmt][1] if fmt in FORMATS else ("gray", "colour")
    attrs = {"image_format": fmt, "source": draw(st.sampled_from(sources)),
             "height": draw(st.sampled_from(SIDES)), "width": draw(st.sampled_from(SIDES)),
             "pixel_seed": draw(st.integers(0, 2**31 - 1))}
    given = draw(st.sampled_from((None,) + PIXEL_FORMATS))
    if given is not None:
        attrs["pixel_format"] = given
    return kit.Signature(("uint8",), ((0,),), attrs, "uint8")


def boundaries_image(kit, spec, dtype):
    """At the shape's edges, every format with every source it holds: a 1x1 picture, a 1x13
    strip and a 13x1 column (pixel_format in turn RGB, BGR, Grayscale, absent); and each
    undecodable stream (the empty matrix), in each pixel_format."""
    cases = []
    for fmt, (_, sources) in FORMATS.items():
        for source in sources:
            for height, width in ((1, 1), (1, 13), (13, 1)):
                cases.append({"image_format": fmt, "source": source, "height": height,
                              "width": width, "pixel_seed": len(cases)})
    cases += [{"image_format": fmt, "source": "colour", "height": 5, "width": 3, "pixel_seed": k}
              for fmt in UNDECODABLE for k in range(len(PIXEL_FORMATS))]
    for k, attrs in enumerate(cases):
        if k % 4 < 3:
            attrs["pixel_format"] = PIXEL_FORMATS[k % 4]
    return [kit.Signature(("uint8",), ((0,),), attrs, "uint8") for attrs in cases]


def onnx_image_decoder(case, graph):
    """One ImageDecoder node: pixel_format where the case gives it (the rest of the case's
    attributes describe the picture, not the operator)."""
    given = {"pixel_format": case.attrs["pixel_format"]} if "pixel_format" in case.attrs else {}
    graph.node("ImageDecoder", [graph.inputs[0]], **given)


def numpy_image_decoder(encoded_stream, *, pixel_format="RGB", **_):
    """The numpy backend (NumPy has no codec: Pillow decodes into a NumPy array): the stream
    opened and decoded by Pillow, converted to RGB (BGR: its channels reversed) or to L; a
    stream Pillow cannot decode gives the empty matrix ``(0, 0, channels)``."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(encoded_stream.tobytes())) as picture:
            decoded = np.asarray(picture.convert("L" if pixel_format == "Grayscale" else "RGB"))
    except (OSError, ValueError, SyntaxError):
        return (np.zeros((0, 0, channels(pixel_format)), np.uint8),)
    if pixel_format == "Grayscale":
        return (decoded[..., None].copy(),)
    return (decoded[..., ::-1].copy() if pixel_format == "BGR" else decoded.copy(),)


def canonical_image(outputs, case):
    """The text's "empty matrix" has no shape: any output without elements for an undecodable
    stream becomes the oracle's ``(0, 0, channels)`` (an output with elements is left alone)."""
    (image,) = outputs
    image = np.asarray(image)
    if case.attrs["image_format"] in UNDECODABLE and image.size == 0:
        return [np.zeros((0, 0, channels(case.attrs.get("pixel_format", "RGB"))), image.dtype)]
    return outputs


def from_onnx_image_decoder(inputs, attrs, opset):
    """No ImageDecoder node is read back as a case: the oracle is no decoder, it knows the
    pictures the suite codes itself (the case's attributes name them), not another stream's."""
    raise ValueError("the oracle knows only the pictures the suite codes itself, not an "
                     "arbitrary encoded stream")


@op("onnx_image_decoder", version=1, draw=draw_image, fill=fill_image, canonical=canonical_image,
    boundaries=boundaries_image,
    onnx=onnx_image_decoder, numpy=numpy_image_decoder, value_dependent_shape=True,
    feeding=lambda inputs, attrs, index: [None] * len(inputs), from_onnx=from_onnx_image_decoder)
def oracle_image_decoder(encoded_stream, *, image_format, source, height, width, pixel_seed,
                         pixel_format="RGB"):
    """ImageDecoder of the suite's own coding of the picture the attributes name: its pixels
    ``(H, W, C)``, channel-last, in ``pixel_format``'s order (BGR: RGB reversed; a gray or
    bilevel picture, one value v per pixel, is ``(v, v, v)`` in RGB and BGR and ``v`` in
    Grayscale); the empty matrix ``(0, 0, C)`` for an undecodable stream ("If it can't decode
    for any reason ... it will return an empty matrix")."""
    if image_format in UNDECODABLE:
        return (np.zeros((0, 0, channels(pixel_format)), np.int64),)
    return (arranged(source_pixels(source, height, width, pixel_seed), pixel_format),)


@region
def image_decoder_grayscale_of_colour(ctx) -> np.ndarray:
    """Every pixel of a colour picture decoded as Grayscale: the text lists "Grayscale" as a
    pixel format and names no conversion from colour (no luma weights, no rounding)."""
    colour = ctx.attrs.get("source") == "colour"
    return np.full(ctx.expected.shape, colour and ctx.attrs.get("pixel_format") == "Grayscale")


@region
def image_decoder_lossy_pixels(ctx) -> np.ndarray:
    """Every pixel of a JPEG or lossy WebP stream: the codec's standard leaves the decoded
    values open within an accuracy (ITU-T T.81 defines the IDCT mathematically and T.83 tests a
    decoder's output against a reference within a tolerance, not bit for bit), and neither it
    nor the ONNX text fixes the YCbCr to RGB arithmetic (JFIF) or, for WebP, the YUV to RGB
    conversion and chroma upsampling (RFC 6386 fixes the YUV planes only)."""
    return np.full(ctx.expected.shape, ctx.attrs.get("image_format") in LOSSY)
