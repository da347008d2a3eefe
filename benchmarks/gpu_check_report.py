"""The environment check and the report of ``benchmarks/gpu_pretraining_check.sh``.

    python benchmarks/gpu_check_report.py --environment env.json --device cuda      # stage 0: check, record
    python benchmarks/gpu_check_report.py --environment env.json --run RUN_DIR --bench b1.json b2.json \\
        --stages stages.jsonl --out RESULTS_DIR --command "..."                     # stage 3: report

Stage 0 records the machine (GPU name, memory, driver, CUDA, torch / transformers / datasets
versions) and exits 1 with one line per problem where the check cannot run here: no CUDA GPU for
``--device cuda``, a package missing, transformers outside the range ``pyproject.toml`` declares,
transformers, datasets, accelerate or hf_variants failing to import (a dependency too old, say).

Stage 3 reads what the check left (``run_pretraining.py``'s ``eval_results.json``,
``eval_curve.jsonl`` and ``trainer_state.json``; ``bench_pretraining.py --json`` files; the stages'
exit statuses) and writes ``gpu_check.json`` (all of it) and ``gpu_check.md`` (a section for
benchmarks/RESULTS.md: the device, the pretraining run's tokens/s and held-out loss, and the step of
ours beside transformers'). A stage that failed or ran out of time is reported as such, not
left out. With ``--modes`` holding ``proof`` it adds the proof's section (the batch probe
``gpu_proof.py --json``, the pretraining run, and ``evaluate_pretraining.py``'s ``evaluation.json``:
sentiment test accuracy mean ± std per arm, the difference against the larger std, tokens seen,
minutes per stage); with ``step`` the base-width step table (``gpu_step.py --json`` files: tokens/s,
MFU, peak memory per side; the shapes that ran out of memory and the workers that failed named).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if not __package__:  # run as `python benchmarks/gpu_check_report.py`: the repository root holds the benchmarks package
    sys.path.insert(0, str(REPO))
PACKAGES = ("torch", "transformers", "datasets", "accelerate", "tokenizers", "safetensors", "numpy", "pyarrow")


# ----------------------------------------------------------------------------- stage 0
def declared_range(package: str, pyproject: Path = REPO / "pyproject.toml") -> str | None:
    """The version specifier ``pyproject.toml``'s dependencies give ``package`` (e.g. ">=5.23,<5.25")."""
    import tomllib

    from packaging.requirements import Requirement

    for line in tomllib.loads(pyproject.read_text())["project"]["dependencies"]:
        requirement = Requirement(line)
        if requirement.name == package:
            return str(requirement.specifier)
    return None


