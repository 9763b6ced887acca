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

    def text_height(self, points: float) -> int:
        """A line's height in pixels (a bitmap font, from a Pillow without FreeType, says none: its nominal one)."""
        return getattr(self.font(points), "size", round(points * self.dpi / 72))

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
        numbers below, and ``label`` under them (with the power of ten the numbers are in, if they are)."""
        x0, y0, x1, y1 = box
        width = x1 - x0
        values = low + (np.arange(width) + 0.5) / width * (high - low)
        self.grid(box, colours(values)[None, :, :])
        self.frame(box)
        tick = max(2, round(2 * self.dpi / 72))
        marks, power = nice_ticks(low, high, lambda t: self.text_width(t, points), width)
        for value, words in marks:
            x = x0 + (value - low) / (high - low) * width if high > low else (x0 + x1) / 2
            self.line([(x, y1), (x, y1 + tick)], 1)
            self.text((x, y1 + tick + 1), words, points, anchor="ma")
        if power:
            label = f"{label} (numbers x 1e{power})"
        self.text(((x0 + x1) / 2, y1 + tick + 2 + self.text_height(points)), label, points, anchor="ma")

    def png(self) -> bytes:
        out = io.BytesIO()
        self.image.save(out, format="PNG", dpi=(self.dpi, self.dpi))
        return out.getvalue()


#: numbers this large or small are shown in a power of ten (the bar's label says which), as matplotlib's offset does
_PLAIN_RANGE = (1e-4, 1e5)


def nice_ticks(low: float, high: float, width_of, room: float, most: int = 9,
               whole: bool = False) -> tuple[list[tuple[float, str]], int]:
    """Ticks for a scale from ``low`` to ``high`` drawn ``room`` pixels long, and the power of ten their numbers
    are in (0: as they are; a scale reaching 1e5 or more, or only 1e-4 or less, is shown in its own power).

    Round numbers (steps of 1, 2, 2.5 or 5 times a power of ten; ``whole``: whole numbers only, never scaled),
    at least two and at most ``most``, each number (``width_of`` it, in pixels) 12 pixels from its neighbours;
    the fewest that fit, else just the two ends. A scale with no width (all values equal) gets one tick, mid-way."""
    if not (math.isfinite(low) and math.isfinite(high)) or high < low:
        return [], 0
    reach = max(abs(low), abs(high))
    power = 0 if whole or reach == 0 or _PLAIN_RANGE[0] < reach < _PLAIN_RANGE[1] else math.floor(math.log10(reach))
    unit = 10.0 ** power
    lo, hi = low / unit, high / unit
    span = hi - lo
    if not math.isfinite(span) or span <= 1e-9 * max(abs(lo), abs(hi), 1e-300):
        middle = (low + high) / 2
        return [(middle, _number(middle / unit, 4, short=True))], power

    def fits(marks) -> bool:
        at = [(value / unit - lo) / span * room for value, _ in marks]
        sizes = [width_of(words) for _, words in marks]
        return all(math.isfinite(x) for x in at) and all(
            b - a >= (wa + wb) / 2 + 12 for a, b, wa, wb in zip(at, at[1:], sizes, sizes[1:]))

    first_power = 10.0 ** math.floor(math.log10(span / most))
    for step in (m * first_power * scale for scale in (1, 10, 100) for m in (1, 2, 2.5, 5)):
        if whole and (step < 1 or step != int(step)):
            continue
        first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
        if last - first + 1 > most:
            continue
        if last - first + 1 < 2:
            break
        decimals = next((d for d in range(8) if abs(round(step, d) - step) <= 1e-9 * step), 8)
        marks = [(k * step * unit, _number(k * step, decimals)) for k in range(first, last + 1)]
        if fits(marks):
            return marks, power
    ends = [(low, _number(lo, 2, short=True)), (high, _number(hi, 2, short=True))]
    return (ends if fits(ends) and ends[0][1] != ends[1][1] else []), power


def _number(value: float, digits: int, short: bool = False) -> str:
    """``digits`` decimals (``short``: significant digits, as ``%g``), and never a signed zero."""
    words = f"{value:.{digits}g}" if short else f"{value:.{digits}f}"
    return words[1:] if words.startswith("-") and float(words) == 0 else words
