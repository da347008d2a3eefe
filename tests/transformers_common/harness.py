"""Our tiny model tester for transformers' ``ModelTesterMixin`` / ``GenerationTesterMixin``, and the
one list of our deliberate differences from transformers (docs/transformers_tests.md).

A family's test module builds a ``unittest.TestCase`` the way transformers' ``XModelTest`` does,
with :class:`TinyModelTester` in place of transformers' ``XModelTester``: a named config of ours
shrunk to hidden 32 / 2 layers / vocab 99, and inputs of batch 3, length 7 (the second row
right-padded, a real ``attention_mask``).
"""

from __future__ import annotations

import json
import unittest

import pytest
import torch

from hf_variants.models.named_configs import named_config_path
from hf_variants.registry import HEAD_AUTO_CLASSES, SPECS

try:  # transformers' mixins import it at module level; it is a dev dependency of ours
    import parameterized  # noqa: F401
except ImportError:  # pragma: no cover - reported, never silent
    pytest.skip(
        "transformers' test mixins need the `parameterized` package (pip install parameterized)",
        allow_module_level=True,
    )

from tests.transformers_common import upstream  # noqa: E402  (tests/transformers_common/upstream.py)

try:
    common = upstream.load("test_modeling_common")
    config_common = upstream.load("test_configuration_common")
    generation = upstream.load("generation.test_utils")
except Exception as error:  # noqa: BLE001  - the sdist could not be had: say so, by module
    pytest.skip(f"transformers' test mixins v{upstream.VERSION} unavailable: {error!r}", allow_module_level=True)


def _teach_mappings() -> None:
    """The mixins pick labels and skip base models by class name, from transformers' Auto mapping
    dicts (model_type -> class name). Our classes are registered with the Auto classes through
    their ``_extra_content``, which those dicts do not show: give the mixin module copies that also
    hold our registry's heads (transformers' own dicts are left untouched)."""
    by_auto = {
        "AutoModel": "MODEL_MAPPING_NAMES",
        "AutoModelForPreTraining": "MODEL_FOR_PRETRAINING_MAPPING_NAMES",
        "AutoModelForMaskedLM": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
        "AutoModelForCausalLM": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
        "AutoModelForSeq2SeqLM": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
        "AutoModelForNextSentencePrediction": "MODEL_FOR_NEXT_SENTENCE_PREDICTION_MAPPING_NAMES",
        "AutoModelForSequenceClassification": "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
        "AutoModelForTokenClassification": "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES",
        "AutoModelForQuestionAnswering": "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES",
        "AutoModelForMultipleChoice": "MODEL_FOR_MULTIPLE_CHOICE_MAPPING_NAMES",
        "AutoModelForImageClassification": "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES",
        "AutoModelForMaskedImageModeling": "MODEL_FOR_MASKED_IMAGE_MODELING_MAPPING_NAMES",
    }
    ours: dict[str, dict[str, list[str]]] = {}
    for spec in SPECS.values():
        for head, cls in spec.classes.items():
            auto = HEAD_AUTO_CLASSES.get("Model" if head == "EncoderModel" else head)  # bare models
            if auto is not None and auto.__name__ in by_auto:
                ours.setdefault(by_auto[auto.__name__], {}).setdefault(spec.config_class.model_type, []).append(
                    cls.__name__
                )
    for dict_name, extra in ours.items():
        if hasattr(common, dict_name):
            setattr(common, dict_name, {**getattr(common, dict_name), **{key: tuple(v) for key, v in extra.items()}})


_teach_mappings()
ModelTesterMixin = common.ModelTesterMixin
GenerationTesterMixin = generation.GenerationTesterMixin
ConfigTester = config_common.ConfigTester

TINY = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    vocab_size=99,
    max_position_embeddings=64,
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
)
# Special tokens inside the tiny vocabulary (the named configs' real ids lie beyond 99).
TOKENS = dict(pad_token_id=0, eos_token_id=1, bos_token_id=2, decoder_start_token_id=0)

# Our deliberate differences from transformers (each in docs/transformers_tests.md), by test name.
RAISES_VALUE_ERROR = (
    "Shape mismatches raise ValueError naming the problem, not RuntimeError (docs/transformers_tests.md)"
)
TOO_FEW_WEIGHTS = (
    "A checkpoint supplying too few of a model's weights is refused, not randomly "
    "initialised (docs/transformers_tests.md)"
)
OWN_KEY_FORMAT = (
    "save_pretrained writes our own key format; there is no reverse mapping to "
    "transformers' names (docs/transformers_tests.md)"
)
PADDING_ZEROS = (
    "The padding-free path leaves zeros at padding positions, where transformers "
    "computes values nobody reads (docs/transformers_tests.md)"
)