def environment(device: str) -> dict:
    """The machine and package versions the check runs with."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    record = {
        "device": device,
        "python": platform.python_version(),
        "executable": sys.executable,
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "versions": versions,
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    try:
        import torch
    except ImportError:
        return record
    record["import_errors"] = {}
    for module in ("transformers", "datasets", "accelerate", "hf_variants"):  # what the stages import
        try:
            importlib.import_module(module)
        except Exception as error:  # noqa: BLE001  (any failure to import is reported, not raised)
            record["import_errors"][module] = f"{type(error).__name__}: {error}"[:500]
    record["cuda_available"] = torch.cuda.is_available()
    record["torch_cuda"] = torch.version.cuda
    if torch.cuda.is_available():
        properties = torch.cuda.get_device_properties(0)
        record.update(
            gpu=torch.cuda.get_device_name(0),
            gpu_memory_gib=round(properties.total_memory / 2**30, 1),
            gpu_capability=".".join(map(str, torch.cuda.get_device_capability(0))),
            gpu_count=torch.cuda.device_count(),
            bf16_supported=torch.cuda.is_bf16_supported(),
        )
        try:
            driver = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout.strip()
            record["driver"] = driver.splitlines()[0] if driver else None
        except (OSError, subprocess.TimeoutExpired):
            record["driver"] = None
    return record


def rt_polarity_check(manifest: dict | None) -> list[str]:
    """The shard's rt-polarity splits against the ones that load here (the fine-tuning's data):
    problems, empty when they agree or the shard carries none."""
    if not manifest or "eval" not in manifest:
        return []
    from benchmarks.make_gpu_shard import rt_polarity_problems

    try:
        return rt_polarity_problems(manifest["eval"]["rt_polarity"])
    except Exception as error:  # noqa: BLE001  (a load that fails is a problem to name, not a crash)
        return [f"rt-polarity does not load from the carried file: {type(error).__name__}: {error}"[:500]]


def problems(record: dict) -> list[str]:
    """Why the check cannot run with this environment (empty when it can)."""
    from packaging.specifiers import SpecifierSet

    found = []
    for name in ("torch", "transformers", "datasets", "accelerate", "tokenizers"):
        if record["versions"].get(name) is None:
            found.append(
                f"{name} is not installed for {record['executable']} (carry its wheel: make_gpu_shard.py --wheels)"
            )
    declared = declared_range("transformers")
    installed = record["versions"].get("transformers")
    if installed and declared and installed not in SpecifierSet(declared):
        found.append(
            f"transformers {installed} is outside pyproject.toml's {declared} "
            "(carry benchmarks/gpu_shard/wheels: make_gpu_shard.py --wheels)"
        )
    for module, error in record.get("import_errors", {}).items():
        if record["versions"].get(module, "?") is not None:  # a missing package is named above
            found.append(f"import {module} fails: {error}")
    if record["device"] == "cuda" and not record.get("cuda_available"):
        found.append(
            f"DEVICE=cuda but torch {record['versions'].get('torch')} sees no CUDA GPU "
            "(DEVICE=cpu runs the same stages on the CPU)"
        )
    if record["device"] not in ("cpu", "cuda"):
        found.append(f"DEVICE must be cpu or cuda, got {record['device']!r}")
    found += record.get("eval_data_problems", [])
    return found


# ----------------------------------------------------------------------------- stage 3
def read_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def pretraining_summary(run: Path) -> dict | None:
    """The run's results: held-out loss before / after, the curve, tokens seen, tokens/s (the median
    of the logged intervals after the first, which holds the start-up; and tokens over train time)."""
    results = read_json(run / "eval_results.json")
    if results is None:
        return None
    state = read_json(run / "trainer_state.json") or {"log_history": []}
    logged = [entry["tokens_per_second"] for entry in state["log_history"] if "tokens_per_second" in entry]
    losses = [entry["loss"] for entry in state["log_history"] if "loss" in entry]
    curve_path = run / "eval_curve.jsonl"
    curve = (
        [json.loads(line) for line in curve_path.read_text().splitlines() if line.strip()]
        if curve_path.is_file()
        else []
    )
    seconds = results["train_minutes"] * 60
    keep = ("mlm_loss", "mlm_accuracy", "mask_position_loss", "sentence_relation_accuracy", "masked_tokens")
    return {
        "global_step": results["global_step"],
        "max_steps": results["max_steps"],
        "tokens_seen": results["tokens_seen"],
        "train_minutes": results["train_minutes"],
        "stopped_by_max_time": results["stopped_by_max_time"],
        "bf16": results["bf16"],
        "objective": results["objective"],
        "learning_rate": results["learning_rate"],
        "per_device_train_batch_size": results["per_device_train_batch_size"],
        "sequence_lengths": results["sequence_lengths"],
        "input_fraction": results["input_fraction"],
        "tokens_per_second_overall": results["tokens_seen"] / seconds if seconds > 0 else None,
        "tokens_per_second_median_log": statistics.median(logged[1:] or logged) if logged else None,
        "last_logged_train_loss": losses[-1] if losses else None,
        "before": {key: results["before_training"].get(key) for key in keep}
        if results.get("before_training")
        else None,
        "after": {key: results["after_training"].get(key) for key in keep},
        "curve": [
            {key: line.get(key) for key in ("step", "tokens", "elapsed_minutes", "mlm_loss", "mlm_accuracy")}
            for line in curve
        ],
    }


def sentiment_summary(evaluation: dict | None) -> dict | None:
    """The sentiment task of an ``evaluation.json``: per arm the test and validation accuracies
    (per seed, mean, sample std), seconds per run; the difference of the test means and the
    verdict against the larger std. None when the file or the task is missing."""
    from research.evaluation_support import mean_std

    if not evaluation or "sentiment" not in evaluation.get("tasks", {}):
        return None
    entry = evaluation["tasks"]["sentiment"]
    arms = {}
    for arm, runs in entry["runs"].items():
        records = [runs[seed] for seed in sorted(runs, key=int)]
        if not records:
            continue
        summary = {"seeds": [int(seed) for seed in sorted(runs, key=int)]}
        for key in ("test", "validation", "wall_s"):
            values = [record[key] for record in records]
            mean, std = mean_std(values)
            summary[key] = {"scores": values, "mean": mean, "std": std}
        arms[arm] = summary
    result = {
        "schedule": entry["schedule"],
        "metric": entry.get("metric"),
        "baselines": entry.get("baselines", {}),
        "device": evaluation.get("device"),
        "quick": evaluation.get("quick"),
        "seeds_asked": len(evaluation.get("seeds", [])),
        "arms": arms,
        "difference": None,
        "larger_std": None,
        "verdict": None,
    }
    if "pretrained" in arms and "random" in arms:
        pretrained, random = arms["pretrained"]["test"], arms["random"]["test"]
        difference = pretrained["mean"] - random["mean"]
        larger = max(pretrained["std"], random["std"])
        result["difference"], result["larger_std"] = difference, larger
        if difference > larger:
            result["verdict"] = "ahead beyond the larger std"
        elif difference < -larger:
            result["verdict"] = "behind beyond the larger std"
        else:
            result["verdict"] = "within the larger std (not ahead)"
    return result


def _number(value, form: str = ",.0f") -> str:
    return "–" if value is None else format(value, form)


def _stage_text(stage: dict) -> str:
    """ "pretraining exit 0 in 245 s"; the script's timeout (124, 137) and skip (125) codes named."""
    if stage["rc"] == 125:
        return f"{stage['stage']} skipped (the check's time was spent)"
    if stage.get("reason"):
        return f"{stage['stage']} skipped ({stage['reason']})"
    timed_out = " (timed out)" if stage["rc"] in (124, 137) else ""
    return f"{stage['stage']} exit {stage['rc']}{timed_out} in {stage['seconds']} s"


