"""The memory measures behind benchmarks/RESULTS.md count what they claim to count."""

import torch
from torch import nn

from benchmarks import measure  # noqa: E402

MIB = 2**20


def test_peak_step_tensor_memory_replays_allocations_and_frees():
    def step():
        first = torch.ones(MIB // 4)  # 1 MiB
        second = torch.ones(3 * MIB // 4)  # 3 MiB: 4 MiB live
        del first
        third = torch.ones(2 * MIB // 4)  # 2 MiB: 5 MiB live, the peak
        del second, third
        torch.ones(MIB // 4)  # 1 MiB, freed at once

    assert abs(measure.peak_step_tensor_mib(step) - 5.0) < 0.01


def test_resident_tensors_count_a_shared_storage_once():
    embedding = nn.Embedding(1024, 256)  # 1 MiB
    decoder = nn.Linear(256, 1024)
    decoder.weight = embedding.weight  # tied: one storage
    tensors = [*embedding.parameters(), *decoder.parameters(), embedding.weight[:10]]
    assert abs(measure.resident_tensor_mib(tensors) - (1.0 + 1024 * 4 / MIB)) < 1e-9
