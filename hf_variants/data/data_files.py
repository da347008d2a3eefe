"""Users' local data files, checked before ``datasets`` reads them, with every problem named by
file and line.

``datasets``' csv and json loaders fail on a bad byte or a broken line with an error from deep
inside pandas or pyarrow (``DatasetGenerationError``, ``StopIteration`` on an empty file) that
names neither, and they *accept* rows that break the scripts later: a JSON line missing a key, or
a csv row with a field too few, becomes a ``None`` that reaches the tokenizer. So a file is read
once here first (:func:`scan_data_file`): it must be UTF-8, non-empty, and every row must parse
and carry the same fields as the first. The line each row starts on is kept, keyed by the loaded
dataset's fingerprint, so later checks (:func:`check_text_columns`, label checks) name the file
and line of a bad value through :func:`row_location`.

Public API: :func:`load_data_file`, :func:`scan_data_file`, :func:`row_location`,
:func:`keep_row_origin`, :func:`check_text_columns`, :class:`RowOrigin`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets

# Suffix -> (datasets loader, csv delimiter or None for json).
LOADERS: dict[str, tuple[str, str | None]] = {
    ".csv": ("csv", ","),
    ".tsv": ("csv", "\t"),
    ".json": ("json", None),
    ".jsonl": ("json", None),
}


@dataclass(frozen=True)
class RowOrigin:
    """Where the rows of a dataset loaded from one file come from."""

    path: str
    lines: tuple[int, ...]  # the 1-based line each row starts on, in row order
    unit: str = "line"  # "line", or "element" for a file holding one JSON array (no line per row)

    def describe(self, row: int) -> str:
        if 0 <= row < len(self.lines):
            return f"{self.path}, {self.unit} {self.lines[row]}"
        return f"{self.path}, row {row}"


# dataset fingerprint -> the origin of its rows. Fingerprints identify a dataset's content and
# history (datasets' own cache key), and survive being passed around; a transform that keeps row
# order (a prefix selection) is registered with keep_row_origin.
_ORIGINS: dict[str, RowOrigin] = {}


def read_utf8_text(path: str | Path) -> str:
    """The file's text; ValueError naming the line and column of the first byte that is not UTF-8,
    or saying the file is missing or empty."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        raise ValueError(
            f"{path}, line {line}: not UTF-8 text (byte 0x{raw[error.start]:02x} at column {column}); "
            "re-save the file as UTF-8"
        ) from None
    if not text.strip():
        raise ValueError(f"{path}: the file is empty (no rows)")
    return text.removeprefix("\ufeff")  # a byte-order mark is UTF-8, just not data


def _scan_csv(path: Path, text: str, delimiter: str) -> RowOrigin:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    lines, header, previous_end = [], None, 0
    try:
        for fields in reader:
            start, previous_end = previous_end + 1, reader.line_num
            if not fields:  # a blank line: skipped, as datasets (pandas) does
                continue
            if header is None:
                header = fields
                continue
            if len(fields) != len(header):
                raise ValueError(
                    f"{path}, line {start}: {len(fields)} fields, but the header (line 1) has {len(header)}: {header}"
                    + (
                        " (a text with a comma must be quoted)"
                        if len(fields) > len(header) and delimiter == ","
                        else ""
                    )
                )
            lines.append(start)
    except csv.Error as error:
        raise ValueError(f"{path}, line {reader.line_num}: malformed csv ({error})") from None
    if not lines:
        raise ValueError(f"{path}: a header {header} but no rows")
    return RowOrigin(str(path), tuple(lines))


def _scan_json(path: Path, text: str) -> RowOrigin:
    """A JSON array of objects, or JSON lines (one object per line; what ``datasets`` reads)."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{path}, line {error.lineno}: malformed JSON ({error.msg}, column {error.colno})"
            ) from None
        described = [(index + 1, row) for index, row in enumerate(rows)]
        unit = "element"
    else:
        described, unit = [], "line"
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                described.append((number, json.loads(line)))
            except json.JSONDecodeError as error:
                raise ValueError(
                    f"{path}, line {number}: malformed JSON ({error.msg}, column {error.colno}); expected one JSON object "
                    "per line"
                ) from None
    if not described:
        raise ValueError(f"{path}: the file is empty (no rows)")
    first_number, first = described[0]
    for number, row in described:
        if not isinstance(row, dict):
            raise ValueError(f"{path}, {unit} {number}: expected a JSON object (one row), got {type(row).__name__}")
        missing, extra = sorted(set(first) - set(row)), sorted(set(row) - set(first))
        if missing or extra:
            raise ValueError(
                f"{path}, {unit} {number}: keys {sorted(row)} differ from the first row's ({unit} {first_number}: "
                f"{sorted(first)}): "
                + "; ".join(
                    p for p in (f"missing {missing}" if missing else "", f"extra {extra}" if extra else "") if p
                )
            )
    return RowOrigin(str(path), tuple(number for number, _ in described), unit)


def scan_data_file(path: str | Path) -> RowOrigin:
    """Read a csv/tsv/json/jsonl file once: UTF-8, not empty, every row well formed and with the
    first row's fields. Returns where each row starts; ValueError naming the file and line otherwise."""
    path = Path(path)
    if path.suffix not in LOADERS:
        raise ValueError(f"{path}: expected one of {sorted(LOADERS)} files")
    text = read_utf8_text(path)
    _, delimiter = LOADERS[path.suffix]
    return _scan_csv(path, text, delimiter) if delimiter else _scan_json(path, text)