# The tests each deliberate difference skips, in every family (docs/transformers_tests.md).
DIFFERENCES = {
    "test_load_with_mismatched_shapes": RAISES_VALUE_ERROR,
    "test_can_load_ignoring_mismatched_shapes": RAISES_VALUE_ERROR,
    "test_model_weights_reload_no_missing_tied_weights": TOO_FEW_WEIGHTS,
    "test_reverse_loading_mapping": OWN_KEY_FORMAT,
}


def skip_differences(cls: type, differences: dict[str, str] = DIFFERENCES) -> type:
    """Replace each named test of ``cls`` by an explicit skip carrying its reason."""
    for name, reason in differences.items():
        if not hasattr(cls, name):
            raise ValueError(f"{cls.__name__} has no test {name!r} to skip (renamed upstream?)")

        def skipped(self, reason=reason):
            self.skipTest(reason)

        skipped.__name__ = name
        setattr(cls, name, skipped)
    return cls


# Failures found by these tests and not fixed yet (docs/transformers_tests.md, "Open"): expected to
# fail, strictly (a pass reports an unexpected success), so fixing one forces removing it here.
# None is open at present; the helper stays for the next one found.


def expect_open_failures(cls: type, failures: dict[str, str]) -> type:
    """Mark each named test of ``cls`` as an expected (strict) failure, its reason in the docstring."""
    for name, reason in failures.items():
        test = getattr(cls, name, None)
        if test is None:
            raise ValueError(f"{cls.__name__} has no test {name!r}")

        def wrapped(self, test=test):
            return test(self)

        wrapped.__name__, wrapped.__doc__ = name, reason
        setattr(cls, name, unittest.expectedFailure(wrapped))
    return cls


def named_config(name: str, spec: str, **overrides):
    """Our named config ``name`` (modeling_configs/<name>; None: the class defaults) at the tiny
    sizes, plus ``overrides``."""
    written = (
        json.loads((named_config_path(name) / "config.json").read_text())
        if name
        else {key: value for key, value in SPECS[spec].config_class().to_dict().items() if key in TINY or key in TOKENS}
    )
    values = {key: value for key, value in written.items() if key != "model_type"}
    values.update(
        {
            key: value
            for key, value in TINY.items()
            if key in written or key in ("hidden_size", "num_hidden_layers", "num_attention_heads")
        }
    )
    values.update({key: value for key, value in TOKENS.items() if values.get(key) is not None})
    values.update(overrides)
    return SPECS[spec].config_class(**values)


class TinyModelTester:
    """What transformers' ``XModelTester`` provides the mixins, for one of our families.

    ``config_fn`` builds the config; ``inputs_fn(tester, config)`` the common inputs (defaults:
    token ids with a right-padded second row).
    """

    def __init__(
        self,
        parent,
        config_fn,
        inputs_fn=None,
        batch_size: int = 3,
        seq_length: int = 7,
        is_training: bool = True,
        num_choices: int = 2,
        **attributes,
    ) -> None:
        self.parent = parent
        self.config_fn, self.inputs_fn = config_fn, inputs_fn or token_inputs
        self.batch_size, self.seq_length, self.is_training = batch_size, seq_length, is_training
        self.num_choices = num_choices
        config = config_fn()
        self.hidden_size = config.hidden_size
        self.num_hidden_layers = config.num_hidden_layers
        self.num_attention_heads = config.num_attention_heads
        self.vocab_size = getattr(config, "vocab_size", None)
        self.encoder_seq_length = seq_length
        for key, value in attributes.items():
            setattr(self, key, value)

    def get_config(self):
        return self.config_fn()

    def prepare_config_and_inputs_for_common(self):
        config = self.get_config()
        return config, self.inputs_fn(self, config)


def token_inputs(tester: TinyModelTester, config, decoder: bool = False, eos: bool = False) -> dict:
    """(batch, seq) token ids in [3, vocab) with the second row right-padded by two positions;
    ``eos``: each row's last real token is ``config.eos_token_id`` (T5's sequence classifier reads
    it, as transformers' T5 tester provides); ``decoder``: decoder inputs of the same length."""
    ids = torch.randint(3, config.vocab_size, (tester.batch_size, tester.seq_length))
    mask = torch.ones_like(ids)
    mask[1, -2:] = 0
    if eos:
        ids[torch.arange(tester.batch_size), mask.sum(1) - 1] = config.eos_token_id
    ids = ids.masked_fill(mask == 0, config.pad_token_id if config.pad_token_id is not None else 0)
    inputs = {"input_ids": ids, "attention_mask": mask}
    if decoder:
        inputs["decoder_input_ids"] = torch.randint(3, config.vocab_size, (tester.batch_size, tester.seq_length))
        inputs["decoder_attention_mask"] = torch.ones_like(inputs["decoder_input_ids"])
    return inputs


