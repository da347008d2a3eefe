"""make_vocabulary_decoder (hf_variants.modules.heads): the tied decoder's CPU tricks sit behind the
speed switch. With ``config.padding_free`` the models build ``TiedDecoder``; without it torch's
``nn.Linear``. Both have the same parameter names (so the state dict and the tying are unchanged)
and give the same logits and gradients."""

import pytest
import torch
from torch import nn

from hf_variants.modules.heads import TiedDecoder, make_vocabulary_decoder
from hf_variants.registry import SPECS
from tests.common.tiny_variants import tiny_config


@pytest.mark.parametrize("bias", [True, False])
def test_the_switch_picks_the_class_and_keeps_the_parameters(bias):
    fast = make_vocabulary_decoder(8, 31, bias=bias, cpu_kernel=True)
    plain = make_vocabulary_decoder(8, 31, bias=bias, cpu_kernel=False)
    assert type(fast) is TiedDecoder and type(plain) is nn.Linear
    shapes = {name: tuple(p.shape) for name, p in plain.named_parameters()}
    assert shapes == {name: tuple(p.shape) for name, p in fast.named_parameters()}
    assert shapes == ({"weight": (31, 8), "bias": (31,)} if bias else {"weight": (31, 8)})


# (variant, head, the attribute paths of its vocabulary decoders)
TIED_HEADS = [
    ("bert", "ForMaskedLM", ["mlm_head.decoder"]),
    ("albert", "ForPreTraining", ["mlm_head.decoder"]),
    ("electra", "ForPreTraining", ["generator_mlm_head.decoder"]),
    ("electra", "ForMaskedLM", ["mlm_head.decoder"]),
    ("spanbert", "ForPreTraining", ["mlm_head.decoder", "sbo_head.decoder"]),
    ("gpt", "LMHeadModel", ["lm_head"]),
    ("t5", "ForConditionalGeneration", ["lm_head"]),
]


@pytest.mark.parametrize("variant, head, decoders", TIED_HEADS, ids=lambda v: v if isinstance(v, str) else None)
def test_models_build_the_decoder_the_switch_names_and_keep_it_tied(variant, head, decoders):
    spec = SPECS[f"hfv_{variant}"]
    state_dicts = {}
    for switch, expected in ((True, TiedDecoder), (False, nn.Linear)):
        model = spec.classes[head](tiny_config(spec, padding_free=switch))
        words = model.get_input_embeddings().weight
        for path in decoders:
            decoder = model.get_submodule(path)
            assert type(decoder) is expected, (path, switch)
            assert decoder.weight is words, f"{path} is no longer tied to the word embeddings"
        state_dicts[switch] = model.state_dict()
    assert state_dicts[True].keys() == state_dicts[False].keys()


def test_both_decoders_give_the_same_logits_and_gradients():
    """BERT's masked LM built with and without the switch, the same weights, both run on the plain
    layout (only the decoder class differs): the same loss, logits and tied-weight gradient."""
    spec = SPECS["hfv_bert"]
    torch.manual_seed(0)
    fast = spec.classes["ForMaskedLM"](tiny_config(spec, padding_free=True))
    plain = spec.classes["ForMaskedLM"](tiny_config(spec, padding_free=False))
    plain.load_state_dict(fast.state_dict())
    fast.config.padding_free = False  # the same (padded) layout; the decoder chosen at build stays
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(5, fast.config.vocab_size, (2, 9), generator=generator)
    labels = torch.where(torch.rand(input_ids.shape, generator=generator) < 0.3, input_ids, -100)
    labels[0, 0] = input_ids[0, 0]
    results = []
    for model in (fast, plain):
        model.eval()
        output = model(input_ids=input_ids, labels=labels)
        output.loss.backward()
        results.append((output.loss.detach(), output.logits.detach(), model.get_input_embeddings().weight.grad))
    for ours, reference in zip(*results):
        torch.testing.assert_close(ours, reference, atol=1e-5, rtol=1e-5)
