"""Dependency-free SVG line plots of training logs (log.jsonl: one JSON object per step)."""
import json
from pathlib import Path

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"]


def read_log(log_path):
    return [json.loads(l) for l in Path(log_path).read_text().splitlines() if l.strip()]


def smoothed(rows, key="loss", x="step", beta=0.9):
    """(x, EMA of rows[key]) pairs; the EMA hides the step-to-step noise of a batch-16 loss."""
    out, ema = [], None
    for r in rows:
        ema = r[key] if ema is None else beta * ema + (1 - beta) * r[key]
        out.append((r[x], ema))
    return out


def curves_svg(series, svg_path, title, xlabel, ylabel="loss (nats / token)"):
    """series: list of (label, color, [(x, y), ...], dashed). Writes one SVG plot with a legend."""
    series = [s for s in series if s[2]]
    if not series:
        return
    w, h, pad = 720, 420, 64
    xs = [x for _, _, pts, _ in series for x, _ in pts]
    ys = [y for _, _, pts, _ in series for _, y in pts]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    lo, hi = min(ys), max(ys) if max(ys) - min(ys) > 1e-9 else min(ys) + 1.0

    def px(v):
        return pad + (v - x0) / (x1 - x0) * (w - 2 * pad)

    def py(v):
        return h - pad - (v - lo) / (hi - lo) * (h - 2 * pad)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>',
             f'<text x="{w / 2}" y="{h - 18}" text-anchor="middle">{xlabel}</text>',
             f'<text x="16" y="{h / 2}" text-anchor="middle" '
             f'transform="rotate(-90 16 {h / 2})">{ylabel}</text>']
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        parts.append(f'<line x1="{pad}" y1="{py(v):.1f}" x2="{w - pad}" y2="{py(v):.1f}" '
                     f'stroke="#ddd"/>')
        parts.append(f'<text x="{pad - 5}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        s = x0 + (x1 - x0) * k / 4
        label = f"{s / 1e6:.2f}M" if x1 >= 1e5 else f"{s:.0f}"
        parts.append(f'<text x="{px(s):.1f}" y="{h - pad + 16}" text-anchor="middle">{label}</text>')
    for i, (label, color, pts, dashed) in enumerate(series):
        dash = ' stroke-dasharray="5,3"' if dashed else ""
        line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5"{dash} '
                     f'points="{line}"/>')
        parts.append(f'<text x="{w - pad}" y="{pad - 30 + 14 * i}" text-anchor="end" '
                     f'fill="{color}">{label}{" (dashed)" if dashed else ""}</text>')
    parts.append("</svg>")
    Path(svg_path).write_text("\n".join(parts) + "\n")


def loss_svg(log_path, svg_path, title="loss"):
    """Training loss (EMA) and validation loss of one run against the step."""
    rows = read_log(log_path)
    val = [(r["step"], r["val_loss"]) for r in rows if "val_loss" in r]
    curves_svg([("train (EMA)", COLORS[0], smoothed(rows), False),
                ("validation", COLORS[1], val, False)], svg_path, title, "step")


def twins_svg(runs, svg_path, title="the twins: loss against training tokens"):
    """runs: list of (label, log_path). Validation (solid) and training EMA (dashed) per run."""
    series = []
    for i, (label, log_path) in enumerate(runs):
        rows = read_log(log_path)
        color = COLORS[i % len(COLORS)]
        series.append((f"{label} validation", color,
                       [(r["tokens"], r["val_loss"]) for r in rows if "val_loss" in r], False))
        series.append((f"{label} train", color, smoothed(rows, x="tokens"), True))
    curves_svg(series, svg_path, title, "training tokens")


