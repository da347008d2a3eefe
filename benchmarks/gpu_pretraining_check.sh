#!/usr/bin/env bash
# The GPU check of issue #30: pretraining with --bf16 on CUDA through the same command as on the CPU,
# and bench_pretraining.py's step (ours vs transformers') on the GPU. At most TOTAL_SECONDS (480) on one H100.
#
#   benchmarks/gpu_pretraining_check.sh [RESULTS_DIR]       # default: $OUT (the device tool), else outputs/gpu_check
#
# Inputs: benchmarks/gpu_shard/ (benchmarks/make_gpu_shard.py --wheels writes it; git ignores it, so the
# device tool must carry it). The machine needs no network: the shard holds the corpus slice, the
# tokenizers, the benchmark's sentences and (wheels/) the packages the device image lacks.
#
# Stages, each under its own `timeout` (its limit, cut to what is left of TOTAL_SECONDS less 20 s for the
# report), so one that hangs cannot eat the others' time and the report is always written:
#   0. environment: nvidia-smi, wheels installed into a temporary --target, versions, a clear failure
#      naming what is missing (no torch, no GPU, transformers outside pyproject's range, no datasets);
#   1. examples/run_pretraining.py --model_name_or_path $MODEL --recipe bert --bf16 on the shard,
#      --max_time $MINUTES, held-out loss every $EVAL_STEPS steps (tokenizing the shard included);
#   2. benchmarks/bench_pretraining.py --device $DEVICE, one process per variant ($BENCH_VARIANTS),
#      fp32 and bf16 (a variant that runs out of time loses only its own rows);
#   3. benchmarks/gpu_check_report.py: gpu_check.json (everything) and gpu_check.md (the section
#      to paste into benchmarks/RESULTS.md, naming the device).
# Files left in RESULTS_DIR: check.log, gpu_check.json, gpu_check.md (the device tool returns at most 8).
#
# Settings (environment): DEVICE=cuda|cpu (cpu: the same stages on this machine, to test the script),
# MODEL (bert-mini), MINUTES (2.5: training budget), STEPS (6000: the schedule's length; --max_time
# usually stops first), EVAL_STEPS (1000), BATCH (the recipe's 32), BF16 (1), BENCH_VARIANTS
# (bert,electra,roberta), BENCH_DTYPES (fp32,bf16), BENCH_SECONDS (75 per variant), BENCH_ARGS
# (extra bench_pretraining.py flags), TRAIN_EXTRA_SECONDS (150: the pretraining stage's limit beyond
# MINUTES, for tokenizing, evaluating and saving), TOTAL_SECONDS (480: the whole check's limit),
# PYTHON (python3), SHARD (benchmarks/gpu_shard).
#
# The CPU proof (a tiny model on a 0.3 MiB shard; minutes on a loaded 2-core machine):
#   python benchmarks/make_gpu_shard.py --max-mib 0.3 --output /tmp/gpu_shard_tiny
#   DEVICE=cpu SHARD=/tmp/gpu_shard_tiny MODEL=bert-tiny MINUTES=0.5 STEPS=40 EVAL_STEPS=20 BENCH_VARIANTS=bert \
#     BENCH_ARGS="--quick --batch-size 2 --reps 1 --threads 1" TRAIN_EXTRA_SECONDS=900 BENCH_SECONDS=600 TOTAL_SECONDS=3000 \
#     PYTHON=/work/main/.venv/bin/python benchmarks/gpu_pretraining_check.sh /tmp/gpu_check_cpu
set -u -o pipefail

cd "$(dirname "$0")/.." || exit 1
RESULTS=${1:-${OUT:-outputs/gpu_check}}
DEVICE=${DEVICE:-cuda}
MODEL=${MODEL:-bert-mini}
MINUTES=${MINUTES:-2.5}
STEPS=${STEPS:-6000}
EVAL_STEPS=${EVAL_STEPS:-1000}
BATCH=${BATCH:-}
BF16=${BF16:-1}
BENCH_VARIANTS=${BENCH_VARIANTS:-bert,electra,roberta}
BENCH_DTYPES=${BENCH_DTYPES:-fp32,bf16}
BENCH_SECONDS=${BENCH_SECONDS:-75}
TRAIN_EXTRA_SECONDS=${TRAIN_EXTRA_SECONDS:-150}
TOTAL_SECONDS=${TOTAL_SECONDS:-480}
BENCH_ARGS=${BENCH_ARGS:-}
PYTHON=${PYTHON:-python3}
SHARD=${SHARD:-benchmarks/gpu_shard}
if [ ! -d "$SHARD" ]; then
  echo "no shard at $SHARD: write it with 'python benchmarks/make_gpu_shard.py --wheels' and carry benchmarks/gpu_shard"
  exit 2
fi
SHARD=$(cd "$SHARD" && pwd)

mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
exec > >(tee "$RESULTS/check.log") 2>&1
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
export HF_HOME="$WORK/hf_home" HF_VARIANTS_CACHE="$WORK/hf_variants_cache"
export BENCH_TOKENIZER_DIR="$SHARD/bench/tokenizer" BENCH_CORPUS_JSON="$SHARD/bench/corpus.json"
STAGES="$WORK/stages.jsonl"
: > "$STAGES"

stage() {  # stage NAME SECONDS COMMAND...: run it under `timeout`, record its exit status and duration
  local name=$1 limit=$2 started=$SECONDS rc left
  shift 2
  left=$((TOTAL_SECONDS - SECONDS - 20))  # what the whole check has left, 20 s kept for the report
  if [ "$left" -lt "$limit" ]; then limit=$left; fi
  if [ "$limit" -lt 5 ]; then
    echo "=== stage $name: skipped, the check's $TOTAL_SECONDS s are spent"
    printf '{"stage": "%s", "rc": %d, "seconds": 0, "limit_s": 0}\n' "$name" 125 >> "$STAGES"
    return 125
  fi
  echo "=== stage $name (limit ${limit} s): $*"
  timeout --kill-after=10 "$limit" "$@"
  rc=$?
  printf '{"stage": "%s", "rc": %d, "seconds": %d, "limit_s": %d}\n' "$name" "$rc" "$((SECONDS - started))" "$limit" \
    >> "$STAGES"
  echo "=== stage $name: exit $rc"
  return $rc
}

echo "gpu_pretraining_check: $(date -u '+%Y-%m-%d %H:%M UTC'), DEVICE=$DEVICE MODEL=$MODEL MINUTES=$MINUTES STEPS=$STEPS"
for needed in "$SHARD/data/dataset_dict.json" "$SHARD/tokenizer/tokenizer.json" "$BENCH_CORPUS_JSON" "$BENCH_TOKENIZER_DIR/tokenizer.json"; do
  if [ ! -e "$needed" ]; then
    echo "missing $needed: write the shard with 'python benchmarks/make_gpu_shard.py --wheels' and carry $SHARD"
    exit 2
  fi
done

# ---------------------------------------------------------------- 0. environment
if [ "$DEVICE" = cuda ]; then
  nvidia-smi || echo "nvidia-smi failed"
fi
if compgen -G "$SHARD/wheels/*.whl" > /dev/null; then  # the versions this checkout was tested with
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" \
    "$SHARD"/wheels/*.whl || { echo "installing the carried wheels failed"; exit 2; }
  export PYTHONPATH="$WORK/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
timeout 120 "$PYTHON" benchmarks/gpu_check_report.py --environment "$WORK/environment.json" --device "$DEVICE" \
  --shard "$SHARD" || exit 2

# ---------------------------------------------------------------- 1. pretraining
train_args=(--model_name_or_path "$MODEL" --recipe bert --dataset_name "$SHARD/data" --tokenizer_name "$SHARD/tokenizer"
            --data_cache_dir "$WORK/data_cache" --output_dir "$WORK/run" --overwrite_output_dir
            --max_time "$MINUTES" --max_steps "$STEPS" --eval_steps "$EVAL_STEPS" --logging_steps 50
            --save_steps 1000000 --seed 0)
[ "$BF16" = 1 ] && train_args+=(--bf16)
[ -n "$BATCH" ] && train_args+=(--per_device_train_batch_size "$BATCH")
[ "$DEVICE" = cpu ] && train_args+=(--use_cpu)
# The budget plus tokenizing the shard, the evaluations before and after, and saving.
TRAIN_LIMIT=$("$PYTHON" -c "print(int(float('$MINUTES') * 60) + $TRAIN_EXTRA_SECONDS)")
stage pretraining "$TRAIN_LIMIT" "$PYTHON" examples/run_pretraining.py "${train_args[@]}"

# ---------------------------------------------------------------- 2. the step, ours vs transformers'
IFS=, read -r -a variants <<< "$BENCH_VARIANTS"
for variant in "${variants[@]}"; do
  # shellcheck disable=SC2086  # BENCH_ARGS holds several flags
  stage "bench_$variant" "$BENCH_SECONDS" "$PYTHON" benchmarks/bench_pretraining.py --device "$DEVICE" \
    --variants "$variant" --dtypes "$BENCH_DTYPES" --json "$WORK/bench-$variant.json" $BENCH_ARGS
done

# ---------------------------------------------------------------- 3. report
"$PYTHON" benchmarks/gpu_check_report.py --environment "$WORK/environment.json" --run "$WORK/run" \
  --bench "$WORK"/bench-*.json --stages "$STAGES" --out "$RESULTS" \
  --command "DEVICE=$DEVICE MODEL=$MODEL MINUTES=$MINUTES STEPS=$STEPS EVAL_STEPS=$EVAL_STEPS BATCH=${BATCH:-32} BF16=$BF16 BENCH_VARIANTS=$BENCH_VARIANTS BENCH_ARGS='$BENCH_ARGS' benchmarks/gpu_pretraining_check.sh"
status=$?
rm -rf "$WORK"
exit $status