def _header(report: dict) -> list[str]:
    env = report["environment"] or {"versions": {}, "cpu_count": "?", "machine": "?", "python": "?", "date_utc": "?"}
    versions = env["versions"]
    where = (
        f"{env.get('gpu')} ({env.get('gpu_memory_gib')} GiB, driver {env.get('driver')}, CUDA {env.get('torch_cuda')})"
        if env.get("gpu")
        else f"CPU only ({env['cpu_count']} cores, {env['machine']})"
    )
    lines = [
        f"### GPU check, {env['date_utc']}: {where}",
        "",
        f"torch {versions.get('torch')}, transformers {versions.get('transformers')}, datasets {versions.get('datasets')}, "
        f"Python {env['python']}, {env['cpu_count']} CPU cores. Command: `{report['command']}` "
        "(the shard: `benchmarks/make_gpu_shard.py --wheels`).",
        "",
    ]
    shard = env.get("shard")
    if shard:
        lines += [
            f"Shard: {shard['train']['documents']:,} train documents ({shard['train']['words']:,} words) of "
            "`load_pretraining_corpus()` and its whole held-out split "
            f"({shard['validation']['documents']:,} documents, {shard['validation']['words']:,} words), "
            "the CPU runs' WordPiece-8000 and BPE-8000.",
            "",
        ]
    return lines


