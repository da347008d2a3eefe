"""Task heads and their losses (classification, spans, MLM, sentence relation, language modelling).

Losses validate labels first so a wrong shape or an out-of-range class is a ValueError that
names the problem, not a CUDA assert or an IndexError from inside torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from transformers.activations import ACT2FN

from .cache import CACHE_FIELD
from .dropout import Dropout, make_dropout
from .inputs import check_not_empty, check_token_id
from .masks import gather_positions, summary_positions
from .tracing import is_tracing

IGNORE_INDEX = -100


# ----------------------------------------------------------------------------- label checks
def check_class_labels(labels: torch.Tensor, num_classes: int, name: str = "labels") -> None:
    """Class ids must be integers in [0, num_classes) or IGNORE_INDEX."""
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer class ids, got dtype {labels.dtype}")
    if is_tracing():  # the range check reads values: traced graphs (compile, export) leave it to eager calls
        return
    used = labels[labels != IGNORE_INDEX]
    if used.numel() and (int(used.min()) < 0 or int(used.max()) >= num_classes):
        bad = int(used.min()) if int(used.min()) < 0 else int(used.max())
        raise ValueError(f"{name} contains class {bad}, outside [0, {num_classes}) (use {IGNORE_INDEX} to ignore)")


def cross_entropy_or_zero(
    logits: torch.Tensor, labels: torch.Tensor, label_smoothing: float = 0.0, ignore_index: int = IGNORE_INDEX
) -> torch.Tensor:
    """Mean cross-entropy over the targets that are not ``ignore_index``. logits (N, C), labels (N,).

    A batch with no target at all (short texts that drew no masked token, a row of special tokens
    only) gives an exact 0 that still belongs to the graph, not the NaN of a mean over nothing,
    which would turn every weight into NaN at the next optimizer step. No data-dependent branch
    (torch.compile fullgraph traces it): ignored targets contribute 0 and the count is at least 1."""
    losses = F.cross_entropy(
        logits, labels, ignore_index=ignore_index, label_smoothing=label_smoothing, reduction="none"
    )
    return losses.sum() / (labels != ignore_index).sum().clamp(min=1)


def check_label_shape(labels: torch.Tensor, expected: tuple[int, ...], name: str = "labels") -> None:
    if tuple(labels.shape) != tuple(expected):
        raise ValueError(f"{name} has shape {tuple(labels.shape)}, expected {tuple(expected)}")


# ----------------------------------------------------------------------------- what a head reads
@dataclass(frozen=True)
class HeadReads:
    """What a head reads of the encoder's output (the one argument that says so), so that no more
    than that is computed on the fast path (``fast_path.py``). The plain path computes everything
    and returns the same selection (:meth:`select`).

    Attributes:
        summary_only: the head reads the summary token alone (``config.summary_type``):
            last_hidden_state is then (B, 1, H).
        positions: ((B, M) positions, (B, M) bool real-slot mask) the head reads (sparse MLM's
            masked tokens): last_hidden_state is (B, M, H) at those positions. None: every position.
        padding: the head reads states at padding positions (QA's softmax over all T; labels on
            padding), which only the padded layout computes.
    """

    summary_only: bool = False
    positions: tuple[torch.Tensor, torch.Tensor] | None = None
    padding: bool = False

    def select(self, sequence_output: torch.Tensor, summary: torch.Tensor | None) -> torch.Tensor:
        """The plain path's (B, T, H) output -> what the head reads: (B, M, H) at ``positions``,
        (B, 1, H) at the (B, 1) ``summary`` positions (None for "mean": unchanged), or unchanged."""
        if self.positions is not None:
            return gather_positions(sequence_output, self.positions[0])
        if self.summary_only and summary is not None:
            return gather_positions(sequence_output, summary)
        return sequence_output


# ----------------------------------------------------------------------------- heads
def summarize(hidden_states: torch.Tensor, summary_type: str, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """The (B, H) summary of (B, T, H) states. A (B, 1, H) input is the summary already (the
    backbone computed the last layer at the summary position only; with T = 1 every type agrees)."""
    if hidden_states.shape[1] == 1:
        return hidden_states[:, 0]
    batch, length = hidden_states.shape[:2]
    if summary_type == "mean":
        if attention_mask is None:
            return hidden_states.mean(dim=1)
        weights = attention_mask.to(hidden_states.dtype)[..., None]
        return (hidden_states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1)
    positions = summary_positions(summary_type, attention_mask, batch, length, hidden_states.device)
    return gather_positions(hidden_states, positions)[:, 0]


class Pooler(nn.Module):
    """BERT's pooler: tanh(W h_summary). (B, H) summary -> (B, H)."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)

    def forward(self, summary: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(summary))


