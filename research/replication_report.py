"""docs/replication.md, rebuilt from the replication study's JSON files alone (`research/replicate.py
--report`): per row the claim, a table of its arms (mean ± std over seeds, n), a plot, and verdicts
computed from the numbers by the rule in `VERDICT_RULE`, with the commands that reproduce them and
the budget spent."""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Sequence
from pathlib import Path

from hf_variants.hub.atomic import write_text_atomically
from research.replication_rows import (
    HARNESS_MEASURES,
    LOWER_IS_BETTER,
    STUDY_FLAGS,
    STUDY_SIZE,
    Prediction,
    Row,
    twin_group,
)

MIN_SEEDS = 3
VERDICT_RULE = (
    "For each prediction \"A better than B\" the improvement d is A's mean minus B's, signed so that positive "
    "is the predicted direction (lower loss or perplexity, higher score), and the noise s is the larger of the two "
    "arms' standard deviations over seeds (sample std, n - 1). **held**: d > s; **reversed**: d < -s; **not at this "
    'scale**: |d| <= s. "A at least B" (matches or beats): **held** when d >= -s, **reversed** when d < -s. '
    '"A equal to B": **held** when |d| <= s, **not held** otherwise. **not run** when either arm has fewer than '
    f"{MIN_SEEDS} seeds (or is missing). Verdicts are computed per measure; the first measure is the row's main one."
)
SYMBOLS = {"better": ">", "at_least": ">=", "equal": "≈"}
# Estimated minutes of one harness task for ONE model (the pretrained arm or its random twin), one
# fine-tuning seed, one thread, until the study's JSONs hold measured ones: measured for
# bert/roberta/electra/spanbert minis (docs/pretraining/runs/*/evaluation.json: sentiment ~90 s,
# POS ~40 s, probes ~75 s per model); NER and QA are not measured yet (guesses).
HARNESS_MINUTES = {"sentiment": 1.5, "pos": 0.75, "probe": 1.25, "ner": 1.0, "qa": 3.0}
# Loading, evaluations before / after: run_clm re-tokenizes; run_translation trains its tokenizer on
# the G2P pairs and scores 2,000 validation pairs by greedy generation twice (measured: about 1 minute).
SETUP_MINUTES = {"run_pretraining": 1.0, "run_clm": 4.0, "run_translation": 1.0}
# Issue #33's budget: the whole study within 6 hours of the 2 cores (two one-thread runs side by
# side: 12 core-hours), each arm's pretraining at most 15 minutes.
TARGET_CORE_HOURS = 12.0
TARGET_ARM_MINUTES = 15.0
STUDY_ARM_MINUTES = 5.0  # replicate.py's default --arm_minutes: the command printed for a row not run yet
MEASURE_NAMES = {
    "held_out_mlm_loss": "held-out MLM loss",
    "clm_perplexity": "held-out perplexity",
    "pos": "POS fine-tuning, word acc. %",
    "sentiment": "sentiment fine-tuning, acc. %",
    "ner": "NER fine-tuning, F1 %",
    "qa": "cloze QA, F1 %",
    "probe_pos": "POS probe, acc. %",
    "probe_sentiment": "sentiment probe, acc. %",
    "seq2seq_loss": "held-out loss (label-smoothed)",
    "seq2seq_exact_match": "held-out exact match, %",
    "seq2seq_token_error_rate": "held-out phoneme error rate, %",
}


