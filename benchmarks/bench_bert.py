"""Side-by-side speed and memory of hf-variants' BERT against transformers' BERT on CPU: BERT's
rows of the encoder harness ``bench_encoders.py`` (which declares the scenarios) plus the MFU row.

For every scenario the same configuration is built in transformers and converted to hf-variants
with ``hf_variants.from_transformers`` (identical weights); both get the same batches of the real
rt-polarity movie-review sentences tokenised with the real bert-base-uncased WordPiece tokenizer.

    python benchmarks/bench_bert.py            # every scenario (< 10 min on 2 cores)
    python benchmarks/bench_bert.py --quick    # the mini scenarios + a small MFU run (< 3 min)
    python benchmarks/bench_bert.py --scenarios finetune-mini-dynamic,infer-mini-dynamic
    python benchmarks/bench_bert.py --write benchmarks/RESULTS.md   # replaces its own section there
    python benchmarks/bench_bert.py --profile mfu   # torch.profiler op tables, both sides

Method
- Throughput: one fresh process per scenario holds both models. After warm-up, each repetition
  times ``steps`` steps of one implementation and then of the other, alternating which goes
  first, so load from other processes hits both alike. Ratio = transformers' seconds per step /
  ours, per repetition; we report its median, min and max.
- Memory: one fresh process per (scenario, implementation) builds only what it needs, resets the
  kernel's resident-set high-water mark and runs the same steps (see ``measure.py``).
- MFU: FLOPs of one bert-base training step counted by torch's FlopCounterMode (matmuls and
  attention, forward and backward), divided by the median step time, divided by the best fp32
  GFLOP/s of large square torch.matmul on the same threads.
"""

import sys
from pathlib import Path

if not __package__:  # run as `python benchmarks/bench_bert.py`: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # (and this checkout's hf_variants)

from benchmarks import bench_encoders  # noqa: E402

if __name__ == "__main__":
    bench_encoders.main(program="benchmarks/bench_bert.py", default_variants=["bert"], with_mfu=True)
