"""torch.export and ONNX export (the dynamo exporter, run with onnxruntime) of every registered
variant and head, outputs equal to eager. Decoders export their forward with ``use_cache=False``
(a cache object is not a graph output). Heads that sample (ELECTRA's generator picks replacement
tokens, MAE masks random patches) export too, but their ONNX outputs cannot equal eager's: the RNG
streams differ, so they are compared through torch.export only, with the same seed.
"""

from __future__ import annotations

import inspect

import pytest
import torch
from torch.utils import _pytree as pytree
from variant_cases import assert_outputs_equal, model_inputs, params, tiny_model


def onnxruntime():
    """onnxruntime (the ``export`` extra); the ONNX tests skip without it, torch.export's run anyway."""
    return pytest.importorskip("onnxruntime")


def export_inputs(spec, head, model) -> dict[str, torch.Tensor | bool]:
    inputs = model_inputs(spec, head, model)
    if "use_cache" in inspect.signature(model.forward).parameters:
        inputs["use_cache"] = False
    return inputs


def is_stochastic(model, inputs) -> bool:
    """Two eval calls with different seeds disagree (the head samples)."""
    with torch.no_grad():
        torch.manual_seed(1)
        first = pytree.tree_leaves(model(**inputs))
        torch.manual_seed(2)
        second = pytree.tree_leaves(model(**inputs))
    return any(isinstance(a, torch.Tensor) and not torch.equal(a, b) for a, b in zip(first, second))


@pytest.mark.parametrize("spec,head", params(rotation=5))
def test_torch_export_gives_eager_outputs(spec, head):
    model = tiny_model(spec, head, padding_free=False)
    inputs = export_inputs(spec, head, model)
    with torch.no_grad():
        torch.manual_seed(0)
        expected = model(**inputs)
        program = torch.export.export(model, (), inputs)
        torch.manual_seed(0)
        got = program.module()(**inputs)
    assert_outputs_equal(got, expected)


def onnx_marks(spec, head):
    marks = []
    if head not in ("ForSequenceClassification", "ForImageClassification"):
        marks.append(pytest.mark.slow)  # one head per variant in the fast run; every head in CI's slow run
    return marks


@pytest.mark.parametrize("spec,head", params(marks_for=onnx_marks))
def test_onnx_export_runs_in_onnxruntime_with_eager_outputs(spec, head, tmp_path):
    onnxruntime()
    model = tiny_model(spec, head, padding_free=False)
    inputs = export_inputs(spec, head, model)
    if is_stochastic(model, inputs):
        pytest.skip(f"{spec.name} {head} samples at inference: compared through torch.export only")
    tensor_inputs = {name: value for name, value in inputs.items() if isinstance(value, torch.Tensor)}
    program = torch.onnx.export(model, (), kwargs=inputs, dynamo=True, verbose=False)
    program.save(str(tmp_path / "model.onnx"))
    session = onnxruntime().InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    graph_inputs = session.get_inputs()
    # The exporter names the graph inputs after the keyword arguments, in their order.
    assert len(graph_inputs) == len(tensor_inputs), [i.name for i in graph_inputs]
    feed = {graph_input.name: value.numpy() for graph_input, value in zip(graph_inputs, tensor_inputs.values())}
    got = session.run(None, feed)
    with torch.no_grad():
        expected = [leaf for leaf in pytree.tree_leaves(model(**inputs)) if isinstance(leaf, torch.Tensor)]
    assert len(got) == len(expected)
    for onnx_value, eager_value in zip(got, expected):
        torch.testing.assert_close(torch.from_numpy(onnx_value), eager_value, atol=1e-5, rtol=1e-5)


def test_model_card_export_snippet_runs(tmp_path, monkeypatch):
    """The card's "Compile and export" section says how, and its code runs as written."""
    from hf_variants.hub.card import EXPORT_SNIPPET, build_model_card

    onnxruntime()
    from hf_variants.registry import SPECS

    spec = SPECS["hfv_bert"]
    model = tiny_model(spec, "ForSequenceClassification")
    card = str(build_model_card(model.config.to_dict(), model_name="tiny"))
    assert "## Compile and export" in card and EXPORT_SNIPPET in card
    monkeypatch.chdir(tmp_path)
    namespace = {"model": model, "inputs": model_inputs(spec, "ForSequenceClassification", model)}
    exec(EXPORT_SNIPPET, namespace)
    session = onnxruntime().InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    assert [graph_input.name for graph_input in session.get_inputs()] == list(namespace["inputs"])
    assert isinstance(namespace["program"], torch.export.ExportedProgram)