def _pretraining_table(model: str, run: dict) -> list[str]:
    before, after = run["before"] or {}, run["after"]
    stop = "--max_time" if run["stopped_by_max_time"] else "--max_steps"
    lines = [
        "| model | objective | precision | batch × length | steps | tokens seen | train minutes | "
        "tokens/s (median of logged intervals) | tokens/s over the run (evaluations included) | held-out MLM loss before → after | "
        "masked-token accuracy after | NSP accuracy after | stopped by |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        f"| {model} | {run['objective']} | {'bf16' if run['bf16'] else 'fp32'} | "
        f"{run['per_device_train_batch_size']} × {run['sequence_lengths'][0]} | {run['global_step']} | "
        f"{run['tokens_seen']:,} | {run['train_minutes']:.2f} | {_number(run['tokens_per_second_median_log'])} | "
        f"{_number(run['tokens_per_second_overall'])} | {_number(before.get('mlm_loss'), '.3f')} → "
        f"**{_number(after.get('mlm_loss'), '.3f')}** | {_number(after.get('mlm_accuracy'), '.3f')} | "
        f"{_number(after.get('sentence_relation_accuracy'), '.3f')} | {stop} |",
        "",
    ]
    if run["curve"]:
        lines.append(
            "Held-out curve (step: MLM loss): "
            + ", ".join(f"{point['step']}: {point['mlm_loss']:.3f}" for point in run["curve"])
            + "."
        )
        lines.append("")
    return lines


def _check_section(report: dict) -> list[str]:
    env = report["environment"] or {"device": "?"}
    lines = []
    run = report["pretraining"]
    if run is None:
        lines.append("**Pretraining: no results** (see the stages below and check.log).")
        lines.append("")
    else:
        lines += _pretraining_table(report["model"], run)
    bench_tables = report["bench"]
    if bench_tables:
        lines.append(
            "The training step, ours vs transformers' (`bench_pretraining.py --device "
            f"{env['device']}`; {bench_tables[0]['header']}):"
        )
        lines.append("")
        header = bench_tables[0]["table_header"]
        lines += [header] + [row for table in bench_tables for row in table["table"]]
        lines.append("")
    else:
        lines += ["**The step benchmark left no results** (see the stages below).", ""]
    return lines


def _stage_minutes(report: dict, names: tuple[str, ...]) -> str:
    found = {stage["stage"]: stage for stage in report["stages"]}
    return ", ".join(
        f"{name} {found[name]['seconds'] / 60:.1f}" + ("" if found[name]["rc"] == 0 else f" (exit {found[name]['rc']})")
        for name in names
        if name in found
    )


PROOF_TABLE_HEADER = (
    "| arm | sentiment test accuracy %, mean ± std (n) | validation %, mean | test per seed | s per run |\n"
    "|---|---|---|---|---|"
)


