"""Throughput-over-time charts (pods bound per second) for the two schedulers, one PNG per workload.

Design
------
matplotlib is not a dependency. If it is importable it draws the chart; otherwise a small pure-Python
writer does: an RGB canvas (bytearray), Bresenham lines two pixels wide, a 3x5 pixel font scaled 2x for
the title, tick labels and legend, and a PNG encoder (zlib + struct: IHDR, one IDAT, IEND).
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

Color = tuple[int, int, int]
COLORS: dict[str, Color] = {"kube-scheduler": (31, 119, 180), "pyscheduler": (255, 127, 14)}
FALLBACK: Sequence[Color] = ((44, 160, 44), (214, 39, 40), (148, 103, 189))

# 3x5 glyphs, rows top to bottom, "1" = ink.
_FONT = {
    "0": "111101101101111",
    "1": "010110010010111",
    "2": "111001111100111",
    "3": "111001111001111",
    "4": "101101111001001",
    "5": "111100111001111",
    "6": "111100111101111",
    "7": "111001001001001",
    "8": "111101111101111",
    "9": "111101111001111",
    "A": "010101111101101",
    "B": "110101110101110",
    "C": "011100100100011",
    "D": "110101101101110",
    "E": "111100110100111",
    "F": "111100110100100",
    "G": "011100101101011",
    "H": "101101111101101",
    "I": "111010010010111",
    "J": "001001001101010",
    "K": "101101110101101",
    "L": "100100100100111",
    "M": "101111111101101",
    "N": "110101101101101",
    "O": "010101101101010",
    "P": "110101110100100",
    "Q": "010101101110011",
    "R": "110101110101101",
    "S": "011100010001110",
    "T": "111010010010010",
    "U": "101101101101111",
    "V": "101101101101010",
    "W": "101101111111101",
    "X": "101101010101101",
    "Y": "101101010010010",
    "Z": "111001010100111",
    "-": "000000111000000",
    ".": "000000000000010",
    "/": "001001010100100",
    ":": "000010000010000",
    "(": "010100100100010",
    ")": "010001001001010",
    "=": "000111000111000",
    " ": "000000000000000",
}


class Canvas:
    def __init__(self, width: int, height: int, bg: Color = (255, 255, 255)) -> None:
        self.w, self.h = width, height
        self.px = bytearray(bytes(bg) * (width * height))

    def set(self, x: int, y: int, c: Color) -> None:
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i : i + 3] = bytes(c)

    def rect(self, x0: int, y0: int, x1: int, y1: int, c: Color) -> None:
        for y in range(max(0, y0), min(self.h, y1)):
            for x in range(max(0, x0), min(self.w, x1)):
                self.set(x, y, c)

    def line(self, x0: int, y0: int, x1: int, y1: int, c: Color, width: int = 1) -> None:
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            for k in range(width):
                self.set(x0, y0 + k, c)
                self.set(x0 + k, y0, c)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(self, x: int, y: int, s: str, c: Color = (0, 0, 0), scale: int = 2) -> int:
        """Draw ``s`` (upper-cased) with its top-left at (x, y); return the x after it."""
        for ch in s.upper():
            glyph = _FONT.get(ch, _FONT[" "])
            for i, bit in enumerate(glyph):
                if bit == "1":
                    gx, gy = i % 3, i // 3
                    self.rect(x + gx * scale, y + gy * scale, x + (gx + 1) * scale, y + (gy + 1) * scale, c)
            x += 4 * scale
        return x

    def png(self) -> bytes:
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3 : (y + 1) * self.w * 3]) for y in range(self.h))

        def chunk(kind: bytes, data: bytes) -> bytes:
            return (
                struct.pack(">I", len(data))
                + kind
                + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
            )

        ihdr = struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b"")
        )


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    mag = 10 ** (len(str(int(v))) - 1)
    for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * mag >= v:
            return float(m * mag)
    return float(10 * mag)


def _fmt(v: float) -> str:
    return str(int(v)) if v == int(v) else f"{v:.1f}"


def draw_png(
    path: Path, title: str, series: Mapping[str, Sequence[float]], width: int = 800, height: int = 400
) -> Path:
    """Write the chart with the pure-Python writer (used when matplotlib is absent)."""
    cv = Canvas(width, height)
    left, right, top, bottom = 70, 20, 50, 50
    pw, ph = width - left - right, height - top - bottom
    xmax = max((len(s) for s in series.values()), default=1) or 1
    ymax = _nice_max(max((max(s) for s in series.values() if s), default=1.0))
    grey, black = (225, 225, 225), (0, 0, 0)
    for k in range(6):
        y = top + ph - ph * k // 5
        cv.line(left, y, left + pw, y, grey)
        label = _fmt(ymax * k / 5)
        cv.text(left - 8 - 8 * len(label), y - 5, label)
    xstep = max(1, int(_nice_max(xmax / 8)))
    for xs in range(0, xmax + 1, xstep):
        x = left + pw * xs // xmax
        cv.line(x, top + ph, x, top + ph + 5, black)
        cv.text(x - 4 * len(str(xs)), top + ph + 10, str(xs))
    cv.line(left, top, left, top + ph, black)
    cv.line(left, top + ph, left + pw, top + ph, black)
    cv.text(left, 12, title)
    cv.text(left + pw // 2 - 80, height - 18, "SECONDS SINCE FIRST POD")
    lx = left + pw - 260
    for i, (name, values) in enumerate(series.items()):
        c = COLORS.get(name, FALLBACK[i % len(FALLBACK)])
        cv.rect(lx, top + 8 + 16 * i, lx + 14, top + 18 + 16 * i, c)
        cv.text(lx + 20, top + 9 + 16 * i, name)
        pts = [
            (left + pw * (t + 0.5) / xmax, top + ph - ph * min(v, ymax) / ymax) for t, v in enumerate(values)
        ]
        for (x0, y0), (x1, y1) in itertools.pairwise(pts):
            cv.line(round(x0), round(y0), round(x1), round(y1), c, width=2)
    path.write_bytes(cv.png())
    return path


def draw(path: Path, title: str, series: Mapping[str, Sequence[float]]) -> Path:
    """Draw pods-bound-per-second lines, with matplotlib if installed, else with ``draw_png``."""
    try:
        import matplotlib  # type: ignore[import-not-found, unused-ignore]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return draw_png(path, title, series)
    fig, ax = plt.subplots(figsize=(8, 4), dpi=100)
    for i, (name, values) in enumerate(series.items()):
        c = COLORS.get(name, FALLBACK[i % len(FALLBACK)])
        ax.plot([t + 0.5 for t in range(len(values))], values, label=name, color=tuple(v / 255 for v in c))
    ax.set_title(title)
    ax.set_xlabel("seconds since the first measured pod was created")
    ax.set_ylabel("pods bound per second")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
