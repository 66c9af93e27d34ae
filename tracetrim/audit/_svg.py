"""Small inline-SVG charts (bars, histograms, lines) for self-contained HTML reports: no library, no CDN."""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence

import attrs

WIDTH = 560
"""Every chart's width in SVG units (they scale to their box)."""

FONT = 11
"""Label size in SVG units."""

# Categories of characters that draw nothing yet change what is drawn around them: controls (Cc),
# format characters (Cf: the bidi embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069,
# zero-width spaces and joiners U+200B-U+200F, tag characters), line and paragraph separators, and
# lone surrogates, which cannot even be written as UTF-8.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Everything but printable ASCII, tab and newline is a candidate; only the invisible ones are replaced.
_CANDIDATE = re.compile(r"[^\t\n\x20-\x7e]")


def _shown(match: re.Match[str]) -> str:
    char = match.group(0)
    if unicodedata.category(char) not in _INVISIBLE:
        return char
    point = ord(char)
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


def visible(text: str) -> str:
    """``text`` with every invisible control character shown as its escape (``\\u202e``).

    Untrusted text (tool names, call ids, error details from tool output) reaches the reports; a
    right-to-left override in it would reorder what follows on screen, and a zero-width or control
    character would hide or fake content. Tab and newline stay as they are; every other character
    of category Cc, Cf, Cs, Zl or Zp becomes ``\\uXXXX`` (``\\UXXXXXXXX`` past U+FFFF).
    """
    return _CANDIDATE.sub(_shown, text)


def escape(text: str) -> str:
    """``text`` for HTML or SVG, as text or a quoted attribute: `html.escape` and then `visible`."""
    return visible(html.escape(text))


def _floats(values: Iterable[float]) -> tuple[float, ...]:
    return tuple(float(value) for value in values)


@attrs.frozen
class Series:
    """One named, coloured run of values."""

    name: str
    color: str
    values: tuple[float, ...] = attrs.field(converter=_floats)


@attrs.frozen
class Mark:
    """A vertical line across a chart at ``x`` (in data units), labelled."""

    x: float
    label: str
    color: str


def _open(name: str, title: str, height: int, *, empty: bool = False) -> list[str]:
    flag = ' data-empty="true"' if empty else ""
    return [
        f'<svg class="chart" data-chart="{escape(name)}"{flag} viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-label="{escape(title)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]


def _text(
    x: float, y: float, text: str, *, anchor: str = "start", size: int = FONT, fill: str = "#333"
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}">'
        f"{escape(text)}</text>"
    )


