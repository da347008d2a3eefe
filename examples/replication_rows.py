"""The replication study's rows as data (issue #33): each lecture claim, the paper and table it comes
from, its arms (a variant's mini plus the training script's flags), what is measured and which way
the claim says the numbers go. `examples/replicate.py` runs the rows and builds docs/replication.md.

Every flag and config field an arm uses exists today in `examples/run_pretraining.py` /
`examples/run_clm.py` and the variants' configs (`--config_overrides` fields); a row that needed
something missing would carry `not_runnable` instead of a stand-in.
"""

from __future__ import annotations

from dataclasses import dataclass

# Measurements. "held_out_mlm_loss": run_pretraining's held-out masked-LM loss (fixed masks, at
# the rate the row's arms share; lower is better). "clm_perplexity": run_clm's held-out perplexity
# with the arm's memory (lower is better). Harness tasks (examples/evaluate_pretraining.py, test
# split, higher is better): "pos", "sentiment", "ner", "qa", and the frozen-feature probes
# "probe_pos", "probe_sentiment" (from its "probe" task).
LOWER_IS_BETTER = {"held_out_mlm_loss": True, "clm_perplexity": True}
HARNESS_MEASURES = {"pos": "pos", "sentiment": "sentiment", "ner": "ner", "qa": "qa",
                    "probe_pos": "probe", "probe_sentiment": "probe"}  # measure -> the harness task giving it
MEASURES = tuple(LOWER_IS_BETTER) + tuple(HARNESS_MEASURES)
BUDGETS = ("minutes", "flops", "steps")  # what the arms of a row are held equal on
RELATIONS = ("better", "at_least", "equal")


@dataclass(frozen=True)
class Arm:
    """One arm of a row.

    Attributes:
        name: file-name-safe label (the JSON is `<row>/<name>-seed<k>.json`).
        model: a `modeling_configs/` name trained from scratch.
        argv: the training script's flags beyond the shared ones (objective, masking, ...).
        config_overrides: `--config_overrides` fields (architecture ablations).
        script: "run_pretraining" or "run_clm" (Transformer-XL's segment recurrence).
        step_rate: this arm's steps per minute as a fraction of a mini's, where it differs from its
            row's (an equal-minutes arm that is slower per step gets a schedule it can finish).
    """

    name: str
    model: str
    argv: tuple[str, ...] = ()
    config_overrides: tuple[tuple[str, object], ...] = ()
    script: str = "run_pretraining"
    step_rate: float | None = None


@dataclass(frozen=True)
class Prediction:
    """What the claim says about two arms: `first` is better than `second` ("better"), not worse
    ("at_least": matches or beats), or the two are the same ("equal")."""

    first: str
    relation: str
    second: str


@dataclass(frozen=True)
class Row:
    """One claim and the arms that test it.

    Attributes:
        name: `--rows` name and folder under docs/replication/.
        claim: the lecture's claim in one sentence.
        source: the paper and table.
        arms: the arms, each run with every seed.
        predictions: the claim's predictions between arms (the verdicts are computed for these).
        measures: what is measured, the first being the row's main one.
        budget: what the arms are held equal on: "minutes" (each arm's --max_time, the schedule
            over arm_minutes x steps_per_minute steps), "flops" (--flop_budget from the minutes,
            --max_time as a cap) or "steps" (the same --max_steps; the paper compares at equal steps).
        note: why the arms are set up this way (shown in the report).
        step_rate: the row's slowest arm's steps per minute as a fraction of a mini's (32 x 128, one
            thread): "minutes" and "steps" rows schedule arm_minutes x steps_per_minute x step_rate
            steps, so the slowest arm can finish them in its minutes.
        not_runnable: what is missing, when the row cannot run yet.
    """

    name: str
    claim: str
    source: str
    arms: tuple[Arm, ...]
    predictions: tuple[Prediction, ...]
    measures: tuple[str, ...]
    budget: str = "minutes"
    note: str = ""
    step_rate: float = 1.0
    not_runnable: str | None = None

    def arm(self, name: str) -> Arm:
        for arm in self.arms:
            if arm.name == name:
                return arm
        raise ValueError(f"row {self.name!r} has no arm {name!r}; arms: {[a.name for a in self.arms]}")

    def check(self) -> None:
        """A ValueError for a row that names an unknown arm, measure, budget or relation."""
        names = [arm.name for arm in self.arms]
        if len(set(names)) != len(names):
            raise ValueError(f"row {self.name!r}: duplicate arm names {names}")
        for prediction in self.predictions:
            self.arm(prediction.first), self.arm(prediction.second)
            if prediction.relation not in RELATIONS:
                raise ValueError(f"row {self.name!r}: relation {prediction.relation!r} is not one of {RELATIONS}")
        unknown = [m for m in self.measures if m not in MEASURES]
        if unknown or not self.measures:
            raise ValueError(f"row {self.name!r}: unknown measures {unknown}; known: {MEASURES}")
        if self.budget not in BUDGETS:
            raise ValueError(f"row {self.name!r}: budget {self.budget!r} is not one of {BUDGETS}")
        for rate in [self.step_rate] + [arm.step_rate for arm in self.arms if arm.step_rate is not None]:
            if not 0 < rate <= 1:
                raise ValueError(f"row {self.name!r}: step_rate must be in (0, 1], got {rate}")
        if any(arm.script not in ("run_pretraining", "run_clm") for arm in self.arms):
            raise ValueError(f"row {self.name!r}: an arm's script is neither run_pretraining nor run_clm")


