#!/bin/bash
cd $REPO
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
CK=/work/runs/s10/roberta-mini-mix-m40/checkpoint-3000
python examples/run_pretraining.py --model_name_or_path $CK --tokenizer_name $CK --recipe roberta \
    --train_file /work/runs/s11/rt_train_sentences.txt --bf16 --mlm_probability 0.4 --eval_mlm_probability 0.15 \
    --learning_rate 3e-4 --warmup_steps 0.06 --max_steps 700 --max_time 12 --eval_steps 200 --save_steps 700 --seed 0 \
    --output_dir /work/runs/s11/roberta-mix3000-tapt12 || exit 1
exec python -m research.evaluate_pretraining --model_name_or_path /work/runs/s11/roberta-mix3000-tapt12 \
    --tasks sentiment pos probe --seeds 3 --threads 1 --use_cpu --output_dir /work/runs/s11/eval-roberta-mix3000-tapt12
