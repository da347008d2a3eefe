#!/usr/bin/env bash
# The GPU check. MODE (comma-separated, run in order; default check):
#   check  (issue #30) pretraining bert-mini with --bf16 on CUDA through the same command as on the CPU, and
#          bench_pretraining.py's mini step (ours vs transformers') on the GPU;
#   proof  (issue #47) pretrain roberta-mini at 40% masking in bf16 with the batch measured fastest in the first
#          seconds (benchmarks/gpu_proof.py), then fine-tune it AND its random twin on movie-review sentiment
#          (research/evaluate_pretraining.py --tasks sentiment: the harness's fixed schedule, SEEDS seeds each);
#   step   (issue #47) the pretraining step at base width (bert/roberta/electra-base), bf16 and fp32, the largest
#          B x T of STEP_SHAPES that fits, ours with the speed path off and on vs transformers (sdpa): tokens/s,
#          MFU against the GPU's peak, peak memory (benchmarks/gpu_step.py).
# The GPU session runs MODE=proof,step in one device call (docs/pretraining.md, "On a GPU").
#
#   benchmarks/gpu_pretraining_check.sh [RESULTS_DIR]       # default: $OUT (the device tool), else outputs/gpu_check
#
# Inputs: benchmarks/gpu_shard/ (benchmarks/make_gpu_shard.py --wheels writes it; git ignores it, so the
# device tool must carry it). The machine needs no network: the shard holds the corpus slice, the
# tokenizers (WordPiece for bert-mini, BPE for roberta-mini), the rt-polarity file the fine-tuning reads
# (eval/), the benchmark's sentences and (wheels/) the packages the device image lacks.
#
# Stages, each under its own `timeout` (its limit, cut to what is left of TOTAL_SECONDS less 20 s for the
# report), so one that hangs cannot eat the others' time and the report is always written:
#   0. environment: nvidia-smi, wheels installed into a temporary --target, versions, the shard's rt-polarity
#      splits compared with what loads here, a clear failure naming what is missing (no torch, no GPU,
#      transformers outside pyproject's range, no datasets);
#   check: pretraining (run_pretraining.py --recipe bert), bench_<variant> (bench_pretraining.py);
#   proof: batch_probe (gpu_proof.py), proof_pretraining (run_pretraining.py --recipe roberta
#      --mlm_probability 0.4 --eval_mlm_probability 0.15), fine_tuning (evaluate_pretraining.py);
#   step: step_<variant> (gpu_step.py, one process per precision inside);
#   last: benchmarks/gpu_check_report.py: gpu_check.json (everything) and gpu_check.md (the sections
#      to paste into benchmarks/RESULTS.md, naming the device; a failed stage is named as failed).
# Files left in RESULTS_DIR: check.log, gpu_check.json, gpu_check.md. Weights stay in a temporary folder
# that is deleted at the end: nothing but the report comes back.
#
# Settings (environment): DEVICE=cuda|cpu (cpu: the same stages on this machine, to test the script),
# TOTAL_SECONDS (the whole check's limit: 480 for check, 570 otherwise), PYTHON (python3), SHARD
# (benchmarks/gpu_shard), BF16 (1).
#   check: MODEL (bert-mini), MINUTES (2.5: training budget), STEPS (6000: the schedule's length; --max_time
#   usually stops first), EVAL_STEPS (1000), BATCH (the recipe's 32), BENCH_VARIANTS (bert,electra,roberta),
#   BENCH_DTYPES (fp32,bf16), BENCH_SECONDS (75 per variant), BENCH_ARGS (extra bench_pretraining.py flags),
#   TRAIN_EXTRA_SECONDS (150: the pretraining stage's limit beyond MINUTES, for tokenizing, evaluating and saving).
#   proof: PROOF_MODEL (roberta-mini), PROOF_OVERRIDES (run_pretraining's --config_overrides; the tests' tiny
#   model), PROOF_MINUTES (2.5), PROBE_BATCHES (128,256,512), PROBE_SECONDS (4 per size), PROOF_EVAL_STEPS (500),
#   PROOF_EXTRA_SECONDS (90), SEEDS (3), EVAL_SECONDS (180: the fine-tuning stage), EVAL_ARGS (extra
#   evaluate_pretraining.py flags; the tests pass --quick).
#   step: STEP_VARIANTS (bert,roberta,electra), STEP_DTYPES (bf16,fp32), STEP_SHAPES (128x512,64x512,32x512),
#   STEP_SECONDS (100 per variant), STEP_ARGS (gpu_step.py flags; default "--steps 2 --reps 3"; --compile, ...).
#
# The CPU proof of check (a tiny model on a 0.3 MiB shard; minutes on a loaded 2-core machine):
#   python benchmarks/make_gpu_shard.py --max-mib 0.3 --output /tmp/gpu_shard_tiny
#   DEVICE=cpu SHARD=/tmp/gpu_shard_tiny MODEL=bert-tiny MINUTES=0.5 STEPS=40 EVAL_STEPS=20 BENCH_VARIANTS=bert \
#     BENCH_ARGS="--quick --batch-size 2 --reps 1 --threads 1" TRAIN_EXTRA_SECONDS=900 BENCH_SECONDS=600 TOTAL_SECONDS=3000 \
#     PYTHON=/work/main/.venv/bin/python benchmarks/gpu_pretraining_check.sh /tmp/gpu_check_cpu
# The proof and step modes on the CPU: tests/benchmarks/test_gpu_modes.py (a tiny shard and tiny models).
set -u -o pipefail

