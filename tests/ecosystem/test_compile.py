"""torch.compile on every registered variant and head.

On the padded path (``padding_free=False``) dynamo captures the whole forward as one graph
(``fullgraph=True``: any graph break is an error) and the compiled model gives the eager outputs.
The padding-free path keeps its graph breaks (its layout is decided from, and shaped by, the
batch's real-token count): their number and causes are pinned here and explained in docs/ecosystem.md (torch.compile).
"""

from __future__ import annotations

import pytest
import torch
import torch._dynamo as dynamo
from variant_cases import assert_outputs_equal, model_inputs, params, tiny_model

from hf_variants.registry import SPECS


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    dynamo.reset()
    yield
    dynamo.reset()


@pytest.mark.parametrize("spec,head", params(rotation=4))
def test_padded_path_compiles_as_one_graph_with_eager_outputs(spec, head):
    model = tiny_model(spec, head, padding_free=False)
    inputs = model_inputs(spec, head, model)
    with torch.no_grad():
        torch.manual_seed(0)  # heads that sample (MAE's random masking) draw the same numbers
        eager = model(**inputs)
        torch.manual_seed(0)
        # aot_eager: dynamo's capture plus AOTAutograd's functional trace, without inductor's C++
        # build (minutes for 70 models on 2 cores); inductor itself runs in the test below.
        compiled = torch.compile(model, fullgraph=True, backend="aot_eager")(**inputs)
    assert_outputs_equal(compiled, eager)


def test_inductor_compiled_training_step_matches_eager():
    """The real compiler (inductor) on a BERT classifier, labels included, as one graph: loss and
    gradients equal eager's."""
    spec = SPECS["hfv_bert"]
    model = tiny_model(spec, "ForSequenceClassification", padding_free=False).train()
    inputs = model_inputs(spec, "ForSequenceClassification", model)
    inputs["labels"] = torch.tensor([0, 1])
    eager_loss = model(**inputs).loss
    eager_loss.backward()
    eager_grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    compiled_loss = torch.compile(model, fullgraph=True)(**inputs).loss  # the label check must not break the graph
    compiled_loss.backward()
    torch.testing.assert_close(compiled_loss, eager_loss, atol=1e-5, rtol=1e-5)
    for name, parameter in model.named_parameters():
        torch.testing.assert_close(parameter.grad, eager_grads[name], atol=1e-5, rtol=1e-4, msg=name)


# The padding-free path's breaks for a BERT classifier on a padded batch (torch 2.13): the layout
# decision reads the mask three times (does the pooler read a padding position? is there enough
# padding to pack? does a read position hold padding?) and the packed layout itself has a
# data-dependent size (nonzero over the mask) and per-row bucket lengths (cu_seqlens.tolist()).
# Dynamo resumes after each break inside every enclosing frame, hence more breaks than causes.
# One function, masks.reads_a_padding_position, answers both "does the pooler read padding?" and "does
# a read position hold padding?": its second call reuses the frame Dynamo compiled for the first, so
# it is counted once (24 breaks while they were two functions; the same three mask reads run).
# BERT's speed path is a strategy object (modules/fast_path.py) the model hands its forward to: the
# same four sites, but one more enclosing frame to resume in (23 breaks while BERT ran the shared
# backbone's layout code inline). Session 17 split the strategy's encode into _plan and
# _layers_and_pooler (ViT's encode_embedded shares them) and BERT asks for it only with the switch on:
# the same four sites, 24 breaks.
PADDING_FREE_BREAK_SITES = {"reads_a_padding_position", "worth_unpadding", "from_attention_mask", "_build_buckets"}
PADDING_FREE_BREAKS = 24


def test_padding_free_path_breaks_are_the_known_ones_and_outputs_stay_eager():
    spec = SPECS["hfv_bert"]
    model = tiny_model(spec, "ForSequenceClassification", padding_free=True)
    inputs = model_inputs(spec, "ForSequenceClassification", model)
    inputs["attention_mask"][1, 3:] = 0  # enough padding for the packed layout
    explanation = dynamo.explain(model)(**inputs)
    sites = {reason.user_stack[-1].name for reason in explanation.break_reasons}
    assert sites == PADDING_FREE_BREAK_SITES
    assert explanation.graph_break_count == PADDING_FREE_BREAKS
    dynamo.reset()
    with torch.no_grad():
        assert_outputs_equal(torch.compile(model, backend="aot_eager")(**inputs), model(**inputs))