def _proof_section(report: dict) -> list[str]:
    proof = report["proof"]
    lines = [f"#### Proof: {report['proof_model']} pretrained vs its random twin on movie-review sentiment", ""]
    probe = proof["probe"]
    if probe is None:
        lines += ["**Batch probe: no results** (the smallest size was used; see the stages).", ""]
    else:
        cells = [
            f"{row['batch_size']}: "
            + (f"{row['tokens_per_s']:,.0f} tokens/s" if "tokens_per_s" in row else row["error"])
            for row in probe["rows"]
        ]
        choice = probe["choice"]
        lines += [
            f"Batch probe ({'bf16' if probe['bf16'] else 'fp32'}, B × {probe['rows'][0]['length']}, "
            f"{probe['seconds_per_size']:g} s each): " + "; ".join(cells) + f". Chosen: **{choice['batch_size']}**, "
            f"a schedule of {choice['steps']:,} steps ({probe['efficiency']:.0%} of the probed rate over the budget).",
            "",
        ]
    run = proof["pretraining"]
    if run is None:
        lines += ["**Pretraining: no results** (see the stages below and check.log).", ""]
    else:
        lines += _pretraining_table(report["proof_model"], run)
        if run.get("input_fraction") is not None:  # collation on the CPU can hold a large batch back
            lines += [f"Input pipeline (row reads + collation): {run['input_fraction']:.1%} of the training time.", ""]
    sentiment = proof["sentiment"]
    if sentiment is None:
        lines += ["**Fine-tuning: no results** (see the stages below and check.log).", ""]
    else:
        names = {"pretrained": "pretrained", "random": "random twin (same config, init seed = fine-tuning seed)"}
        lines += [PROOF_TABLE_HEADER]
        for arm, summary in sentiment["arms"].items():
            test = summary["test"]
            lines.append(
                f"| {names.get(arm, arm)} | {test['mean']:.2f} ± {test['std']:.2f} (n={len(test['scores'])}) | "
                f"{summary['validation']['mean']:.2f} | {', '.join(f'{v:.2f}' for v in test['scores'])} | "
                f"{summary['wall_s']['mean']:.0f} |"
            )
        lines.append("")
        schedule = sentiment["schedule"]
        setup = (
            f'Schedule (research/evaluate_pretraining.py SCHEDULES["sentiment"]{", --quick" if sentiment["quick"] else ""}): '
            + ", ".join(f"{key} {value}" for key, value in schedule.items())
            + f"; on {sentiment['device']}; majority class {sentiment['baselines'].get('majority_class', float('nan')):.1f}."
        )
        lines += [setup, ""]
        if sentiment["difference"] is not None:
            tokens = f"{run['tokens_seen']:,}" if run else "–"
            lines += [
                f"Difference, pretrained − twin (test): **{sentiment['difference']:+.2f}** points; the larger std "
                f"{sentiment['larger_std']:.2f}: **{sentiment['verdict']}**, after {tokens} tokens of pretraining.",
                "",
            ]
    minutes = _stage_minutes(report, ("batch_probe", "proof_pretraining", "fine_tuning"))
    if minutes:
        lines += [f"Minutes per stage: {minutes}.", ""]
    return lines