cd "$(dirname "$0")/.." || exit 1
RESULTS=${1:-${OUT:-outputs/gpu_check}}
MODE=${MODE:-check}
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
if [ "$MODE" = check ]; then TOTAL_SECONDS=${TOTAL_SECONDS:-480}; else TOTAL_SECONDS=${TOTAL_SECONDS:-570}; fi
PROOF_MODEL=${PROOF_MODEL:-roberta-mini}
PROOF_OVERRIDES=${PROOF_OVERRIDES:-}
PROOF_MINUTES=${PROOF_MINUTES:-2.5}
PROBE_BATCHES=${PROBE_BATCHES:-128,256,512}
PROBE_SECONDS=${PROBE_SECONDS:-4}
PROOF_EVAL_STEPS=${PROOF_EVAL_STEPS:-500}
PROOF_EXTRA_SECONDS=${PROOF_EXTRA_SECONDS:-90}
SEEDS=${SEEDS:-3}
EVAL_SECONDS=${EVAL_SECONDS:-180}
EVAL_ARGS=${EVAL_ARGS:-}
STEP_VARIANTS=${STEP_VARIANTS:-bert,roberta,electra}
STEP_DTYPES=${STEP_DTYPES:-bf16,fp32}
STEP_SHAPES=${STEP_SHAPES:-128x512,64x512,32x512}
STEP_SECONDS=${STEP_SECONDS:-100}
STEP_ARGS=${STEP_ARGS:---steps 2 --reps 3}
IFS=, read -r -a modes <<< "$MODE"
for mode in "${modes[@]}"; do
  case "$mode" in check|proof|step) ;; *) echo "MODE must be check, proof, step or a comma-separated list of them, got '$MODE'"; exit 2 ;; esac
done
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
mkdir -p "$HF_VARIANTS_CACHE"
if [ -d "$SHARD/eval/hf_variants_cache" ]; then  # the fine-tuning data, where hf_variants.data looks for it
  cp -r "$SHARD/eval/hf_variants_cache/." "$HF_VARIANTS_CACHE/"
fi
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

echo "gpu_pretraining_check: $(date -u '+%Y-%m-%d %H:%M UTC'), MODE=$MODE DEVICE=$DEVICE TOTAL_SECONDS=$TOTAL_SECONDS"
needed_files=("$SHARD/data/dataset_dict.json" "$BENCH_CORPUS_JSON" "$BENCH_TOKENIZER_DIR/tokenizer.json")
case ",$MODE," in *,check,*) needed_files+=("$SHARD/tokenizer/tokenizer.json") ;; esac
case ",$MODE," in *,proof,*) needed_files+=("$SHARD/tokenizer_bpe/tokenizer.json" "$HF_VARIANTS_CACHE/rt_polarity/movieReviewSnippets_GroundTruth.txt") ;; esac
for needed in "${needed_files[@]}"; do
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