def _esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def scatter_svg(points, svg_path, title, xlabel, ylabel, logx=False, front=None, band=None,
                reference=None, ymax=None, color_key=None, vlines=None):
    """Numbered points with a legend column, e.g. a quality-versus-speed Pareto plot.

    points: list of (label, x, y, color); each point is drawn with its number, the legend on the right
    lists "number label". front: optional [(x, y), ...] drawn as a dashed line (e.g. the Pareto front,
    sorted by x). band: optional (y_lo, y_hi, text): a shaded horizontal band. reference: optional
    (x, y, text): a point marked with a ring and its own label. ymax: points above it are drawn as
    triangles on the top edge (their value stays in the legend). color_key: optional [(text, color)]
    explaining the colors. vlines: optional [(x, text)]: dotted vertical marks (e.g. a baseline's
    speed and a target multiple of it). logx: log10 x axis.
    """
    import math
    if not points:
        return
    plot_w, h, pad, top = 700, 560, 70, 50
    legend_x = plot_w + 20
    w = legend_x + 330
    xs = [p[1] for p in points] + ([reference[0]] if reference else [])
    xs += [x for x, _ in vlines or []]
    ys = [p[2] for p in points] + ([reference[1]] if reference else [])
    if ymax is not None:
        ys = [min(y, ymax) for y in ys]
    if band:
        ys += [band[0], band[1]]
    fx = (lambda v: math.log10(v)) if logx else (lambda v: v)
    x0, x1 = fx(min(xs)), fx(max(xs))
    if x1 - x0 < 1e-9:
        x0, x1 = x0 - 0.5, x1 + 0.5
    span = x1 - x0
    x0, x1 = x0 - 0.06 * span, x1 + 0.06 * span
    lo, hi = min(ys), max(ys)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    lo, hi = lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)

    def px(v):
        return pad + (fx(v) - x0) / (x1 - x0) * (plot_w - pad)

    def py(v):
        return h - pad - (min(v, hi) - lo) / (hi - lo) * (h - pad - top)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'font-family="sans-serif" font-size="11">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{w / 2}" y="22" text-anchor="middle" font-size="14">{_esc(title)}</text>',
             f'<line x1="{pad}" y1="{h - pad}" x2="{plot_w}" y2="{h - pad}" stroke="black"/>',
             f'<line x1="{pad}" y1="{top}" x2="{pad}" y2="{h - pad}" stroke="black"/>',
             f'<text x="{(plot_w + pad) / 2}" y="{h - 20}" text-anchor="middle" '
             f'font-size="12">{_esc(xlabel)}</text>',
             f'<text x="18" y="{(h + top - pad) / 2}" text-anchor="middle" font-size="12" '
             f'transform="rotate(-90 18 {(h + top - pad) / 2})">{_esc(ylabel)}</text>']
    if band:
        y_top, y_bot = py(min(band[1], hi)), py(max(band[0], lo))
        parts.append(f'<rect x="{pad}" y="{y_top:.1f}" width="{plot_w - pad}" '
                     f'height="{y_bot - y_top:.1f}" fill="#2ca02c" fill-opacity="0.15"/>')
        parts.append(f'<text x="{plot_w - 4}" y="{y_top - 4:.1f}" text-anchor="end" '
                     f'fill="#2ca02c">{_esc(band[2])}</text>')
    for k in range(6):
        v = lo + (hi - lo) * k / 5
        parts.append(f'<line x1="{pad}" y1="{py(v):.1f}" x2="{plot_w}" y2="{py(v):.1f}" '
                     f'stroke="#e4e4e4"/>')
        parts.append(f'<text x="{pad - 5}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.4g}</text>')
    if logx:
        ticks = [m * 10 ** e for e in range(math.floor(x0) - 1, math.ceil(x1) + 1) for m in (1, 2, 5)]
        ticks = [t for t in ticks if x0 <= math.log10(t) <= x1]
    else:
        ticks = [x0 + (x1 - x0) * k / 5 for k in range(6)]
    for t in ticks:
        parts.append(f'<line x1="{px(t):.1f}" y1="{top}" x2="{px(t):.1f}" y2="{h - pad}" '
                     f'stroke="#eeeeee"/>')
        parts.append(f'<text x="{px(t):.1f}" y="{h - pad + 15}" text-anchor="middle">{t:g}</text>')
    for x, text in vlines or []:
        parts.append(f'<line x1="{px(x):.1f}" y1="{top}" x2="{px(x):.1f}" y2="{h - pad}" '
                     f'stroke="#555" stroke-dasharray="2,3"/>')
        parts.append(f'<text x="{px(x) + 3:.1f}" y="{top + 10}" fill="#555">{_esc(text)}</text>')
    if front and len(front) > 1:
        line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in front)
        parts.append(f'<polyline fill="none" stroke="#888" stroke-width="1.5" '
                     f'stroke-dasharray="6,3" points="{line}"/>')
    if reference:
        parts.append(f'<circle cx="{px(reference[0]):.1f}" cy="{py(reference[1]):.1f}" r="9" '
                     f'fill="none" stroke="black" stroke-width="1.5"/>')
        parts.append(f'<text x="{px(reference[0]) - 11:.1f}" y="{py(reference[1]) + 4:.1f}" '
                     f'text-anchor="end" font-weight="bold">{_esc(reference[2])}</text>')
    for i, (label, x, y, color) in enumerate(points):
        cx, cy = px(x), py(y)
        if ymax is not None and y > ymax:
            parts.append(f'<polygon points="{cx - 4:.1f},{cy + 3:.1f} {cx + 4:.1f},{cy + 3:.1f} '
                         f'{cx:.1f},{cy - 5:.1f}" fill="{color}"/>')
        else:
            parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" fill="{color}"/>')
        parts.append(f'<text x="{cx + 4:.1f}" y="{cy - 4:.1f}" fill="{color}" '
                     f'font-size="9">{i + 1}</text>')
    ly = top
    for text, color in color_key or []:
        parts.append(f'<circle cx="{legend_x + 4}" cy="{ly - 4}" r="4" fill="{color}"/>')
        parts.append(f'<text x="{legend_x + 12}" y="{ly}" fill="{color}">{_esc(text)}</text>')
        ly += 14
    ly += 6 if color_key else 0
    step = min(13.0, (h - ly - 10) / max(1, len(points)))
    for i, (label, x, y, color) in enumerate(points):
        parts.append(f'<text x="{legend_x}" y="{ly + step * i:.1f}" fill="{color}" '
                     f'font-size="{min(10, step - 1):.0f}">{i + 1} {_esc(label)}: {x:.4g} tok/s, '
                     f'ppl {y:.4g}</text>')
    parts.append("</svg>")
    Path(svg_path).write_text("\n".join(parts) + "\n")