def _legend(series: Sequence[Series], y: float) -> list[str]:
    parts, x = [], 10.0
    for item in series:
        parts.append(f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{item.color}"/>')
        parts.append(_text(x + 14, y, item.name))
        x += 24 + 7 * len(item.name)
    return parts


def nice_max(value: float) -> float:
    """A round axis maximum at or above ``value`` (1, 2 or 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return float(step * power)
    return float(10 * power)


def message(name: str, title: str, text: str) -> str:
    """A chart that has nothing to draw: a framed box saying why (marked ``data-empty``)."""
    height = 80
    parts = _open(name, title, height, empty=True)
    parts.append(
        f'<rect x="1" y="1" width="{WIDTH - 2}" height="{height - 2}" fill="#fafafa" stroke="#ccc"/>'
    )
    parts.append(_text(WIDTH / 2, height / 2 + 4, text, anchor="middle", fill="#666"))
    parts.append("</svg>")
    return "\n".join(parts)


def stacked_bars(
    name: str,
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    number: Callable[[float], str] = lambda v: f"{v:,.0f}",
) -> str:
    """Horizontal bars, one per label, stacked by series, with each bar's total at its end."""
    if not labels:
        return message(name, title, "no data")
    row, left, top = 22, 210, 24
    height = top + row * len(labels) + 16
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    scale = (WIDTH - left - 70) / nice_max(max(totals, default=0.0))
    parts = _open(name, title, height)
    parts += _legend(series, 14)
    for i, label in enumerate(labels):
        y = top + i * row
        short = label if len(label) <= 32 else label[:31] + "…"
        parts.append(_text(left - 6, y + 14, short, anchor="end", size=10))
        x = float(left)
        for item in series:
            width = item.values[i] * scale
            if width > 0:
                parts.append(
                    f'<rect x="{x:.1f}" y="{y + 3}" width="{width:.1f}" height="{row - 6}" '
                    f'fill="{item.color}"><title>{escape(f"{label}: {item.name} {number(item.values[i])}")}'
                    "</title></rect>"
                )
            x += width
        parts.append(_text(x + 4, y + 14, number(totals[i])))
    parts.append("</svg>")
    return "\n".join(parts)


def _axes(
    left: int, top: int, right: int, bottom: int, ymax: float, fmt: Callable[[float], str]
) -> list[str]:
    parts = [f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#888"/>']
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#888"/>')
    for step in range(5):
        value = ymax * step / 4
        y = bottom - (bottom - top) * step / 4
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(_text(left - 4, y + 4, fmt(value), anchor="end", size=10))
    return parts


def histogram(
    name: str,
    title: str,
    counts: Sequence[int],
    *,
    low: float = 0.0,
    high: float = 1.0,
    marks: Sequence[Mark] = (),
    color: str = "#4a78a8",
    x_format: Callable[[float], str] = lambda v: f"{v:g}",
) -> str:
    """Bars of ``counts`` over equal bins from ``low`` to ``high``, with labelled vertical marks."""
    if not counts or not any(counts):
        return message(name, title, "no values")
    left, top, right, bottom, height = 46, 22, WIDTH - 12, 190, 220
    ymax = nice_max(max(counts))
    width = (right - left) / len(counts)
    parts = _open(name, title, height)
    parts += _axes(left, top, right, bottom, ymax, lambda v: f"{v:,.0f}")
    for i, count in enumerate(counts):
        bar = (bottom - top) * count / ymax
        lo = low + (high - low) * i / len(counts)
        hi = low + (high - low) * (i + 1) / len(counts)
        parts.append(
            f'<rect x="{left + i * width + 1:.1f}" y="{bottom - bar:.1f}" width="{max(width - 2, 1):.1f}" '
            f'height="{bar:.1f}" fill="{color}"><title>{escape(f"{x_format(lo)}-{x_format(hi)}: {count}")}'
            "</title></rect>"
        )
    for tick in range(5):
        value = low + (high - low) * tick / 4
        parts.append(
            _text(left + (right - left) * tick / 4, bottom + 14, x_format(value), anchor="middle", size=10)
        )
    for n, mark in enumerate(marks):
        x = left + (right - left) * (mark.x - low) / (high - low or 1)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{bottom}" stroke="{mark.color}" '
            'stroke-width="2" stroke-dasharray="5,3"/>'
        )
        parts.append(_text(x + 4, top + 8 + 12 * n, mark.label, fill=mark.color))
    parts.append("</svg>")
    return "\n".join(parts)


def lines(
    name: str,
    title: str,
    xs: Sequence[float],
    series: Sequence[Series],
    *,
    x_format: Callable[[float], str] = lambda v: f"{v:g}",
    y_format: Callable[[float], str] = lambda v: f"{v:,.0f}",
    ymax: float | None = None,
    marks: Sequence[Mark] = (),
) -> str:
    """One polyline per series over shared ``xs``, with dots at each point and a legend."""
    if not xs or not series:
        return message(name, title, "no data")
    left, top, right, bottom, height = 62, 26, WIDTH - 34, 190, 222
    top_value = ymax if ymax is not None else nice_max(max(max(s.values, default=0.0) for s in series))
    xmin, xmax = min(xs), max(xs)
    span = xmax - xmin or 1.0

    def at(x: float, y: float) -> tuple[float, float]:
        return left + (right - left) * (x - xmin) / span, bottom - (bottom - top) * min(y / top_value, 1.0)

    parts = _open(name, title, height)
    parts += _legend(series, 14)
    parts += _axes(left, top, right, bottom, top_value, y_format)
    for tick in range(5):
        value = xmin + span * tick / 4
        parts.append(
            _text(left + (right - left) * tick / 4, bottom + 14, x_format(value), anchor="middle", size=10)
        )
    for mark in marks:
        x, _ = at(mark.x, 0)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="{mark.color}" '
            'stroke-width="2" stroke-dasharray="5,3"/>'
        )
        parts.append(_text(x + 4, bottom - 6, mark.label, fill=mark.color))
    for item in series:
        points = [at(x, y) for x, y in zip(xs, item.values, strict=True)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{item.color}" stroke-width="2"/>')
        if len(points) <= 60:
            for (x, y), value in zip(points, item.values, strict=True):
                parts.append(
                    f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{item.color}">'
                    f"<title>{escape(f'{item.name}: {y_format(value)}')}</title></circle>"
                )
    parts.append("</svg>")
    return "\n".join(parts)
