"""Held-out curves of pretraining runs (the ``eval_curve.jsonl`` that ``run_pretraining.py --eval_steps``
writes) as one PNG: held-out MLM loss and masked-token accuracy against tokens seen.

    python -m research.diagnostics.plot_pretraining_curves docs/pretraining/runs/*/eval_curve.jsonl \
        --output docs/pretraining/curves.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def read_curve(path: Path) -> list[dict]:
    """The curve's points, in step order: dicts with step, tokens, mlm_loss, mlm_accuracy, ..."""
    points = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not points:
        raise ValueError(f"{path} holds no curve points")
    return sorted(points, key=lambda point: point["step"])


def plot(curves: dict[str, list[dict]], output: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (loss_axis, accuracy_axis) = plt.subplots(1, 2, figsize=(10, 3.8))
    for name, points in curves.items():
        tokens = [point["tokens"] / 1e6 for point in points]
        loss_axis.plot(tokens, [point["mlm_loss"] for point in points], marker="o", label=name)
        accuracy_axis.plot(tokens, [100 * point["mlm_accuracy"] for point in points], marker="o", label=name)
    loss_axis.set(xlabel="tokens seen (millions)", ylabel="held-out MLM loss (nats)", title="held-out loss")
    accuracy_axis.set(xlabel="tokens seen (millions)", ylabel="masked-token accuracy (%)", title="held-out accuracy")
    for axis in (loss_axis, accuracy_axis):
        axis.grid(alpha=0.3)
    loss_axis.legend(fontsize=8)
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("curves", nargs="+", type=Path, help="eval_curve.jsonl files (the run is named by its folder)")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    plot({path.parent.name: read_curve(path) for path in args.curves}, args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