STEP_TABLE_HEADER = (
    "| variant | config | precision | B × T | side | tokens/s | ms/step | TFLOP/s | MFU | step peak MiB "
    "| vs transformers, median (min–max) | speed path engaged |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)
SIDE_NAMES = {
    "transformers": "transformers (sdpa)",
    "ours_plain": "ours, padding_free=False",
    "ours_speed": "ours, padding_free=True",
}


def step_rows(records: list[dict]) -> tuple[list[str], list[str]]:
    """(table rows, notes) of gpu_step.py records: three rows per measured (variant, precision);
    notes name shapes that ran out of memory and workers that failed or fitted no shape."""
    rows, notes = [], []
    for record in records:
        setting, row = record["setting"], record.get("row")
        what = f"{setting['variant']} {setting['dtype']}"
        skipped = [f"{t['batch_size']}×{t['length']}" for t in record.get("tried", []) if t.get("error")]
        if skipped:
            notes.append(f"{what}: {', '.join(skipped)} out of memory")
        if record.get("error"):
            notes.append(f"{what}: **failed** ({record['error'].strip().splitlines()[-1][:300]})")
            continue
        if row is None:
            notes.append(f"{what}: **no shape fitted** ({', '.join(skipped)})")
            continue
        for side in ("transformers", "ours_plain", "ours_speed"):
            measured = row["sides"][side]
            ratio = row.get(
                {"ours_plain": "plain_vs_transformers", "ours_speed": "speed_vs_transformers"}.get(side, "")
            )
            ratio_text = (
                f"{ratio['ratio_median']:.2f}× ({ratio['ratio_min']:.2f}–{ratio['ratio_max']:.2f})" if ratio else "–"
            )
            memory = measured.get("memory")
            rows.append(
                f"| {setting['variant']} | {row['named']}{' (overridden)' if setting.get('overrides') else ''} | {setting['dtype']}{' compiled' if setting.get('compile') else ''} | "
                f"{row['batch_size']} × {row['length']} | {SIDE_NAMES[side]} | {measured['tokens_per_s']:,.0f} | "
                f"{measured['ms_per_step']:.1f} | {measured['tflops_per_s']:.3g} | "
                f"{'–' if measured['mfu'] is None else format(measured['mfu'], '.1%')} | "
                f"{'–' if not memory else format(memory['step_peak_mib'], ',.0f')} | {ratio_text} | "
                f"{'yes' if side == 'ours_speed' and row['speed_path_engaged'] else 'no'} |"
            )
    return rows, notes


def _step_section(report: dict) -> list[str]:
    records = [record for table in report["step"] for record in table["rows"]]
    lines = ["#### The pretraining step at base width: ours (speed path off / on) vs transformers", ""]
    if not records:
        return lines + ["**The step mode left no results** (see the stages below).", ""]
    rows, notes = step_rows(records)
    measured = [record["row"] for record in records if record.get("row")]
    if measured:
        first = measured[0]
        peak = (
            f"peak {first['peak_tflops']} TFLOP/s ({first['peak_source']}, dense)"
            if first["peak_tflops"]
            else "no peak known for this device: MFU not given"
        )
        lines += [
            f"MFU: the FLOPs of ours' plain step (`training_step_flops`, matmuls and attention, sparse prediction: the "
            f"same work for every side) / time / {peak}; TF32 matmuls {'on' if first['tf32'] else 'off'}. Full rows "
            'without padding (the packed layout needs padding); "speed path engaged": the switch selected it for '
            "this device (`gpu_step.extend_speed_path_to`).",
            "",
        ]
    lines += [STEP_TABLE_HEADER, *rows, ""]
    if notes:
        lines += ["Not measured: " + "; ".join(notes) + ".", ""]
    return lines


def markdown(report: dict) -> str:
    """The sections for benchmarks/RESULTS.md (the modes that ran, in order)."""
    lines = _header(report)
    for mode in report.get("modes", ["check"]):
        lines += {"check": _check_section, "proof": _proof_section, "step": _step_section}[mode](report)
    lines.append("Stages: " + "; ".join(_stage_text(stage) for stage in report["stages"]) + ".")
    return "\n".join(lines) + "\n"


def report(
    environment_path: Path,
    run: Path | None,
    bench: list[Path],
    stages: Path | None,
    command: str,
    model: str,
    modes: tuple[str, ...] = ("check",),
    probe: Path | None = None,
    proof_run: Path | None = None,
    evaluation: Path | None = None,
    step: list[Path] = (),
    proof_model: str = "roberta-mini",
) -> dict:
    """Everything the check measured, as one JSON-ready dict."""
    from benchmarks import bench_pretraining

    bench_tables = []
    for path in sorted(bench):
        data = read_json(path)
        if data is not None:
            cuda = any(row["setting"]["device"] == "cuda" for row in data["rows"])
            bench_tables.append(
                {
                    **data,
                    "table_header": bench_pretraining.CUDA_TABLE_HEADER if cuda else bench_pretraining.TABLE_HEADER,
                }
            )
    stage_lines = (
        [json.loads(line) for line in stages.read_text().splitlines() if line.strip()]
        if stages and stages.is_file()
        else []
    )
    result = {
        "environment": read_json(environment_path),
        "command": command,
        "modes": list(modes),
        "model": model,
        "pretraining": pretraining_summary(run) if run else None,
        "bench": bench_tables,
        "stages": stage_lines,
    }
    if "proof" in modes:
        result["proof_model"] = proof_model
        result["proof"] = {
            "probe": read_json(probe) if probe else None,
            "pretraining": pretraining_summary(proof_run) if proof_run else None,
            "sentiment": sentiment_summary(read_json(evaluation) if evaluation else None),
        }
    if "step" in modes:
        result["step"] = [data for data in (read_json(path) for path in sorted(step)) if data is not None]
    return result


def missing_results(result: dict) -> list[str]:
    """What the modes that ran should have left and did not (the check then exits 1)."""
    missing = []
    if "check" in result["modes"] and result["pretraining"] is None:
        missing.append("check: pretraining")
    if "proof" in result["modes"]:
        if result["proof"]["pretraining"] is None:
            missing.append("proof: pretraining")
        sentiment = result["proof"]["sentiment"]
        if sentiment is None or sentiment["difference"] is None:
            missing.append("proof: sentiment of both arms")
    if "step" in result["modes"] and not any(r.get("row") for t in result["step"] for r in t["rows"]):
        missing.append("step: any measured row")
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, prog="benchmarks/gpu_check_report.py"
    )
    parser.add_argument("--environment", type=Path, required=True, help="the environment record (written by stage 0)")
    parser.add_argument("--device", help="stage 0: check and record the environment for this device (cpu or cuda)")
    parser.add_argument("--shard", type=Path, help="stage 0: the shard folder (its manifest.json is recorded)")
    parser.add_argument("--run", type=Path, help="stage 3: run_pretraining.py's output_dir")
    parser.add_argument("--bench", type=Path, nargs="*", default=[], help="stage 3: bench_pretraining.py --json files")
    parser.add_argument("--stages", type=Path, help="stage 3: the stages' exit statuses (JSON lines)")
    parser.add_argument("--out", type=Path, help="stage 3: where gpu_check.json and gpu_check.md go")
    parser.add_argument("--command", default="benchmarks/gpu_pretraining_check.sh", help="the command to print")
    parser.add_argument("--model", default=os.environ.get("MODEL", "bert-mini"), help="the model pretrained")
    parser.add_argument("--modes", default="check", help="the modes that ran: check, proof, step (comma-separated)")
    parser.add_argument("--probe", type=Path, help="proof: gpu_proof.py --json")
    parser.add_argument("--proof-run", type=Path, help="proof: run_pretraining.py's output_dir")
    parser.add_argument("--evaluation", type=Path, help="proof: evaluate_pretraining.py's evaluation.json")
    parser.add_argument("--step", type=Path, nargs="*", default=[], help="step: gpu_step.py --json files")
    parser.add_argument("--proof-model", default="roberta-mini", help="proof: the model pretrained")
    args = parser.parse_args(argv)
    if args.device is not None:
        record = environment(args.device)
        manifest = read_json(args.shard / "manifest.json") if args.shard else None
        if manifest is not None:
            record["shard"] = {
                split: {key: value for key, value in summary.items() if key != "sources"}
                for split, summary in manifest["splits"].items()
            }
            record["eval_data_problems"] = rt_polarity_check(manifest)
        print(json.dumps(record, indent=2))
        args.environment.write_text(json.dumps(record, indent=2) + "\n")
        found = problems(record)
        for problem in found:
            print(f"gpu_pretraining_check cannot run here: {problem}", file=sys.stderr)
        return 1 if found else 0
    if args.out is None:
        raise ValueError("give --device (stage 0) or --out (stage 3)")
    modes = tuple(mode for mode in args.modes.split(",") if mode)
    unknown = [mode for mode in modes if mode not in ("check", "proof", "step")]
    if unknown or not modes:
        raise ValueError(f"--modes: unknown {unknown or modes}; choose from check, proof, step")
    result = report(
        args.environment,
        args.run,
        args.bench,
        args.stages,
        args.command,
        args.model,
        modes,
        args.probe,
        args.proof_run,
        args.evaluation,
        args.step,
        args.proof_model,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_check.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    (args.out / "gpu_check.md").write_text(text)
    print(text)
    failed = [stage["stage"] for stage in result["stages"] if stage["rc"] != 0]
    return 1 if failed or missing_results(result) else 0


if __name__ == "__main__":
    sys.exit(main())
