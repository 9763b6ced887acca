"""A small drawing surface for the pages' pictures (Pillow): a grid of coloured cells, a frame, a line, text,
a colour bar with its ticks, and the PNG.

The pictures were drawn with matplotlib's Agg before; its import (about 0.27 s with torch loaded) and its drawing
(0.08-0.12 s a picture, most of it axes and tick objects these pictures do not show) were a large part of a
batch's serial start and of a failing ``grade check --html``. Pillow imports in about 0.01 s and draws a picture
in a few milliseconds. Positions are in pixels, sizes of text in points (1/72 inch) at ``dpi``; the font is the
one Pillow ships (the same on every OS), so a picture is the same everywhere.
"""
from __future__ import annotations

import io
import math
from functools import cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

#: characters the shipped font (Aileron) has no glyph for, as the ASCII it has; and its space, a fifth of an em,
#: which runs words together at these sizes ("rowsums"), doubled
_PLAIN = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2014": "-", " ": "  "})


@cache
def font(pixels: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=pixels)


def cell_edges(cells: int, pixels: int) -> np.ndarray:
    """Which cell each of ``pixels`` pixels shows (nearest, as an image scaled up), and so where each cell
    begins: ``edges[c]`` is cell c's first pixel, ``edges[cells]`` == ``pixels``."""
    index = ((np.arange(pixels) + 0.5) * cells / pixels).astype(np.intp)
    return np.searchsorted(index, np.arange(cells + 1))


class Picture:
    def __init__(self, width: float, height: float, dpi: int):
        """``width`` and ``height`` in inches."""
        self.dpi = dpi
        self.image = Image.new("RGB", (self.px(width), self.px(height)), "white")
        self.pen = ImageDraw.Draw(self.image)

    def px(self, inches: float) -> int:
        return round(inches * self.dpi)

    def font(self, points: float):
        return font(max(1, round(points * self.dpi / 72)))

    def text(self, xy, words: str, points: float, anchor: str = "mm", fill="black", align: str = "center") -> None:
        words = words.translate(_PLAIN)
        if "\n" in words:
            self.pen.multiline_text(xy, words, fill=fill, font=self.font(points), anchor=anchor, align=align,
                                    spacing=1)
        else:
            self.pen.text(xy, words, fill=fill, font=self.font(points), anchor=anchor)

    def text_width(self, words: str, points: float) -> float:
        return self.font(points).getlength(words.translate(_PLAIN))

    def upright_text(self, xy, words: str, points: float, fill="black") -> None:
        """Text read bottom to top (an axis label on the left), its middle at ``xy``."""
        f = self.font(points)
        words = words.translate(_PLAIN)
        left, top, right, bottom = f.getbbox(words)
        strip = Image.new("RGB", (right - left + 2, bottom - top + 2), "white")
        ImageDraw.Draw(strip).text((1 - left, 1 - top), words, fill=fill, font=f)
        strip = strip.rotate(90, expand=True)
        self.image.paste(strip, (round(xy[0] - strip.width / 2), round(xy[1] - strip.height / 2)))

    def grid(self, box, colours: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fill ``box`` (left, top, right, bottom: right and bottom excluded) with ``colours`` (rows, cols, 3),
        each cell a block of pixels; the cells' column and row edges, in the picture's pixels, come back."""
        x0, y0, x1, y1 = box
        rows, cols = colours.shape[:2]
        xs, ys = cell_edges(cols, x1 - x0), cell_edges(rows, y1 - y0)
        cell_of_x = np.repeat(np.arange(cols), np.diff(xs))
        cell_of_y = np.repeat(np.arange(rows), np.diff(ys))
        block = np.ascontiguousarray(colours[cell_of_y][:, cell_of_x], dtype=np.uint8)
        self.image.paste(Image.fromarray(block, "RGB"), (x0, y0))
        return xs + x0, ys + y0

    def frame(self, box, width: int = 1) -> None:
        """A black frame just outside ``box``."""
        x0, y0, x1, y1 = box
        self.pen.rectangle((x0 - width, y0 - width, x1 - 1 + width, y1 - 1 + width), outline="black", width=width)

    def line(self, points, width: int, fill="black") -> None:
        self.pen.line(points, fill=fill, width=width, joint="curve")

    def colour_bar(self, box, colours, low: float, high: float, label: str, points: float) -> None:
        """A horizontal bar from ``low`` to ``high`` (``colours``: values -> (n, 3) RGB), its ticks and their
        numbers below, and ``label`` under them."""
        x0, y0, x1, y1 = box
        width = x1 - x0
        values = low + (np.arange(width) + 0.5) / width * (high - low)
        self.grid(box, colours(values)[None, :, :])
        self.frame(box)
        tick = max(2, round(2 * self.dpi / 72))
        marks = nice_ticks(low, high, lambda t: self.text_width(t, points), width)
        for value, words in marks:
            x = x0 + (value - low) / (high - low) * width
            self.line([(x, y1), (x, y1 + tick)], 1)
            self.text((x, y1 + tick + 1), words, points, anchor="ma")
        below = getattr(self.font(points), "size", round(points * self.dpi / 72))  # a bitmap font has no size
        self.text(((x0 + x1) / 2, y1 + tick + 2 + below), label, points, anchor="ma")

    def png(self) -> bytes:
        out = io.BytesIO()
        self.image.save(out, format="PNG", dpi=(self.dpi, self.dpi))
        return out.getvalue()


def nice_ticks(low: float, high: float, width_of, room: float, most: int = 9) -> list[tuple[float, str]]:
    """Ticks at round numbers between ``low`` and ``high`` (steps of 1, 2, 2.5 or 5 times a power of ten): the
    closest set whose labels (``width_of`` each) fit side by side in ``room`` pixels, 12 pixels apart at least,
    at most ``most``."""
    span = high - low
    if not math.isfinite(span) or span <= 0:
        return []
    power = 10.0 ** math.floor(math.log10(span / most))
    for step in (m * power * scale for scale in (1, 10, 100) for m in (1, 2, 2.5, 5)):
        first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
        if last - first + 1 > most:
            continue
        decimals = next((d for d in range(8) if abs(round(step, d) - step) <= 1e-9 * step), 8)
        marks = [(k * step, _number(k * step, decimals)) for k in range(first, last + 1)]
        if sum(width_of(words) + 12 for _, words in marks) <= room:
            return marks
    return []


def _number(value: float, decimals: int) -> str:
    words = f"{value:.{decimals}f}"
    return words[1:] if words.startswith("-") and float(words) == 0 else words
