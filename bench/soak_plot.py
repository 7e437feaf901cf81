#!/usr/bin/env python3
"""Draws a soak's samples (bench/soak_bench: OUT/samples.csv) as one SVG of four panels, each
against minutes: batond's RSS, its open fds, the p99 (and p50) of the requests answered in
each 10-s sample, and the data dir's size. Dashed lines mark batond's restarts. Python's
standard library only.

    bench/soak_plot.py build/soak/samples.csv docs/soak-60min.svg
"""
import csv
import sys

W, PANEL_H, LEFT, RIGHT, TOP, GAP = 760, 150, 70, 20, 30, 45


def read(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    return [{k: float(v) for k, v in r.items()} for r in rows]


def nice_max(v):
    if v <= 0:
        return 1.0
    step = 10 ** (len(str(int(v))) - 1)
    return (int(v / step) + 1) * step


def panel(out, rows, y0, title, series, unit):
    minutes = [r["minute"] for r in rows]
    x_max = max(minutes) if minutes else 1
    top = nice_max(max(max(r[key] * scale for r in rows) for key, scale, _, _ in series))
    h = PANEL_H
    plot_w = W - LEFT - RIGHT

    def x(m):
        return LEFT + plot_w * m / x_max

    def y(v):
        return y0 + h - h * v / top

    out.append(f'<text x="{LEFT}" y="{y0 - 8}" font-size="13" font-weight="bold">{title}</text>')
    out.append(f'<rect x="{LEFT}" y="{y0}" width="{plot_w}" height="{h}" fill="none" stroke="#999"/>')
    for i in range(5):
        v = top * i / 4
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end">{v:g}</text>')
    out.append(f'<text x="14" y="{y0 + h / 2}" font-size="10" transform="rotate(-90 14 {y0 + h / 2})" '
               f'text-anchor="middle">{unit}</text>')
    last = 0
    for r in rows:  # restarts: where the counter moves
        if r["restarts"] > last:
            out.append(f'<line x1="{x(r["minute"]):.1f}" x2="{x(r["minute"]):.1f}" y1="{y0}" y2="{y0 + h}" '
                       f'stroke="#bbb" stroke-dasharray="3,3"/>')
            last = r["restarts"]
    for m in range(0, int(x_max) + 1, 10 if x_max > 20 else 1):
        out.append(f'<text x="{x(m):.1f}" y="{y0 + h + 13}" font-size="10" text-anchor="middle">{m}</text>')
    legend_x = LEFT + plot_w - 10
    for key, scale, colour, label in series:
        pts = " ".join(f"{x(r['minute']):.1f},{y(r[key] * scale):.1f}" for r in rows)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        out.append(f'<text x="{legend_x}" y="{y0 + 14}" font-size="11" fill="{colour}" text-anchor="end">{label}</text>')
        legend_x -= 9 * len(label) + 14


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = read(sys.argv[1])
    panels = [
        ("batond's RSS, and its anonymous and file-backed parts",
         [("rss_kb", 1 / 1024, "#1f77b4", "RSS"), ("rss_anon_kb", 1 / 1024, "#17becf", "anon"),
          ("rss_file_kb", 1 / 1024, "#7f7f7f", "file")], "MiB"),
        ("open file descriptors", [("open_fds", 1, "#2ca02c", "fds")], "fds"),
        ("request latency per 10-s sample", [("p99_ms", 1, "#d62728", "p99"), ("p50_ms", 1, "#ff7f0e", "p50")], "ms"),
        ("data dir (event log, views)", [("data_bytes", 1 / 1e6, "#9467bd", "size")], "MB"),
    ]
    height = TOP + len(panels) * (PANEL_H + GAP) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" font-family="sans-serif">',
           f'<rect width="{W}" height="{height}" fill="white"/>']
    for i, (title, series, unit) in enumerate(panels):
        panel(out, rows, TOP + i * (PANEL_H + GAP), title, series, unit)
    out.append(f'<text x="{W / 2}" y="{height - 4}" font-size="11" text-anchor="middle">minutes '
               f'(dashed: batond restarted)</text>')
    out.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