run_check() {
  # ---------------------------------------------------------------- check: pretraining
  local train_args=(--model_name_or_path "$MODEL" --recipe bert --dataset_name "$SHARD/data" --tokenizer_name "$SHARD/tokenizer"
              --data_cache_dir "$WORK/data_cache" --output_dir "$WORK/run" --overwrite_output_dir
              --max_time "$MINUTES" --max_steps "$STEPS" --eval_steps "$EVAL_STEPS" --logging_steps 50
              --save_steps 1000000 --seed 0)
  [ "$BF16" = 1 ] && train_args+=(--bf16)
  [ -n "$BATCH" ] && train_args+=(--per_device_train_batch_size "$BATCH")
  [ "$DEVICE" = cpu ] && train_args+=(--use_cpu)
  # The budget plus tokenizing the shard, the evaluations before and after, and saving.
  local train_limit
  train_limit=$("$PYTHON" -c "print(int(float('$MINUTES') * 60) + $TRAIN_EXTRA_SECONDS)")
  stage pretraining "$train_limit" "$PYTHON" examples/run_pretraining.py "${train_args[@]}"

  # ---------------------------------------------------------------- check: the step, ours vs transformers'
  local variants variant
  IFS=, read -r -a variants <<< "$BENCH_VARIANTS"
  for variant in "${variants[@]}"; do
    # shellcheck disable=SC2086  # BENCH_ARGS holds several flags
    stage "bench_$variant" "$BENCH_SECONDS" "$PYTHON" benchmarks/bench_pretraining.py --device "$DEVICE" \
      --variants "$variant" --dtypes "$BENCH_DTYPES" --json "$WORK/bench-$variant.json" $BENCH_ARGS
  done
}

run_proof() {
  # ---------------------------------------------------------------- proof: the batch, measured
  local probe_args=(--model "$PROOF_MODEL" --tokenizer "$SHARD/tokenizer_bpe" --batch-sizes "$PROBE_BATCHES"
              --seconds "$PROBE_SECONDS" --minutes "$PROOF_MINUTES" --device "$DEVICE" --mlm-probability 0.4
              --json "$WORK/probe.json" --env "$WORK/choice.env")
  [ -n "$PROOF_OVERRIDES" ] && probe_args+=(--config-overrides "$PROOF_OVERRIDES")
  [ "$BF16" = 1 ] || probe_args+=(--fp32)
  local proof_batch proof_steps
  if stage batch_probe 90 "$PYTHON" benchmarks/gpu_proof.py "${probe_args[@]}" && [ -f "$WORK/choice.env" ]; then
    proof_batch=$(sed -n 's/^BATCH=//p' "$WORK/choice.env")
    proof_steps=$(sed -n 's/^STEPS=//p' "$WORK/choice.env")
  else  # the probe failed: the smallest size asked for, a schedule of 2,000 steps (the report names the failure)
    proof_batch=${PROBE_BATCHES%%,*}
    proof_steps=2000
  fi
  echo "proof: batch $proof_batch, schedule of $proof_steps steps"

  # ---------------------------------------------------------------- proof: pretraining
  local train_args=(--model_name_or_path "$PROOF_MODEL" --recipe roberta --mlm_probability 0.4 --eval_mlm_probability 0.15
              --dataset_name "$SHARD/data" --tokenizer_name "$SHARD/tokenizer_bpe"
              --data_cache_dir "$WORK/data_cache" --output_dir "$WORK/proof_run" --overwrite_output_dir
              --per_device_train_batch_size "$proof_batch" --max_steps "$proof_steps" --max_time "$PROOF_MINUTES"
              --eval_steps "$PROOF_EVAL_STEPS" --logging_steps 50 --save_steps 1000000 --seed 0)
  [ "$BF16" = 1 ] && train_args+=(--bf16)
  [ -n "$PROOF_OVERRIDES" ] && train_args+=(--config_overrides "$PROOF_OVERRIDES")
  [ "$DEVICE" = cpu ] && train_args+=(--use_cpu)
  local train_limit
  train_limit=$("$PYTHON" -c "print(int(float('$PROOF_MINUTES') * 60) + $PROOF_EXTRA_SECONDS)")
  stage proof_pretraining "$train_limit" "$PYTHON" examples/run_pretraining.py "${train_args[@]}"

  # ---------------------------------------------------------------- proof: sentiment, the checkpoint and its twin
  if [ -f "$WORK/proof_run/config.json" ]; then
    local eval_args=(--model_name_or_path "$WORK/proof_run" --tasks sentiment --seeds "$SEEDS" --output_dir "$WORK/eval")
    [ "$DEVICE" = cpu ] && eval_args+=(--use_cpu)
    # shellcheck disable=SC2086  # EVAL_ARGS holds several flags
    stage fine_tuning "$EVAL_SECONDS" "$PYTHON" -m research.evaluate_pretraining "${eval_args[@]}" $EVAL_ARGS
  else
    echo "=== stage fine_tuning: skipped, the pretraining left no checkpoint"
    printf '{"stage": "%s", "rc": %d, "seconds": 0, "limit_s": 0, "reason": "no checkpoint"}\n' fine_tuning 126 >> "$STAGES"
  fi
  rm -rf "$WORK/proof_run"/checkpoint-* "$WORK/eval/runs" "$WORK/eval/twins"  # weights never leave the machine
}