class TinyLabels:
    """Labels for our heads whose class names transformers' label mapping does not know
    (``GPTLMHeadModel`` vs its ``GPT2LMHeadModel``), as transformers' family testers add them in
    their own ``_prepare_for_class``. ``extra_labels``: class name -> callable(tester, inputs) -> dict."""

    extra_labels: dict = {}

    def _prepare_for_class(self, inputs_dict, model_class, return_labels=False):
        inputs = super()._prepare_for_class(inputs_dict, model_class, return_labels=return_labels)
        if return_labels and model_class.__name__ in self.extra_labels:
            inputs.update(self.extra_labels[model_class.__name__](self.model_tester, inputs))
        return inputs


def token_labels(tester, inputs) -> dict:
    return {"labels": torch.zeros(tester.batch_size, tester.seq_length, dtype=torch.long)}


def class_labels(tester, inputs) -> dict:
    return {"labels": torch.zeros(tester.batch_size, dtype=torch.long)}


def span_labels(tester, inputs) -> dict:
    zeros = torch.zeros(tester.batch_size, dtype=torch.long)
    return {"start_positions": zeros, "end_positions": zeros.clone()}


def pretraining_labels(second: str | None = None):
    """Labels for a ``ForPreTraining`` head: MLM / RTD targets (B, T), plus the (B,) sentence-level
    label named ``second`` (BERT's next_sentence_label, ALBERT's sentence_order_label)."""

    def labels(tester, inputs) -> dict:
        out = token_labels(tester, inputs)
        if second:
            out[second] = torch.zeros(tester.batch_size, dtype=torch.long)
        return out

    return labels


def family_test(
    name: str,
    spec: str,
    named: str,
    config_kwargs: dict,
    extra_labels: dict | None = None,
    inputs_fn=None,
    classes: tuple | None = None,
    generates: bool = False,
    **config_overrides,
) -> type:
    """A transformers-style ``XModelTest`` class for one of our families (ConfigTester +
    ModelTesterMixin, + GenerationTesterMixin when ``generates``), with the deliberate differences
    skipped by name."""
    model_classes = classes or tuple(dict.fromkeys(SPECS[spec].classes.values()))  # a class may serve two heads
    bases = (TinyLabels, ConfigTests, ModelTesterMixin) + (
        (GenerationMixinPresent, GenerationTesterMixin) if generates else ()
    )

    def setUp(self):
        self.model_tester = TinyModelTester(self, lambda: named_config(named, spec, **config_overrides), inputs_fn)

    body = dict(
        all_model_classes=model_classes,
        config_class=SPECS[spec].config_class,
        config_kwargs=config_kwargs,
        extra_labels=extra_labels or {},
        setUp=setUp,
    )
    cls = type(name, bases + (unittest.TestCase,), body)
    return skip_differences(cls)


class ConfigTests:
    """``ConfigTester.run_common_tests`` as named tests; the check needing the repository-only
    ``config_common_kwargs`` skips by name when only a stand-in is there."""

    config_class: type
    config_kwargs: dict = {}

    def _config_tester(self):
        return ConfigTester(
            self,
            config_class=self.config_class,
            has_text_modality=getattr(self, "config_has_text_modality", True),
            **self.config_kwargs,
        )

    def test_config(self):
        tester = self._config_tester()
        for check in (
            "create_and_test_config_common_properties",
            "create_and_test_config_to_json_string",
            "create_and_test_config_to_json_file",
            "create_and_test_config_from_and_save_pretrained",
            "create_and_test_config_from_and_save_pretrained_subfolder",
            "create_and_test_config_from_and_save_pretrained_composite",
            "create_and_test_config_with_num_labels",
            "create_and_test_config_from_pretrained_custom_kwargs",
            "check_config_can_be_init_without_params",
        ):
            getattr(tester, check)()

    def test_config_arguments_init(self):
        upstream.require_repo_file(self, "utils/test_configuration_utils.py")
        self._config_tester().check_config_arguments_init()


class GenerationMixinPresent:
    """A named test that skips, with the reason, when transformers' generation mixin is a stand-in
    (its tests then do not exist in the class: this says so in the report)."""

    def test_transformers_generation_mixin_available(self):
        upstream.require_repo_file(self, "generation/test_utils.py")
        self.assertTrue(any(name.startswith("test_greedy") for name in dir(GenerationTesterMixin)))


__all__ = [
    "pretraining_labels",
    "family_test",
    "DIFFERENCES",
    "expect_open_failures",
    "TinyLabels",
    "token_labels",
    "class_labels",
    "span_labels",
    "ModelTesterMixin",
    "GenerationTesterMixin",
    "ConfigTester",
    "TinyModelTester",
    "ConfigTests",
    "GenerationMixinPresent",
    "named_config",
    "token_inputs",
    "skip_differences",
    "unittest",
]
