#!/usr/bin/env python
"""Fine-tuning hyperparameters chosen on the validation split, by one procedure for a pretrained
checkpoint and its random-weight twin alike::

    python -m research.select_on_validation --model_name_or_path runs/roberta-mini --task sentiment \\
        --point learning_rate=5e-4,num_train_epochs=1 --point learning_rate=2e-4,num_train_epochs=2 \\
        --point learning_rate=1e-4,num_train_epochs=3 --seeds 3 --output_dir runs/roberta-mini/select

Every point of the grid is one ``evaluate_pretraining.py`` call (the task's fixed schedule with the
point's fields changed; both arms, the same seeds) in ``OUTPUT_DIR/point-<i>``. Then, **for each
arm separately**, the point with the highest mean validation score over the seeds is chosen (the
first listed on a tie) and that point's test scores are reported: the test split never takes part
in a choice, and the twin gets the same chance to find its own best schedule as the checkpoint.

``--only_point I`` runs one point (two processes can share a grid); ``--report_only`` chooses from
the points already run. A point's runs are resumed (``--resume``), so an interrupted grid goes on
where it stopped. Writes ``selection.json`` and ``selection.md``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from hf_variants.hub.atomic import write_text_atomically
from research import evaluate_pretraining

ARMS = evaluate_pretraining.ARMS


def parse_point(text: str, task: str) -> dict:
    """'learning_rate=2e-4,num_train_epochs=2' -> {"learning_rate": 2e-4, "num_train_epochs": 2};
    a ValueError names a part that is not FIELD=VALUE or a field the task's schedule does not have."""
    fields = {}
    for part in (part.strip() for part in text.split(",")):
        name, sep, value = part.partition("=")
        if not (sep and name.strip() and value.strip()):
            raise ValueError(f"--point {text!r}: expected FIELD=VALUE parts such as learning_rate=2e-4, got {part!r}")
        if name.strip() not in evaluate_pretraining.SCHEDULES[task]:
            known = ", ".join(evaluate_pretraining.SCHEDULES[task])
            raise ValueError(f"--point {text!r}: {task}'s schedule has no field {name.strip()!r} (it has {known})")
        fields[name.strip()] = evaluate_pretraining._number_or_text(value.strip())
    return fields


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_name_or_path", required=True, help="Checkpoint folder (with its tokenizer).")
    parser.add_argument("--task", required=True, choices=evaluate_pretraining.FINE_TUNING_TASKS)
    parser.add_argument(
        "--point",
        action="append",
        required=True,
        metavar="FIELD=VALUE[,FIELD=VALUE]",
        help="One grid point: schedule fields to change (repeat the flag for every point).",
    )
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--only_point", type=int, default=None, help="Run only this point (0-based), then report.")
    parser.add_argument("--report_only", action="store_true", help="Choose from the points already run.")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--use_cpu", action="store_true")
    parser.add_argument("--quick", action="store_true", help="Tiny subsets: a smoke test, not a measurement.")
    args = parser.parse_args(argv)
    args.points = [parse_point(point, args.task) for point in args.point]
    if len({json.dumps(point, sort_keys=True) for point in args.points}) < len(args.points):
        raise ValueError("--point: the same point is listed twice")
    if args.only_point is not None and not 0 <= args.only_point < len(args.points):
        raise ValueError(
            f"--only_point {args.only_point}: there are {len(args.points)} points (0 .. {len(args.points) - 1})"
        )
    return args


def run_point(args: argparse.Namespace, index: int) -> dict:
    """evaluate_pretraining.py on one grid point, both arms; returns its report."""
    argv = [
        "--model_name_or_path",
        args.model_name_or_path,
        "--tasks",
        args.task,
        "--seeds",
        str(args.seeds),
        "--threads",
        str(args.threads),
        "--output_dir",
        str(Path(args.output_dir) / f"point-{index}"),
        "--resume",
        "--set",
        *(f"{args.task}.{name}={value}" for name, value in args.points[index].items()),
    ]
    argv += ["--use_cpu"] * args.use_cpu + ["--quick"] * args.quick
    return evaluate_pretraining.main(argv)


def choose(args: argparse.Namespace) -> dict:
    """For each arm, the point with the best mean validation score, and its test scores."""
    points = []
    for index, fields in enumerate(args.points):
        path = Path(args.output_dir) / f"point-{index}" / "evaluation.json"
        if not path.is_file():
            raise ValueError(f"point {index} ({fields}) has not been run: no {path}")
        entry = json.loads(path.read_text(encoding="utf-8"))["tasks"][args.task]
        missing = [arm for arm in ARMS if len(entry["runs"].get(arm, {})) < args.seeds]
        if missing:
            raise ValueError(f"point {index} ({fields}) has fewer than {args.seeds} finished runs for {missing}")
        points.append(
            {
                "point": fields,
                "schedule": entry["schedule"],
                **{arm: {split: entry[arm][split] for split in ("validation", "test")} for arm in ARMS},
            }
        )
    selection = {
        "checkpoint": str(Path(args.model_name_or_path).resolve()),
        "task": args.task,
        "seeds": args.seeds,
        "rule": "per arm, the point with the highest mean validation score (first listed on a tie); its test scores",
        "points": points,
        "chosen": {},
    }
    for arm in ARMS:
        best = max(range(len(points)), key=lambda i: (points[i][arm]["validation"]["mean"], -i))
        selection["chosen"][arm] = {"point_index": best, "point": points[best]["point"], **points[best][arm]}
    chosen = selection["chosen"]
    selection["test_difference"] = round(chosen["pretrained"]["test"]["mean"] - chosen["random"]["test"]["mean"], 2)
    return selection


def table(selection: dict) -> list[str]:
    lines = [
        f"{selection['task']}: test mean ± std (n={selection['seeds']}) [validation mean] per grid point",
        "",
        "| point | pretrained | random twin |",
        "|---|---|---|",
    ]
    for index, point in enumerate(selection["points"]):
        cells = []
        for arm in ARMS:
            mark = " **chosen**" if selection["chosen"][arm]["point_index"] == index else ""
            cells.append(
                f"{point[arm]['test']['mean']:.1f} ± {point[arm]['test']['std']:.1f} "
                f"[{point[arm]['validation']['mean']:.1f}]{mark}"
            )
        fields = ", ".join(f"{name}={value}" for name, value in point["point"].items())
        lines.append(f"| {fields} | {cells[0]} | {cells[1]} |")
    lines += ["", f"chosen on validation, test difference (pretrained - twin): {selection['test_difference']:+.1f}"]
    return lines


def main(argv: Sequence[str] | None = None) -> dict | None:
    args = parse_arguments(argv)
    if not args.report_only:
        indices = [args.only_point] if args.only_point is not None else range(len(args.points))
        for index in indices:
            run_point(args, index)
    try:
        selection = choose(args)
    except ValueError as error:
        if args.only_point is None:
            raise
        print(f"[select] not reporting yet: {error}")
        return None
    output_dir = Path(args.output_dir)
    write_text_atomically(output_dir / "selection.json", json.dumps(selection, indent=2) + "\n")
    write_text_atomically(output_dir / "selection.md", "\n".join(table(selection)) + "\n")
    print("\n".join(table(selection)))
    return selection


if __name__ == "__main__":
    main()