run_step() {
  # ---------------------------------------------------------------- step: base width, ours (both paths) vs transformers
  local variants variant
  IFS=, read -r -a variants <<< "$STEP_VARIANTS"
  for variant in "${variants[@]}"; do
    # shellcheck disable=SC2086  # STEP_ARGS holds several flags
    stage "step_$variant" "$STEP_SECONDS" "$PYTHON" benchmarks/gpu_step.py --device "$DEVICE" --variants "$variant" \
      --dtypes "$STEP_DTYPES" --shapes "$STEP_SHAPES" --json "$WORK/step-$variant.json" $STEP_ARGS
  done
}

report_settings() {  # the settings of the modes that ran, for the report's command line
  local mode
  for mode in "${modes[@]}"; do
    case "$mode" in
      check) printf "MODEL=%s MINUTES=%s STEPS=%s EVAL_STEPS=%s BATCH=%s BF16=%s BENCH_VARIANTS=%s BENCH_ARGS='%s' " \
        "$MODEL" "$MINUTES" "$STEPS" "$EVAL_STEPS" "${BATCH:-32}" "$BF16" "$BENCH_VARIANTS" "$BENCH_ARGS" ;;
      proof) printf "PROOF_MODEL=%s PROOF_MINUTES=%s PROBE_BATCHES=%s SEEDS=%s " "$PROOF_MODEL" "$PROOF_MINUTES" \
        "$PROBE_BATCHES" "$SEEDS" ;;
      step) printf "STEP_VARIANTS=%s STEP_DTYPES=%s STEP_SHAPES=%s STEP_ARGS='%s' " "$STEP_VARIANTS" "$STEP_DTYPES" \
        "$STEP_SHAPES" "$STEP_ARGS" ;;
    esac
  done
}

for mode in "${modes[@]}"; do
  "run_$mode"
done

# ---------------------------------------------------------------- report
shopt -s nullglob
"$PYTHON" benchmarks/gpu_check_report.py --environment "$WORK/environment.json" --modes "$MODE" \
  --run "$WORK/run" --bench "$WORK"/bench-*.json \
  --probe "$WORK/probe.json" --proof-run "$WORK/proof_run" --evaluation "$WORK/eval/evaluation.json" \
  --step "$WORK"/step-*.json --stages "$STAGES" --out "$RESULTS" --model "$MODEL" --proof-model "$PROOF_MODEL" \
  --command "MODE=$MODE DEVICE=$DEVICE TOTAL_SECONDS=$TOTAL_SECONDS $(report_settings) benchmarks/gpu_pretraining_check.sh"
status=$?
rm -rf "$WORK"
exit $status