MLM = ("--objective", "mlm")
EVAL_15 = ("--eval_mlm_probability", "0.15")  # rows that mask at other rates are scored at 15%
# Static vs dynamic masking differs only when rows repeat: 250 documents (~0.3 M tokens) make a
# 15-minute arm run several epochs, so each of the 3 static copies is seen several times, as each
# of BERT's 10 copies was seen 4 times in 40 epochs.
SMALL_CORPUS = ("--max_documents", "250")


def _albert(name: str, step_rate: float | None = None, **overrides) -> Arm:
    return Arm(name, "albert-mini", config_overrides=tuple(overrides.items()), step_rate=step_rate)


ROWS: tuple[Row, ...] = (
    Row("static-vs-dynamic-masking",
        "Masking each sequence anew every time it is seen (dynamic) is comparable to or slightly better than "
        "BERT's static masks drawn once per copy of the data.",
        "Liu et al. 2019 (RoBERTa), Table 1",
        (Arm("static", "roberta-mini", MLM + SMALL_CORPUS + ("--masking", "static", "--static_copies", "3")),
         Arm("dynamic", "roberta-mini", MLM + SMALL_CORPUS + ("--masking", "dynamic"))),
        (Prediction("dynamic", "at_least", "static"),),
        ("held_out_mlm_loss",),
        note="roberta-mini, 250 documents so the rows repeat (3 static copies) within the budget."),
    Row("nsp",
        "Removing the next-sentence-prediction loss matches or slightly improves downstream performance.",
        "Liu et al. 2019 (RoBERTa), Table 2 (against Devlin et al. 2019, Table 5)",
        (Arm("with-nsp", "bert-mini", ("--objective", "mlm+nsp", "--input_format", "segment-pair")),
         Arm("without-nsp", "bert-mini", ("--objective", "mlm+nsp", "--input_format", "segment-pair",
                                          "--second_task_weight", "0"))),
        (Prediction("without-nsp", "at_least", "with-nsp"),),
        ("pos", "sentiment", "held_out_mlm_loss"),
        note="The same segment-pair rows; without-nsp weighs the NSP loss 0 (MLM alone), so only the loss differs."),
    Row("input-formats",
        "Full-length inputs without NSP beat segment pairs with NSP, and single-document inputs (DOC-SENTENCES) "
        "do slightly better than inputs crossing documents (FULL-SENTENCES); sentence pairs are worst.",
        "Liu et al. 2019 (RoBERTa), Table 2",
        (Arm("segment-pair", "bert-mini", ("--objective", "mlm+nsp", "--input_format", "segment-pair")),
         Arm("sentence-pair", "bert-mini", ("--objective", "mlm+nsp", "--input_format", "sentence-pair")),
         Arm("full-sentences", "bert-mini", MLM + ("--input_format", "full-sentences")),
         Arm("doc-sentences", "bert-mini", MLM + ("--input_format", "doc-sentences"))),
        (Prediction("full-sentences", "better", "segment-pair"), Prediction("doc-sentences", "at_least", "full-sentences"),
         Prediction("segment-pair", "better", "sentence-pair")),
        ("pos", "sentiment"),
        note="bert-mini (its WordPiece tokenizer and segment embeddings) in every arm; held-out losses are on each "
             "format's own rows, so the harness tasks are the comparison."),
    Row("span-masking",
        "Masking contiguous random spans beats masking single tokens or whole words on span-level QA, and the span "
        "boundary objective (SBO) adds to it.",
        "Joshi et al. 2020 (SpanBERT), Tables 4 and 5",
        (Arm("token", "spanbert-mini", MLM),
         Arm("whole-word", "spanbert-mini", MLM + ("--whole_word_mask",)),
         Arm("span", "spanbert-mini", ("--objective", "span", "--second_task_weight", "0")),
         Arm("span-sbo", "spanbert-mini", ("--objective", "span"))),
        (Prediction("span", "better", "token"), Prediction("span", "better", "whole-word"),
         Prediction("span-sbo", "at_least", "span")),
        ("qa", "pos", "sentiment"),
        note="spanbert-mini (cased WordPiece) in every arm; SBO off = its loss weighted 0 on the same span masks."),
    Row("mlm-vs-rtd",
        "At equal pretraining compute, replaced token detection (ELECTRA) gives a better encoder than masked LM.",
        "Clark et al. 2020 (ELECTRA), Table 1 (ELECTRA-Small 79.9 vs BERT-Small 75.1 on GLUE dev)",
        (Arm("mlm", "bert-mini", MLM), Arm("rtd", "electra-mini", ("--objective", "rtd"))),
        (Prediction("rtd", "better", "mlm"),),
        ("pos", "sentiment", "probe_pos"),
        budget="flops",
        note="Equal FLOPs (FlopCounterMode, forward and backward, generator included); the same uncased WordPiece."),
    Row("electra-generator-size",
        "Generators a quarter to half the discriminator's width work best; a generator as large as the "
        "discriminator is worse.",
        "Clark et al. 2020 (ELECTRA), Figure 3 (left)",
        (Arm("gen-0.25", "electra-mini", ("--objective", "rtd"), (("generator_hidden_size", 0.25),)),
         Arm("gen-0.5", "electra-mini", ("--objective", "rtd"), (("generator_hidden_size", 0.5),)),
         Arm("gen-1.0", "electra-mini", ("--objective", "rtd"), (("generator_hidden_size", 1.0),))),
        (Prediction("gen-0.25", "better", "gen-1.0"), Prediction("gen-0.5", "better", "gen-1.0")),
        ("pos", "probe_pos"),
        budget="steps",
        step_rate=0.5,
        note="Equal steps, as the paper's figure; the full-width generator about doubles a step's FLOPs, so the "
             "steps are half a mini's rate."),
    Row("albert-sharing",
        "At the same width (equal compute), sharing all layers costs some accuracy; most of the loss comes from "
        "sharing the FFN, while sharing attention costs little.",
        "Lan et al. 2020 (ALBERT), Table 4 (E = 128)",
        tuple(_albert(mode, layer_sharing=mode) for mode in ("none", "attention", "ffn", "all")),
        (Prediction("none", "better", "all"), Prediction("attention", "better", "ffn"),
         Prediction("attention", "at_least", "none")),
        ("held_out_mlm_loss", "pos")),
    Row("albert-embedding-size",
        "With all layers shared, a small factorized embedding (E = 128) is best; larger E does not help.",
        "Lan et al. 2020 (ALBERT), Table 3",
        tuple(_albert(f"E-{size}", hidden_size=256, embedding_size=size) for size in (64, 128, 256)),
        (Prediction("E-128", "at_least", "E-256"), Prediction("E-128", "at_least", "E-64")),
        ("held_out_mlm_loss", "pos"),
        note="albert-mini (H = 256, stated in the arms so that --quick keeps it; all shared); E = 256 = H is the "
             "unfactorized width."),
    Row("albert-equal-parameters",
        "At (about) equal parameters, a wider all-shared model beats a narrower unshared one trained for the same "
        "time.",
        "Lan et al. 2020 (ALBERT), Table 2 and its same-training-time comparison of ALBERT-xxlarge with BERT-large",
        (_albert("unshared-H256", layer_sharing="none"),
         _albert("shared-H512", step_rate=0.3, layer_sharing="all", hidden_size=512, intermediate_size=2048,
                 num_attention_heads=8)),
        (Prediction("shared-H512", "better", "unshared-H256"),),
        ("held_out_mlm_loss", "pos"),
        note="Encoder parameters: 4 unshared layers of H = 256 (3.2 M) vs one shared layer of H = 512 (3.2 M); the "
             "shared one costs about 3.5x the FLOPs per step, so equal minutes give it fewer steps (as in the paper), "
             "and its schedule is sized for 0.3 of a mini's steps per minute."),
    Row("layer-norm-position",
        "Post-LN Transformers need learning-rate warm-up (without it they train worse or diverge); pre-LN trains "
        "well without warm-up.",
        "Xiong et al. 2020 (On Layer Normalization in the Transformer Architecture), sections 3-4",
        (Arm("post-ln-warmup", "bert-mini", MLM + ("--learning_rate", "1e-3")),
         Arm("post-ln-no-warmup", "bert-mini", MLM + ("--learning_rate", "1e-3", "--warmup_steps", "0")),
         Arm("pre-ln-warmup", "bert-mini", MLM + ("--learning_rate", "1e-3"), (("pre_layer_norm", True),)),
         Arm("pre-ln-no-warmup", "bert-mini", MLM + ("--learning_rate", "1e-3", "--warmup_steps", "0"),
             (("pre_layer_norm", True),))),
        (Prediction("post-ln-warmup", "better", "post-ln-no-warmup"),
         Prediction("pre-ln-no-warmup", "better", "post-ln-no-warmup"),
         Prediction("pre-ln-no-warmup", "at_least", "pre-ln-warmup")),
        ("held_out_mlm_loss",),
        note="Learning rate 1e-3 (twice the bert recipe's) so that warm-up matters; warm-up: the recipe's 5%."),
    Row("positions",
        "Learned and sinusoidal position embeddings give nearly identical results.",
        "Vaswani et al. 2017, Table 3 row (E)",
        (Arm("learned", "bert-mini", MLM),
         Arm("sinusoidal", "bert-mini", MLM, (("position_embedding_type", "sinusoidal"),))),
        (Prediction("sinusoidal", "equal", "learned"),),
        ("held_out_mlm_loss", "pos")),
    Row("masking-rate",
        "Masking 40% of the tokens pretrains as well as or better than BERT's 15%.",
        "Wettig et al. 2023 (Should You Mask 15% in Masked Language Modeling?), section 3",
        (Arm("mask-0.15", "roberta-mini", MLM + ("--mlm_probability", "0.15") + EVAL_15),
         Arm("mask-0.40", "roberta-mini", MLM + ("--mlm_probability", "0.4") + EVAL_15)),
        (Prediction("mask-0.40", "at_least", "mask-0.15"),),
        ("held_out_mlm_loss", "pos"),
        note="Both scored on the held-out set masked at 15%."),
    Row("transfo-xl-memory",
        "A longer recurrence memory lowers held-out perplexity on long documents.",
        "Dai et al. 2019 (Transformer-XL), the WikiText-103 ablation of recurrence and attention length",
        tuple(Arm(f"mem-{length}", "transfo-xl-mini", ("--max_seq_length", "64", "--mem_len", str(length),
                                                       "--eval_mem_lens", "0,64,256"), script="run_clm")
              for length in (0, 64, 256)),
        (Prediction("mem-64", "better", "mem-0"), Prediction("mem-256", "better", "mem-0")),
        ("clm_perplexity",),
        budget="steps",
        step_rate=0.4,
        note="Segments of 64 tokens, 16 streams, on the pretraining corpus (pages and chapters); each arm trains with "
             "its memory and is scored with it (its JSON also holds every arm scored with memory 0, 64 and 256). "
             "run_clm.py has no --max_time: the arms are held to equal steps (README: 0.65 steps/s at memory 64)."),
)

ROWS_BY_NAME: dict[str, Row] = {row.name: row for row in ROWS}
for _row in ROWS:
    _row.check()