def load_data_file(path: str | Path, split: str, cache_dir: str | None = None) -> datasets.Dataset:
    """One local file as a ``datasets.Dataset``, after :func:`scan_data_file`; its rows' lines are
    remembered for :func:`row_location`."""
    origin = scan_data_file(path)
    loader, delimiter = LOADERS[Path(path).suffix]
    dataset = datasets.load_dataset(
        loader,
        data_files={split: str(path)},
        split=split,
        cache_dir=cache_dir,
        **({"delimiter": delimiter} if delimiter else {}),
    )
    if len(dataset) != len(origin.lines):  # both read the same rows; if not, line numbers would lie
        origin = RowOrigin(origin.path, tuple(range(1, len(dataset) + 1)), "row")
    _ORIGINS[dataset._fingerprint] = origin
    return dataset


def keep_row_origin(source: datasets.Dataset, derived: datasets.Dataset) -> datasets.Dataset:
    """Register ``derived`` (the first rows of ``source``, in order) as coming from source's file."""
    origin = _ORIGINS.get(source._fingerprint)
    if origin is not None:
        _ORIGINS[derived._fingerprint] = origin
    return derived


def row_location(dataset: datasets.Dataset, row: int) -> str:
    """ "<file>, line N" for a row of a dataset loaded by :func:`load_data_file`, else "row N"."""
    origin = _ORIGINS.get(dataset._fingerprint)
    return origin.describe(row) if origin is not None else f"row {row}"


def _is_text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _is_word_list(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(word, str) for word in value)


def check_text_columns(
    dataset: datasets.Dataset, columns: Iterable[str | None], purpose: str, *, split_into_words: bool = False
) -> None:
    """Every value of each text column is a non-empty string (``split_into_words``: a non-empty
    list of strings, e.g. NER tokens). ValueError naming the file and line (or row) of the first
    bad values, their count, and what was found."""
    check = _is_word_list if split_into_words else _is_text
    expected = "a non-empty list of words" if split_into_words else "a non-empty text"
    for column in (c for c in columns if c is not None):
        values = dataset[column]
        bad = [row for row, value in enumerate(values) if not check(value)]
        if bad:
            shown = "; ".join(
                f"{where}: {values[row]!r}"[:200] for row, where in zip(bad[:3], describe_rows(dataset, bad[:3]))
            )
            more = f" (and {len(bad) - 3} more rows)" if len(bad) > 3 else ""
            raise ValueError(f"{purpose}: column {column!r} must hold {expected} in every row; {shown}{more}")


def describe_rows(dataset: datasets.Dataset, rows: Sequence[int]) -> list[str]:
    """:func:`row_location` of each row, with its ``id`` when the data has an id column."""
    has_id = "id" in dataset.column_names
    return [
        f"{row_location(dataset, int(row))}" + (f" (id {dataset[int(row)]['id']!r})" if has_id else "") for row in rows
    ]


def check_image_column(dataset: datasets.Dataset, column: str, purpose: str) -> None:
    """Every image of an ``Image`` column opens and decodes (a truncated or corrupt file, or a file
    that is no image, would otherwise fail inside PIL in the middle of training). ValueError naming
    the image file (or the row) of the first bad ones. Columns of other types are left to the
    script's own conversion."""
    import PIL.Image

    if not isinstance(dataset.features[column], datasets.Image):
        return
    raw = dataset.cast_column(column, datasets.Image(decode=False))[column]
    bad = []
    for row, value in enumerate(raw):
        source = None if value is None else (io.BytesIO(value["bytes"]) if value.get("bytes") else value.get("path"))
        try:
            if source is None:
                raise ValueError("no image")
            with PIL.Image.open(source) as image:
                image.load()  # decodes every byte: a truncated file fails here, not in training
        except Exception as error:  # noqa: BLE001  (PIL raises many types; each is reported, not hidden)
            where = (value or {}).get("path") or row_location(dataset, row)
            bad.append(f"{where}: {type(error).__name__}: {error}"[:300])
    if bad:
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        raise ValueError(
            f"{purpose}: {len(bad)} images in column {column!r} cannot be read: " + "; ".join(bad[:3]) + more
        )
