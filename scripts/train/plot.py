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
