"""`hf-variants push` that fails leaves the local folder intact and the remote repository either
unchanged or complete: the upload is one commit, so a repository holding an earlier version keeps
it, file for file, until a push succeeds (local HTTP Hub server, tests/common/hub_server.py)."""

from __future__ import annotations

import functools

import huggingface_hub.lfs
import pytest
from huggingface_hub import HfApi, hf_hub_download

import hf_variants
from hf_variants.hub import PushError, push_model_dir
from tests.common.hub_server import hub  # noqa: F401  (a fixture)
from tests.hub.test_hub_push import make_run_dir, tree_digest


def remote_snapshot(repo_id: str, revision: str) -> dict[str, bytes]:
    api = HfApi()
    return {
        name: open(hf_hub_download(repo_id, name, revision=revision), "rb").read()
        for name in api.list_repo_files(repo_id, revision=revision)
    }


def retrained(run_dir):
    """The same run folder with other weights and config (a second training run saved over it)."""
    config = hf_variants.BertConfig(
        hidden_size=48, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, vocab_size=99, num_labels=3
    )
    hf_variants.BertForSequenceClassification(config).save_pretrained(run_dir)
    return run_dir


@pytest.mark.parametrize(("kind", "times"), [("commit", 1), ("lfs_upload", 10)])
def test_failed_push_over_a_published_version_keeps_it_whole(hub, tmp_path, monkeypatch, kind, times):
    # The client retries failed uploads 5 times with waits of 1-8 s: same retries, shorter waits.
    monkeypatch.setattr(
        huggingface_hub.lfs,
        "http_backoff",
        functools.partial(huggingface_hub.lfs.http_backoff, base_wait_time=0.01, max_wait_time=0.01),
    )
    run_dir = make_run_dir(tmp_path)
    first = push_model_dir(run_dir, "org/model")
    published = remote_snapshot("org/model", first.commit_oid)
    assert "model.safetensors" in published

    retrained(run_dir)
    local_before = tree_digest(run_dir)
    hub.inject_failure(kind, times=times, mode="error")
    with pytest.raises(PushError, match="'org/model'"):
        push_model_dir(run_dir, "org/model")
    assert tree_digest(run_dir) == local_before  # the local folder is only read
    assert hub.store.resolve("models", "org/model", "main") == first.commit_oid  # no new commit
    assert remote_snapshot("org/model", "main") == published  # every file as the first push left it

    hub.inject_failure(kind, times=0)
    second = push_model_dir(run_dir, "org/model")
    assert second.commit_oid != first.commit_oid
    new = remote_snapshot("org/model", second.commit_oid)
    assert new["model.safetensors"] == (run_dir / "model.safetensors").read_bytes()
    assert b'"hidden_size": 48' in new["config.json"]  # weights and config of the same version
    assert tree_digest(run_dir) == local_before


def test_push_skips_temporary_folders_of_an_interrupted_save(hub, tmp_path):
    run_dir = make_run_dir(tmp_path)
    (run_dir / ".run.hfv-staging-trainer").mkdir()
    (run_dir / ".config.json.hfv-staging-1-abc").write_text("{")
    result = push_model_dir(run_dir, "org/clean")
    assert not [name for name in result.uploaded if "hfv-staging" in name]
    assert not [name for name in HfApi().list_repo_files("org/clean") if "hfv-staging" in name]