def load_records(results_dir: Path) -> dict[str, dict[str, list[dict]]]:
    """row -> arm -> its records (one per seed, sorted by seed) from `<results_dir>/<row>/*.json`."""
    records: dict[str, dict[str, list[dict]]] = {}
    for path in sorted(results_dir.glob("*/*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        records.setdefault(record["row"], {}).setdefault(record["arm"], []).append(record)
    for arms in records.values():
        for runs in arms.values():
            runs.sort(key=lambda record: record["seed"])
    return records


def summary(values: Sequence[float]) -> dict | None:
    """{"mean", "std" (sample, n - 1; 0 for one value), "n"}, or None for no values."""
    if not values:
        return None
    return {
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "n": len(values),
    }


def arm_summary(runs: Sequence[dict], measure: str, key: str = "metrics") -> dict | None:
    return summary([run[key][measure] for run in runs if run.get(key, {}).get(measure) is not None])


def verdict(
    prediction: Prediction, first: dict | None, second: dict | None, measure: str, min_seeds: int = MIN_SEEDS
) -> tuple[str, str]:
    """(verdict, reason) for one prediction on one measure, by `VERDICT_RULE`; `first` / `second`
    are the arms' summaries (None: the arm has no result)."""
    missing = [name for name, stats in ((prediction.first, first), (prediction.second, second)) if stats is None]
    if missing:
        return "not run", f"no results for {', '.join(missing)}"
    if min(first["n"], second["n"]) < min_seeds:
        return "not run", f"n = {first['n']} / {second['n']} seeds, fewer than {min_seeds}"
    sign = -1.0 if LOWER_IS_BETTER.get(measure, False) else 1.0
    improvement = sign * (first["mean"] - second["mean"])
    noise = max(first["std"], second["std"])
    reason = f"d = {improvement:+.3g}, s = {noise:.3g}"
    if prediction.relation == "equal":
        return ("held" if abs(improvement) <= noise else "not held"), reason
    if improvement < -noise:
        return "reversed", reason
    if prediction.relation == "at_least" or improvement > noise:
        return "held", reason
    return "not at this scale", reason


def plot_row(row: Row, arms: dict[str, list[dict]], path: Path) -> bool:
    """A small PNG: one panel per measure, a bar per arm (mean, std error bars), the random twin's
    mean as a marker where measured. Returns False (no file) when nothing is measured yet."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measures = [m for m in row.measures if any(arm_summary(arms.get(a.name, []), m) for a in row.arms)]
    if not measures:
        return False
    figure, axes = plt.subplots(1, len(measures), figsize=(3.2 * len(measures), 2.6), squeeze=False)
    for axis, measure in zip(axes[0], measures):
        names = [arm.name for arm in row.arms]
        stats = [arm_summary(arms.get(name, []), measure) for name in names]
        positions = range(len(names))
        axis.bar(
            positions,
            [s["mean"] if s else 0 for s in stats],
            yerr=[s["std"] if s else 0 for s in stats],
            color="#4c72b0",
            capsize=3,
        )
        twins = [arm_summary(arms.get(name, []), measure, "random_twin") for name in names]
        if any(twins):
            axis.scatter(
                [p for p, t in zip(positions, twins) if t],
                [t["mean"] for t in twins if t],
                color="#c44e52",
                marker="x",
                zorder=3,
                label="random twin",
            )
            axis.legend(fontsize=6)
        measured = [s["mean"] for s in stats if s] + [t["mean"] for t in twins if t]
        low, high = min(measured), max(measured)
        margin = (high - low) * 0.5 + 0.02 * abs(high) + 1e-9
        axis.set_ylim(low - margin, high + margin)
        axis.set_xticks(list(positions), names, rotation=30, ha="right", fontsize=7)
        axis.set_title(
            MEASURE_NAMES[measure] + (" (lower is better)" if LOWER_IS_BETTER.get(measure) else ""), fontsize=7
        )
        axis.tick_params(axis="y", labelsize=7)
    figure.suptitle(row.name, fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return True


def _cell(stats: dict | None, digits: int = 3) -> str:
    return "-" if stats is None else f"{stats['mean']:.{digits}g} ± {stats['std']:.2g} (n={stats['n']})"


def _budget_line(arms: dict[str, list[dict]]) -> str:
    runs = [run for runs in arms.values() for run in runs]
    if not runs:
        return "not run yet"
    budget = runs[0]["budget"]
    steps = " / ".join(
        str(n) for n in sorted({run["budget"]["max_steps"] for run in runs if run["budget"]["max_steps"]})
    )
    if budget["kind"] == "flops":
        kind = f"equal FLOPs ({budget['flop_budget']:.3g} per arm)"
    elif budget["kind"] == "steps":
        kind = f"equal steps ({steps} per arm)"
    else:
        kind = f"equal wall-clock minutes (schedules over {steps} steps)"
    stopped = sum(bool(run["training"].get("stopped_by_max_time")) for run in runs)
    minutes = [run["training"]["train_minutes"] for run in runs]
    tokens = [run["training"]["tokens_seen"] for run in runs if run["training"].get("tokens_seen")]
    line = (
        f"{kind}; {budget['arm_minutes']:g} minutes per arm (cap {budget['max_time_minutes']:g}); pretraining "
        f"{min(minutes):.1f}–{max(minutes):.1f} min per run"
    )
    examples = [run["training"]["examples_seen"] for run in runs if run["training"].get("examples_seen")]
    if tokens:
        line += f", {min(tokens) / 1e6:.2f}–{max(tokens) / 1e6:.2f} M tokens"
    elif examples:  # run_translation counts training pairs
        line += f", {min(examples):,}–{max(examples):,} training pairs"
    if stopped and budget["kind"] != "minutes":
        line += f"; **{stopped} run(s) stopped by the time cap before their budget**"
    return line


def _command(row: Row, arms: dict[str, list[dict]]) -> str:
    runs = [run for runs in arms.values() for run in runs]
    seeds = sorted({run["seed"] for run in runs}) or [0, 1, 2]
    minutes = runs[0]["budget"]["arm_minutes"] if runs else STUDY_ARM_MINUTES
    flags = " --bf16" if not runs or runs[0].get("bf16") else ""  # the study runs with bf16 autocast
    flags += " --quick" if runs and runs[0].get("quick") else ""
    return (
        f"python -m research.replicate --rows {row.name} --seeds {' '.join(map(str, seeds))} "
        f"--arm_minutes {minutes:g}{flags}"
    )


def row_section(row: Row, arms: dict[str, list[dict]], plot: str | None) -> tuple[list[str], list[tuple]]:
    """The row's markdown and its verdicts [(prediction text, measure, verdict, reason)]."""
    lines = [f"## {row.name}", "", f"**Claim** ({row.source}): {row.claim}", ""]
    if row.note:
        lines += [row.note, ""]
    if row.not_runnable:
        return lines + [f"**Not runnable yet**: needs {row.not_runnable}.", ""], []
    lines += [f"Budget: {_budget_line(arms)}.", ""]
    if any(m in HARNESS_MEASURES for m in row.measures):
        lines += [f"Random-weight twin: one per seed for each of {_twin_sharing(row)}.", ""]
    header = "| arm | model | flags | " + " | ".join(MEASURE_NAMES[m] for m in row.measures) + " |"
    lines += [header, "|" + "---|" * (3 + len(row.measures))]
    for arm in row.arms:
        runs = arms.get(arm.name, [])
        flags = " ".join(arm.argv) + "".join(f" {k}={v}" for k, v in arm.config_overrides)
        cells = []
        for measure in row.measures:
            cell = _cell(arm_summary(runs, measure))
            twin = arm_summary(runs, measure, "random_twin") if measure in HARNESS_MEASURES else None
            cells.append(cell + (f" [twin {twin['mean']:.3g}]" if twin else ""))
        lines.append(f"| {arm.name} | {arm.model} | `{flags.strip() or '(defaults)'}` | " + " | ".join(cells) + " |")
    verdicts = []
    lines += ["", "| prediction | measure | verdict | numbers |", "|---|---|---|---|"]
    for prediction in row.predictions:
        text = f"{prediction.first} {SYMBOLS[prediction.relation]} {prediction.second}"
        for measure in row.measures:
            first = arm_summary(arms.get(prediction.first, []), measure)
            second = arm_summary(arms.get(prediction.second, []), measure)
            outcome, reason = verdict(prediction, first, second, measure)
            verdicts.append((text, measure, outcome, reason))
            lines.append(f"| {text} | {MEASURE_NAMES[measure]} | **{outcome}** | {reason} |")
    if plot:
        lines += ["", f"![{row.name}]({plot})"]
    lines += ["", "```bash", _command(row, arms), "```", ""]
    return lines, verdicts


def _arm_groups(row: Row) -> list[list[str]]:
    """The row's arm names grouped by `twin_group` (arms of one group share a random twin), in order."""
    flags = tuple(STUDY_FLAGS) + STUDY_SIZE.flags()
    groups: dict[tuple, list[str]] = {}
    for arm in row.arms:
        groups.setdefault(twin_group(arm, flags if arm.takes_study_settings else ()), []).append(arm.name)
    return list(groups.values())


def _twin_sharing(row: Row) -> str:
    return ", ".join("(" + ", ".join(names) + ")" for names in _arm_groups(row))


def twin_groups(row: Row) -> int:
    """How many random twins one seed of `row` evaluates: one per distinct `twin_group` of its arms."""
    return len(_arm_groups(row))


def measured_minutes(records: dict[str, dict[str, list[dict]]]) -> dict:
    """Mean measured minutes from the study's (non --quick) JSONs: {"harness": {task: minutes per model},
    "setup": {script: minutes}, "budget_used": mean fraction of --arm_minutes an arm trained, "runs": n};
    tasks, scripts or fractions without measurements are absent."""
    per_task: dict[str, list[float]] = {}
    per_script: dict[str, list[float]] = {}
    used: list[float] = []  # the fraction of its minutes an arm trained (a schedule finished early uses less)
    measured = 0
    for run in (run for arms in records.values() for r in arms.values() for run in r if not run.get("quick")):
        if run.get("wall_minutes") is None or "script" not in run:  # not a full record of the harness
            continue
        measured += 1
        harness = 0.0
        for task, models in run.get("evaluation", {}).get("task_minutes", {}).items():
            per_task.setdefault(task, []).extend(models.values())
            harness += sum(models.values())
        script = Path(run["script"]).stem
        per_script.setdefault(script, []).append(run["wall_minutes"] - run["training"]["train_minutes"] - harness)
        if run.get("budget", {}).get("arm_minutes"):
            used.append(min(1.0, run["training"]["train_minutes"] / run["budget"]["arm_minutes"]))
    return {
        "harness": {task: statistics.fmean(v) for task, v in per_task.items() if v},
        **({"budget_used": statistics.fmean(used)} if used else {}),
        "setup": {script: max(0.0, statistics.fmean(v)) for script, v in per_script.items() if v},
        "runs": measured,
    }


def planned_minutes(row: Row, arm_minutes: float, measured: dict | None = None) -> float:
    """Estimated CPU minutes (one thread) of one seed of `row`: each arm's budget, setup and harness
    for its pretrained model, plus the harness for each distinct random twin (`twin_groups`).
    Measured times (`measured_minutes`) replace the defaults where there are some."""
    harness_minutes = {**HARNESS_MINUTES, **(measured or {}).get("harness", {})}
    setup_minutes = {**SETUP_MINUTES, **(measured or {}).get("setup", {})}
    tasks = {HARNESS_MEASURES[m] for m in row.measures if m in HARNESS_MEASURES}
    harness = sum(harness_minutes[task] for task in tasks)
    training = arm_minutes * (measured or {}).get("budget_used", 1.0)
    return sum(training + setup_minutes[arm.script] + harness for arm in row.arms) + harness * twin_groups(row)


def estimate_lines(
    rows: Sequence[Row], arm_minutes: float = TARGET_ARM_MINUTES, seeds: int = MIN_SEEDS, records: dict | None = None
) -> list[str]:
    """The study's estimated cost for `rows` (before or while it runs), beside issue #33's target.
    `records` (`load_records`): their measured harness and setup times replace the defaults."""
    measured = measured_minutes(records or {})
    source = (
        f"harness and setup times measured in {measured['runs']} run(s)' JSONs where measured, defaults otherwise"
        if measured["runs"]
        else "harness times measured on the minis (docs/pretraining), QA and NER guessed; no study run measured yet"
    )
    lines = [
        f"Estimated cost at {arm_minutes:g} minutes per arm and {seeds} seed(s), one thread per run ({source}; "
        "a random twin is evaluated once per seed for the arms of a row that share it):",
        "",
        "| row | arms | twins per seed | harness tasks | est. minutes per seed | est. core-hours, all seeds |",
        "|---|---|---|---|---|---|",
    ]
    total = 0.0
    for row in rows:
        if row.not_runnable:
            continue
        minutes = planned_minutes(row, arm_minutes, measured)
        total += minutes * seeds
        tasks = ", ".join(dict.fromkeys(HARNESS_MEASURES[m] for m in row.measures if m in HARNESS_MEASURES)) or "-"
        twins = twin_groups(row) if tasks != "-" else 0
        lines.append(
            f"| {row.name} | {len(row.arms)} | {twins} | {tasks} | {minutes:.0f} | {minutes * seeds / 60:.1f} |"
        )
    hours = total / 60
    verdict = "within it" if hours <= TARGET_CORE_HOURS else f"{hours / TARGET_CORE_HOURS:.1f}x over it"
    # The cost is linear in the arm budget: the arm minutes that would spend exactly the target.
    runnable = [row for row in rows if not row.not_runnable]
    fixed = seeds * sum(planned_minutes(row, 0.0, measured) for row in runnable)
    arms = seeds * sum(len(row.arms) for row in runnable)
    used = (measured or {}).get("budget_used", 1.0)  # the arms' measured share of their minutes
    fitting = (TARGET_CORE_HOURS * 60 - fixed) / (arms * used) if arms else 0.0
    fit_note = (
        f" The target is met at about {fitting:.1f} minutes per arm for these rows and seeds."
        if fitting > 0
        else " Setup and harness alone exceed the target for these rows and seeds."
    )
    arm_note = (
        ""
        if arm_minutes <= TARGET_ARM_MINUTES
        else f" --arm_minutes {arm_minutes:g} is over the target's {TARGET_ARM_MINUTES:g} minutes per arm."
    )
    lines += [
        "",
        f"In all about **{hours:.1f} core-hours** ({hours / 2:.1f} hours with two runs side by side, e.g. two "
        "`replicate.py` calls on disjoint `--rows`). Issue #33's target: the whole study within 6 hours of the 2 "
        f"cores ({TARGET_CORE_HOURS:g} core-hours), each arm <= {TARGET_ARM_MINUTES:g} minutes: this estimate "
        f"is {verdict}.{fit_note}{arm_note}",
        "",
        "Re-estimate (nothing run): `python -m research.replicate --estimate --arm_minutes M [--rows ...] "
        "[--seeds ...]`; once study runs are recorded it uses their measured harness and setup times.",
        "",
    ]
    return lines


def settings_lines(runs: Sequence[dict]) -> list[str]:
    """The study's shared settings (replication_rows.py) and whether the recorded runs used them."""
    flags = " ".join(STUDY_FLAGS) or "none (each family's paper recipe as it is)"
    size = ", ".join(f"{k}={v}" for k, v in STUDY_SIZE.config) or "none (each mini's own sizes)"
    length = STUDY_SIZE.max_seq_length or "the recipe's"
    lines = [
        "## Study settings",
        "",
        "Shared by every run_pretraining arm (`STUDY_FLAGS`, `STUDY_SIZE` in `research/replication_rows.py`); "
        "given after the family's `--recipe` and before the arm's own flags and config fields, so an arm that "
        "varies the same thing wins (a repeated flag keeps its last value). run_clm arms (Transformer-XL) get "
        "none of them.",
        "",
        f"- flags: `{flags}`",
        f"- config fields: {size}",
        f"- --max_seq_length: {length}",
        "",
    ]
    current = {
        "flags": list(STUDY_FLAGS),
        "config": {k: v for k, v in STUDY_SIZE.config},
        "max_seq_length": STUDY_SIZE.max_seq_length,
    }
    other = [
        run for run in runs if run.get("study", {}).get("applied") and {k: run["study"][k] for k in current} != current
    ]
    if other:
        lines += [
            f"**{len(other)} recorded run(s) used other study settings** (see their JSON's `study`): their rows "
            "mix settings until re-run.",
            "",
        ]
    return lines


def sources_lines(rows: Sequence[Row]) -> list[str]:
    """What each row's claim was checked against, and where (each row's `checked`)."""
    lines = [
        "## Sources checked",
        "",
        "Each row's claim and source were checked against the paper's text where a stored copy of it could be "
        "read (the papers' abstracts and quoted sections; most tables were not reachable). What was verified, "
        "where, and what was not:",
        "",
    ]
    lines += [f"- **{row.name}** ({row.source}): {row.checked or 'not checked yet.'}" for row in rows]
    return lines + [""]


def scale_lines(runs: Sequence[dict]) -> list[str]:
    """What the runs can show at their scale, computed from them: how far pretraining got (held-out
    loss before -> after) and how often a pretrained arm beat its random twin on a harness task."""
    mlm = [run for run in runs if "held_out_mlm_loss" in run["metrics"] and (run.get("held_out") or {}).get("before")]
    if not mlm:
        return []
    after = [run["metrics"]["held_out_mlm_loss"] for run in mlm]
    before = [run["held_out"]["before"]["mlm_loss"] for run in mlm]
    pairs = [
        (score, run["random_twin"][measure])
        for run in runs
        for measure, score in run["metrics"].items()
        if measure in run.get("random_twin", {})
    ]
    above = sum(score > twin for score, twin in pairs)
    lines = [
        "## What this scale can show",
        "",
        f"The arms are compared early in pretraining: held-out MLM loss {min(before):.2f}-{max(before):.2f} "
        f"untrained, {min(after):.2f}-{max(after):.2f} after training ({len(mlm)} runs). The minis of "
        "docs/pretraining.md left the unigram plateau only after about 1,500 steps (25 minutes at 32 x 128 "
        "tokens): no arm of this study gets there, so the held-out loss is the measure on which the "
        "objectives can differ here.",
    ]
    if pairs:
        lines[-1] += (
            f" Harness tasks: a pretrained arm scored above its random twin in {above} of {len(pairs)} "
            "(arm, seed, task) results"
            + (
                ", so the downstream verdicts compare encoders that are not yet "
                "better than random weights on those tasks."
                if above * 2 < len(pairs)
                else "."
            )
        )
    return lines + [""]


def write_report(
    results_dir: Path,
    report_path: Path,
    rows: Sequence[Row],
    quick: bool = False,
    arm_minutes: float = TARGET_ARM_MINUTES,
    seeds: int = MIN_SEEDS,
    measured_elsewhere: Sequence[tuple[str, list[str]]] = (),
) -> Path:
    """Rebuild the report (and each row's plot, `<results_dir>/<row>.png`) from the JSON files; the
    budget section estimates the study at `arm_minutes` per arm and `seeds` seeds.
    `measured_elsewhere`: rows whose runs are not this study's (their summary-table line and section
    lines, e.g. research.distillation_table.replication_entry), added after the study's rows."""
    results_dir, report_path = Path(results_dir), Path(report_path)
    records = load_records(results_dir) if results_dir.is_dir() else {}
    known = {row.name for row in rows}
    runs = [run for name, arms in records.items() if name in known for r in arms.values() for run in r]
    sections, summary_rows = [], []
    for row in rows:
        arms = records.get(row.name, {})
        plot_path = results_dir / f"{row.name}.png"
        has_plot = plot_row(row, arms, plot_path) if arms else False
        relative = os.path.relpath(plot_path, report_path.parent) if has_plot else None
        lines, verdicts = row_section(row, arms, relative)
        sections += lines
        main = [v for v in verdicts if v[1] == row.measures[0]]
        outcome = (
            "; ".join(f"{text}: {v}" for text, _, v, _ in main)
            if main
            else (f"not runnable yet: {row.not_runnable}" if row.not_runnable else "not run")
        )
        row_seeds = {run["seed"] for runs_ in arms.values() for run in runs_}
        summary_rows.append(
            f"| [{row.name}](#{row.name}) | {row.source} | {MEASURE_NAMES[row.measures[0]]} | "
            f"{len(row_seeds)} | {outcome} |"
        )
    train = sum(run["training"]["train_minutes"] for run in runs)
    wall = sum(run.get("wall_minutes", 0.0) for run in runs)
    hardware = sorted({run["hardware"] for run in runs})
    lines = [
        "# Replication study: the lectures' claims at CPU scale",
        "",
        "Rebuilt by `python -m research.replicate --report` from the JSON files under "
        f"`{results_dir}` (one per row, arm and seed): do not edit by hand. Rows, arms and predictions: "
        "`research/replication_rows.py` (issue #33).",
        "",
    ]
    if quick or any(run.get("quick") for run in runs):
        lines += ["**Built from --quick runs (tiny models, a few steps): a smoke test, not a measurement.**", ""]
    lines += [
        "## Verdict rule",
        "",
        VERDICT_RULE,
        "",
        "## Budget",
        "",
        f"{len(runs)} runs: {train:.1f} minutes of pretraining, {wall:.1f} minutes in all with the harness "
        f"({wall / 60:.2f} hours), on {', '.join(hardware) or 'nothing yet'}.",
        "",
    ]
    lines += scale_lines(runs) + estimate_lines(rows, arm_minutes, seeds, records) + settings_lines(runs)
    lines += sources_lines(rows)
    lines += ["## Summary (main measure)", "", "| row | source | measure | seeds | verdicts |", "|---|---|---|---|---|"]
    lines += summary_rows + [line for line, _ in measured_elsewhere] + [""] + sections
    for _, section in measured_elsewhere:
        lines += section
    report_path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(report_path, "\n".join(lines).rstrip("\n") + "\n")
    return report_path
