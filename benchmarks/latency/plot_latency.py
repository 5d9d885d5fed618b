#!/usr/bin/env python3
"""Turns the CSV of run_latency.py into a log-log plot (PNG): median time against bytes for the
reshard, host -> device and device -> host sweeps, Tessera beside JAX.

    python3 benchmarks/latency/plot_latency.py latency.csv docs/images/latency.png

Needs matplotlib (`pip install matplotlib`); nothing in Tessera's build or tests does.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TITLES = {
    "reshard": "reshard f32[n,n] rows -> columns, 8 CPU devices",
    "h2d": "host -> device (MakeArrayFromHostBuffer + await)",
    "d2h": "device -> host (CopyToHostBuffer + await)",
}


def main():
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} LATENCY_CSV OUTPUT_PNG")
    with open(sys.argv[1]) as f:
        rows = list(csv.DictReader(f))
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    for ax, (op, title) in zip(axes, TITLES.items()):
        series = [r for r in rows if r["op"] == op]
        for column, label, style in (("tessera_median_us", "Tessera", "o-"),
                                     ("jax_median_us", "JAX", "s--")):
            pts = [(int(r["bytes"]), float(r[column])) for r in series if r[column]]
            if pts:
                ax.loglog([p[0] for p in pts], [p[1] for p in pts], style, label=label, base=2)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("bytes")
        ax.set_ylabel("median time (us)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