class PredictionTransform(nn.Module):
    """dense -> activation -> LayerNorm, the transform before a vocabulary decoder. (..., H) -> (..., out)."""

    def __init__(self, hidden_size: int, out_size: int, activation: str, layer_norm_eps: float) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden_size, out_size)
        self.activation = ACT2FN[activation]
        self.layer_norm = nn.LayerNorm(out_size, eps=layer_norm_eps)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.layer_norm(self.activation(self.dense(hidden_states)))


class _DecoderProjection(torch.autograd.Function):
    """logits = x W^T + b, whose backward builds W's gradient as g^T x: a contiguous (V, E) tensor.

    ``nn.Linear``'s backward produces the transposed view of an (E, V) product instead. A decoder
    tied to the word embeddings receives a second (V, E) gradient from the embedding lookup, and
    autograd adds the two in place only if the first one is contiguous; otherwise it allocates a
    third V x E buffer (94 MB at BERT's vocabulary) and adds out of place, at the worst moment of
    the step (the end of backward, when all gradients exist). Same products, same result.
    """

    @staticmethod
    def forward(ctx, inputs: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        ctx.dtypes = (inputs.dtype, weight.dtype, None if bias is None else bias.dtype)
        device_type = inputs.device.type
        if torch.is_autocast_enabled(device_type):  # compute in the autocast dtype, as nn.Linear does
            dtype = torch.get_autocast_dtype(device_type)
            inputs, weight = inputs.to(dtype), weight.to(dtype)
            bias = None if bias is None else bias.to(dtype)
        ctx.save_for_backward(inputs, weight)
        ctx.has_bias = bias is not None
        return torch.addmm(bias, inputs, weight.t()) if bias is not None else inputs.mm(weight.t())

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        inputs, weight = ctx.saved_tensors
        input_dtype, weight_dtype, bias_dtype = ctx.dtypes
        grad = grad.to(inputs.dtype)
        # Gradients in each operand's own dtype (fp32 master weights under autocast).
        grad_inputs = grad.mm(weight).to(input_dtype) if ctx.needs_input_grad[0] else None
        grad_weight = grad.t().mm(inputs).to(weight_dtype) if ctx.needs_input_grad[1] else None
        grad_bias = grad.sum(0).to(bias_dtype) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return grad_inputs, grad_weight, grad_bias


# Decoding steps project a handful of rows onto the vocabulary. There, CPU BLAS's x W^T (what
# nn.Linear runs) takes 2-3x longer than the same product in another operand layout (measured
# with MKL, gpt2-mini's 50,257 x 256 head, 1-2 threads): one row multiplies a cached (E, V)
# contiguous copy of W, 2..DECODE_ROWS rows compute (W x^T)^T. Same products, same logits up to
# float summation order.
DECODE_ROWS = 16


class TiedDecoder(nn.Linear):
    """``nn.Linear`` (same parameters and state-dict names) for vocabulary decoders whose weight
    is tied to the word embeddings; see :class:`_DecoderProjection` for what differs.

    Without autograd (generation), a few rows on CPU take the faster layouts above; one row
    reads ``decode_weight()``, an (E, V) copy of the weight kept while the weight is unchanged
    (one more V x E tensor in memory during inference; rebuilt after any in-place update).

    Part of the speed plug-in: models build it through :func:`make_vocabulary_decoder`, with the
    switch (``config.padding_free``) on; with it off they build a plain ``nn.Linear``."""

    _decode_weight: tuple[tuple, torch.Tensor] | None = None

    def decode_weight(self) -> torch.Tensor:
        """(E, V) contiguous copy of the weight, rebuilt when the weight changes (its version counter)."""
        weight = self.weight
        key = (weight.data_ptr(), weight._version, weight.dtype, weight.device, tuple(weight.shape))
        if self._decode_weight is None or self._decode_weight[0] != key:
            self._decode_weight = (key, weight.detach().t().contiguous())
        return self._decode_weight[1]

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """(..., E) -> (..., V)."""
        flat = inputs.reshape(-1, inputs.shape[-1])
        rows = flat.shape[0]
        if (
            rows <= DECODE_ROWS
            and flat.device.type == "cpu"
            and not (torch.is_grad_enabled() and (flat.requires_grad or self.weight.requires_grad))
        ):
            logits = flat.mm(self.decode_weight()) if rows == 1 else self.weight.mm(flat.t()).t()
            if self.bias is not None:
                logits = logits + self.bias
            # (rows, V), transposed strides for 2+ rows: no copy here (generate() copies the last
            # position's logits anyway); a size-1 dimension reshapes as a view.
            return logits.reshape(*inputs.shape[:-1], self.out_features)
        self._decode_weight = None  # training: do not keep a stale copy alive
        return _DecoderProjection.apply(flat, self.weight, self.bias).view(*inputs.shape[:-1], self.out_features)


def make_vocabulary_decoder(
    in_features: int, out_features: int, bias: bool = True, cpu_kernel: bool = True
) -> nn.Linear:
    """A vocabulary decoder (E -> V, the weight tied to the word embeddings): :class:`TiedDecoder`
    with ``cpu_kernel`` (the speed plug-in's switch, ``config.padding_free``), else torch's
    ``nn.Linear``, as :func:`~hf_variants.modules.dropout.make_dropout` chooses the dropout. The
    same parameters under the same names (``weight`` (V, E), ``bias`` (V,)), so the state dict and
    the tying are unchanged, and the same logits up to float summation order. Chosen when the model
    is built: turning the switch off later changes the next forward's layout, not its decoder."""
    if cpu_kernel:
        return TiedDecoder(in_features, out_features, bias=bias)
    return nn.Linear(in_features, out_features, bias=bias)


class MaskedLMHead(nn.Module):
    """Transform + vocabulary decoder (weight tied to the word embeddings, own bias).

    Args:
        embedding_size: width of the word embeddings the decoder is tied to (E; = H unless factorized).
        transform: False for a decoder straight on the hidden states (XLM's prediction layer; needs E = H).
        cpu_kernel: the speed plug-in's decoder (:func:`make_vocabulary_decoder`; ``config.padding_free``).
    """

    def __init__(
        self,
        hidden_size: int,
        vocab_size: int,
        activation: str,
        layer_norm_eps: float,
        embedding_size: int | None = None,
        transform: bool = True,
        cpu_kernel: bool = True,
    ) -> None:
        super().__init__()
        embedding_size = embedding_size or hidden_size
        if not transform and embedding_size != hidden_size:
            raise ValueError(
                f"a decoder without transform needs embedding_size ({embedding_size}) == hidden_size ({hidden_size})"
            )
        self.transform = (
            PredictionTransform(hidden_size, embedding_size, activation, layer_norm_eps) if transform else None
        )
        self.decoder = make_vocabulary_decoder(embedding_size, vocab_size, cpu_kernel=cpu_kernel)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """(..., H) -> (..., V) logits."""
        return self.decoder(hidden_states if self.transform is None else self.transform(hidden_states))


def masked_lm_loss(
    head: MaskedLMHead, hidden_states: torch.Tensor, labels: torch.Tensor | None, vocab_size: int, sparse: bool
) -> tuple[torch.Tensor | None, torch.Tensor]:
    """MLM loss (mean over predicted positions) and logits.

    Args:
        hidden_states: (B, T, H).
        labels: (B, T) target ids, IGNORE_INDEX where nothing is predicted.
        sparse: compute vocabulary logits only where labels are set (returns (num_predicted, V)
            logits): identical loss, a fraction of the decoder FLOPs.
    Returns:
        (loss or None, logits (B, T, V) or (num_predicted, V) when sparse).
    """
    if labels is None:
        return None, head(hidden_states)
    check_label_shape(labels, hidden_states.shape[:-1])
    check_class_labels(labels, vocab_size)
    if sparse:
        selected = labels != IGNORE_INDEX
        logits = head(hidden_states[selected])
        return cross_entropy_or_zero(logits, labels[selected]), logits
    logits = head(hidden_states)
    return cross_entropy_or_zero(logits.view(-1, vocab_size), labels.reshape(-1)), logits


class PooledClassifier(nn.Module):
    """BERT's sequence classifier: dropout + linear on the pooled summary. Reads ``pooled`` (B, H)."""

    def __init__(self, hidden_size: int, num_labels: int, dropout: float, cpu_dropout: bool = True) -> None:
        """``cpu_dropout``: the speed plug-in's dropout kernel (``config.padding_free``; see dropout.py)."""
        super().__init__()
        self.dropout = make_dropout(dropout, cpu_dropout)
        self.out_proj = nn.Linear(hidden_size, num_labels)

    def forward(self, summary: torch.Tensor, pooled: torch.Tensor | None) -> torch.Tensor:
        return self.out_proj(self.dropout(pooled))


class SummaryClassifier(nn.Module):
    """RoBERTa/ELECTRA's classifier: dropout, dense, activation, dropout, linear on the summary
    token (no pooler). Reads ``summary`` (B, H).

    ``input_dropout``: the first dropout's probability when it differs from the second (ELECTRA's
    multiple-choice summary has none before its dense layer); None -> ``dropout``.
    """

    def __init__(
        self,
        hidden_size: int,
        num_labels: int,
        dropout: float,
        activation: str = "tanh",
        input_dropout: float | None = None,
        cpu_dropout: bool = True,
    ) -> None:
        super().__init__()
        self.dropout = make_dropout(dropout, cpu_dropout)
        self.input_dropout = self.dropout if input_dropout is None else make_dropout(input_dropout, cpu_dropout)
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = ACT2FN[activation]
        self.out_proj = nn.Linear(hidden_size, num_labels)

    def forward(self, summary: torch.Tensor, pooled: torch.Tensor | None) -> torch.Tensor:
        hidden = self.activation(self.dense(self.input_dropout(summary)))
        return self.out_proj(self.dropout(hidden))


class SequenceSummary(nn.Module):
    """transformers' ``SequenceSummary`` (XLM, XLNet, GPT double heads) on the summary vector:
    dropout -> projection (to ``num_labels``, or to H when ``proj_to_labels`` is False; none
    without ``use_proj``) -> activation -> dropout. Reads ``summary`` (B, H); returns (B, num_labels)
    or (B, H). Which token summarises (first, last, mean) is the config's ``summary_type``.
    """

    def __init__(
        self,
        hidden_size: int,
        num_labels: int,
        use_proj: bool = True,
        proj_to_labels: bool = True,
        activation: str | None = None,
        first_dropout: float = 0.0,
        last_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.first_dropout = Dropout(first_dropout)
        self.output_size = num_labels if use_proj and proj_to_labels and num_labels > 0 else hidden_size
        self.summary = nn.Linear(hidden_size, self.output_size) if use_proj else nn.Identity()
        # transformers: "tanh" (or any ACT2FN name) activates; None adds no activation.
        self.activation = ACT2FN[activation] if activation else nn.Identity()
        self.last_dropout = Dropout(last_dropout)

    def forward(self, summary: torch.Tensor, pooled: torch.Tensor | None = None) -> torch.Tensor:
        return self.last_dropout(self.activation(self.summary(self.first_dropout(summary))))


# ----------------------------------------------------------------------------- losses
def infer_problem_type(config, labels: torch.Tensor) -> str:
    """transformers' rule: regression when num_labels == 1, single-label for integer labels, else multi-label."""
    if config.problem_type is None:
        if config.num_labels == 1:
            config.problem_type = "regression"
        elif labels.dtype in (torch.long, torch.int, torch.int16, torch.int8, torch.uint8):
            config.problem_type = "single_label_classification"
        else:
            config.problem_type = "multi_label_classification"
    return config.problem_type


def sequence_classification_loss(config, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """logits (B, num_labels); labels (B,) class ids, (B,) or (B, 1) regression targets, or (B, num_labels) multi-hot."""
    num_labels = config.num_labels
    batch = logits.shape[0]
    problem_type = infer_problem_type(config, labels)
    if problem_type == "regression":
        if labels.numel() != batch * num_labels:
            raise ValueError(
                f"regression labels have shape {tuple(labels.shape)}, expected ({batch},) or ({batch}, {num_labels})"
            )
        return F.mse_loss(logits.reshape(-1), labels.reshape(-1).to(logits.dtype))
    if problem_type == "single_label_classification":
        check_label_shape(labels.view(-1), (batch,))
        check_class_labels(labels, num_labels)
        return F.cross_entropy(logits.view(-1, num_labels), labels.view(-1))
    if problem_type == "multi_label_classification":
        check_label_shape(labels, (batch, num_labels))
        return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
    raise ValueError(f"unknown problem_type {problem_type!r}")


def token_classification_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """logits (B, T, C); labels (B, T) with IGNORE_INDEX on sub-words and special tokens."""
    check_label_shape(labels, logits.shape[:-1])
    check_class_labels(labels, logits.shape[-1])
    return cross_entropy_or_zero(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def span_extraction_loss(
    start_logits: torch.Tensor, end_logits: torch.Tensor, start_positions: torch.Tensor, end_positions: torch.Tensor
) -> torch.Tensor:
    """(start CE + end CE) / 2. Logits (B, T); positions (B,). Positions outside the sequence are
    clamped to T and ignored, as transformers does for answers truncated away; a batch whose every
    answer is ignored has loss 0 (transformers: NaN)."""
    batch, length = start_logits.shape
    for name, positions in (("start_positions", start_positions), ("end_positions", end_positions)):
        if positions.numel() != batch:
            raise ValueError(f"{name} has shape {tuple(positions.shape)}, expected ({batch},)")
    start_positions = start_positions.view(-1).clamp(0, length)
    end_positions = end_positions.view(-1).clamp(0, length)
    start_loss = cross_entropy_or_zero(start_logits, start_positions, ignore_index=length)
    end_loss = cross_entropy_or_zero(end_logits, end_positions, ignore_index=length)
    return (start_loss + end_loss) / 2


def sentence_relation_loss(
    logits: torch.Tensor, labels: torch.Tensor, name: str = "next_sentence_label"
) -> torch.Tensor:
    """Two-way cross-entropy for a sentence-pair task: BERT's NSP (0 = B follows A, 1 = B is
    random) or ALBERT's SOP (0 = in order, 1 = swapped). logits (B, 2), labels (B,); ``name``: the
    label argument named in errors."""
    check_label_shape(labels.reshape(-1), (logits.shape[0],), name)
    check_class_labels(labels, 2, name)
    return nn.functional.cross_entropy(logits, labels.view(-1))


# ----------------------------------------------------------------------------- language-model losses
def causal_lm_loss(logits: torch.Tensor, labels: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    """Next-token cross-entropy: logits (B, T, V) at position t predict ``labels[:, t + 1]`` (B, T);
    IGNORE_INDEX (-100) targets are skipped. Mean over the predicted tokens, computed in float32."""
    check_label_shape(labels, logits.shape[:2])
    return lm_loss(logits[:, :-1], labels[:, 1:], label_smoothing)


def lm_loss(logits: torch.Tensor, labels: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    """Token cross-entropy without a shift: logits (B, T, V), labels (B, T) with IGNORE_INDEX skipped
    (no target at all, e.g. one-token rows after the causal shift: an exact 0, not NaN)."""
    check_label_shape(labels, logits.shape[:2])
    vocab_size = logits.shape[-1]
    check_class_labels(labels, vocab_size)
    return cross_entropy_or_zero(logits.reshape(-1, vocab_size).float(), labels.reshape(-1), label_smoothing)


def shift_tokens_right(
    labels: torch.Tensor, pad_token_id: int | None, decoder_start_token_id: int | None, vocab_size: int | None = None
) -> torch.Tensor:
    """Teacher-forcing decoder inputs from seq2seq labels: (B, T) -> (B, T), the start token first,
    then labels[:, :-1], with ignored targets (-100) replaced by the pad token. With ``vocab_size``
    the start id (and the pad id, when a target is ignored) must be ids of that vocabulary: the
    decoder would look them up (a ValueError naming the id, not an IndexError in the embedding)."""
    if vocab_size is not None:
        use = "decoder_input_ids are built from the labels with it"
        check_token_id("decoder_start_token_id", decoder_start_token_id, vocab_size, use)
        if bool((labels == IGNORE_INDEX).any()):  # ignored targets become padding inputs
            check_token_id("pad_token_id", pad_token_id, vocab_size, use)
    if decoder_start_token_id is None:
        raise ValueError("config.decoder_start_token_id must be set to build decoder_input_ids from labels")
    if pad_token_id is None:
        raise ValueError("config.pad_token_id must be set to build decoder_input_ids from labels")
    shifted = labels.new_empty(labels.shape)
    shifted[:, 1:] = labels[:, :-1]
    shifted[:, 0] = decoder_start_token_id
    return shifted.masked_fill(shifted == IGNORE_INDEX, pad_token_id)


def finish_seq2seq(output_cls: type, return_dict: bool | None, backbone_output, **fields):
    """A seq2seq head's output: its own ``fields`` (loss, logits ...) plus what every seq2seq output
    carries over from the encoder-decoder backbone's output (the cache, the decoder's and the
    encoder's states and attentions); a tuple when ``return_dict`` is False."""
    out = backbone_output
    output = output_cls(
        **fields,
        **{CACHE_FIELD: getattr(out, CACHE_FIELD)},  # under the installed transformers' name (cache.py)
        decoder_hidden_states=out.decoder_hidden_states,
        decoder_attentions=out.decoder_attentions,
        cross_attentions=out.cross_attentions,
        encoder_last_hidden_state=out.encoder_last_hidden_state,
        encoder_hidden_states=out.encoder_hidden_states,
        encoder_attentions=out.encoder_attentions,
    )
    return output if return_dict is not False else output.to_tuple()


# ----------------------------------------------------------------------------- task plumbing
def classifier_dropout(config) -> float:
    """The classifier heads' dropout: ``config.classifier_dropout``, else the hidden dropout."""
    return config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob


def refuse_next_sentence_label(kwargs: dict, variant: str) -> None:
    """For pretraining models without next sentence prediction (RoBERTa, SpanBERT, ELECTRA): a
    ``next_sentence_label`` in ``kwargs`` (a BERT collator's column) raises rather than being
    silently ignored; a None one is dropped."""
    if kwargs.pop("next_sentence_label", None) is not None:
        raise ValueError(
            f"{variant} is pretrained without next sentence prediction: drop next_sentence_label "
            "(BertForPreTraining is MLM + NSP)"
        )


def choice_count(input_ids: torch.Tensor | None, inputs_embeds: torch.Tensor | None) -> int:
    """C of multiple-choice inputs (B, C, T) (inputs_embeds (B, C, T, E)), checked before they are
    flattened to (B * C, T): a ValueError for fewer than 3 dimensions or an empty batch, choice or row
    ((B, C, 0) cannot be reshaped to (B * C, 0))."""
    reference = input_ids if input_ids is not None else inputs_embeds
    if reference is None or reference.dim() < 3:
        raise ValueError("multiple choice inputs must have shape (batch, num_choices, seq_len)")
    check_not_empty(
        "input_ids" if input_ids is not None else "inputs_embeds",
        tuple(reference.shape),
        reference.shape[0] * reference.shape[1],
        reference.shape[2],
    )
    return reference.shape[1]


def flatten_choices(tensor: torch.Tensor | None) -> torch.Tensor | None:
    """(B, C, T, ...) -> (B * C, T, ...); None stays None."""
    return None if tensor is None else tensor.reshape(-1, *tensor.shape[2:])


def multiple_choice_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over choices. logits (B, C); labels (B,) in [0, C)."""
    check_label_shape(labels.view(-1), (logits.shape[0],))
    check_class_labels(labels, logits.shape[1])
    return nn.functional.cross_entropy(logits, labels.view(-1))
