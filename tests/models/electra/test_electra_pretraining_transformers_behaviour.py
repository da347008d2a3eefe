"""Regressions found by transformers' own common tests (issue 31) on our joint ``ElectraForPreTraining``
(generator + discriminator; transformers has no counterpart of it).

- ``outputs[0]`` without labels is the discriminator's logits, as in transformers'
  ``ElectraForPreTrainingOutput`` (loss, logits, ...): it is computed from the hidden states the
  model returns, so backpropagating from it reaches them (``test_retain_grad_hidden_states_attentions``
  backpropagates from ``outputs[0]``; it was the generator's logits).
- A bare ``ElectraModel`` checkpoint loads into the discriminator, the model under the base prefix
  ``electra`` (the generator, an ``ElectraModel`` of another width, keeps its random init).
"""

from __future__ import annotations

import torch

from hf_variants import ElectraConfig, ElectraForPreTraining, ElectraModel

TINY = dict(
    vocab_size=99,
    embedding_size=16,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
    generator_hidden_size=0.5,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)


def test_first_output_is_the_discriminators_logits_and_reaches_the_returned_states():
    torch.manual_seed(0)
    model = ElectraForPreTraining(ElectraConfig(**TINY)).eval()
    model.config._attn_implementation = "eager"
    ids = torch.randint(5, 99, (2, 7))
    out = model(input_ids=ids, output_hidden_states=True, output_attentions=True)
    assert out[0] is out.logits and out.logits.shape == (2, 7)
    assert out.to_tuple()[0] is out.logits
    returned = [out.hidden_states[0], out.attentions[0]]
    for tensor in returned:
        tensor.retain_grad()
    out[0].flatten()[0].backward(retain_graph=True)
    assert all(t.grad is not None for t in returned)
    # with labels, the loss comes first (as transformers' outputs)
    labels = torch.full_like(ids, -100)
    labels[:, 2] = ids[:, 2]
    assert model(input_ids=ids, labels=labels)[0].dim() == 0


def test_bare_model_checkpoint_loads_into_the_discriminator(tmp_path):
    config = ElectraConfig(**TINY)
    torch.manual_seed(0)
    base = ElectraModel(config)
    base.save_pretrained(tmp_path)
    model, info = ElectraForPreTraining.from_pretrained(
        tmp_path, output_loading_info=True, ignore_mismatched_sizes=True
    )
    discriminator = {f"electra.{key}" for key in base.state_dict()}
    assert not set(info["missing_keys"]) & discriminator, set(info["missing_keys"]) & discriminator
    for key, tensor in base.state_dict().items():
        torch.testing.assert_close(model.electra.state_dict()[key], tensor, msg=key)
    assert model.base_model_prefix == "electra" and model.base_model is model.electra
