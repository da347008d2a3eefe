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
left out.
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


def _number(value, form: str = ",.0f") -> str:
    return "–" if value is None else format(value, form)


def _stage_text(stage: dict) -> str:
    """ "pretraining exit 0 in 245 s"; the script's timeout (124, 137) and skip (125) codes named."""
    if stage["rc"] == 125:
        return f"{stage['stage']} skipped (the check's time was spent)"
    timed_out = " (timed out)" if stage["rc"] in (124, 137) else ""
    return f"{stage['stage']} exit {stage['rc']}{timed_out} in {stage['seconds']} s"


def markdown(report: dict) -> str:
    """The section for benchmarks/RESULTS.md."""
    env = report["environment"]
    versions = env["versions"]
    where = (
        f"{env.get('gpu')} ({env.get('gpu_memory_gib')} GiB, driver {env.get('driver')}, CUDA {env.get('torch_cuda')})"
        if env.get("gpu")
        else f"CPU only ({env['cpu_count']} cores, {env['machine']})"
    )
    lines = [
        f"### GPU check, {env['date_utc']}: {where}",
        "",
        f"torch {versions['torch']}, transformers {versions['transformers']}, datasets {versions['datasets']}, "
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
            "the CPU runs' WordPiece-8000.",
            "",
        ]
    run = report["pretraining"]
    if run is None:
        lines.append("**Pretraining: no results** (see the stages below and check.log).")
    else:
        before, after = run["before"] or {}, run["after"]
        stop = "--max_time" if run["stopped_by_max_time"] else "--max_steps"
        lines += [
            "| model | objective | precision | batch × length | steps | tokens seen | train minutes | "
            "tokens/s (median of logged intervals) | tokens/s over the run (evaluations included) | held-out MLM loss before → after | "
            "masked-token accuracy after | NSP accuracy after | stopped by |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            f"| {report['model']} | {run['objective']} | {'bf16' if run['bf16'] else 'fp32'} | "
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
    lines.append("Stages: " + "; ".join(_stage_text(stage) for stage in report["stages"]) + ".")
    return "\n".join(lines) + "\n"


def report(environment_path: Path, run: Path, bench: list[Path], stages: Path | None, command: str, model: str) -> dict:
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
    return {
        "environment": read_json(environment_path),
        "command": command,
        "model": model,
        "pretraining": pretraining_summary(run),
        "bench": bench_tables,
        "stages": stage_lines,
    }


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
    args = parser.parse_args(argv)
    if args.device is not None:
        record = environment(args.device)
        manifest = read_json(args.shard / "manifest.json") if args.shard else None
        if manifest is not None:
            record["shard"] = {
                split: {key: value for key, value in summary.items() if key != "sources"}
                for split, summary in manifest["splits"].items()
            }
        print(json.dumps(record, indent=2))
        args.environment.write_text(json.dumps(record, indent=2) + "\n")
        found = problems(record)
        for problem in found:
            print(f"gpu_pretraining_check cannot run here: {problem}", file=sys.stderr)
        return 1 if found else 0
    if args.run is None or args.out is None:
        raise ValueError("give --device (stage 0) or --run and --out (stage 3)")
    result = report(args.environment, args.run, args.bench, args.stages, args.command, args.model)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_check.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    (args.out / "gpu_check.md").write_text(text)
    print(text)
    failed = [stage["stage"] for stage in result["stages"] if stage["rc"] != 0]
    return 1 if failed or result["pretraining"] is None else 0


if __name__ == "__main__":
    sys.exit(main())
