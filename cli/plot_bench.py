#!/usr/bin/env python3
"""Plots `fa bench --json` output: throughput against sequence length, one panel per head dim,
one line per (pass, mask). Called by `fa bench --plot FILE.png`; usable on its own:
    python3 cli/plot_bench.py results.json out.png
"""
import json
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    import matplotlib

    matplotlib.use("Agg")  # no display on build machines
    import matplotlib.pyplot as plt

    with open(sys.argv[1]) as f:
        data = json.load(f)
    rows = [r for r in data["results"] if r.get("status") == "ok"]
    if not rows:
        print("plot_bench: no successful points to plot", file=sys.stderr)
        return 1
    head_dims = sorted({r["head_dim"] for r in rows})
    fig, axes = plt.subplots(1, len(head_dims), figsize=(5 * len(head_dims), 4), squeeze=False)
    gpu = data.get("backend", "").startswith("cuda")
    scale, unit = (1.0, "TFLOP/s") if gpu else (1e3, "GFLOP/s")
    for ax, d in zip(axes[0], head_dims):
        for causal in (False, True):
            pts = sorted((r for r in rows if r["head_dim"] == d and r["causal"] == causal),
                         key=lambda r: r["seqlen"])
            if not pts:
                continue
            n = [r["seqlen"] for r in pts]
            label = "causal" if causal else "non-causal"
            ax.plot(n, [r["fwd_tflops"] * scale for r in pts], "o-", label=f"forward, {label}")
            if "bwd_tflops" in pts[0]:
                ax.plot(n, [r["bwd_tflops"] * scale for r in pts], "s--", label=f"backward, {label}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length")
        ax.set_ylabel(unit)
        ax.set_title(f"head dim {d}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"flashattn {data.get('version', '')}: {data.get('backend', '')}, {data.get('dtype', '')}")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
