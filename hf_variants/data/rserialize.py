"""A reader for R's XDR serialization format and R lazy-load databases (``.rdx``/``.rdb``).

R packages with ``LazyData: true`` ship their data sets as a lazy-load database: ``Rdata.rdx`` is a
gzip-compressed serialized index ``list(variables=list(name=c(offset, length)), references=...,
compressed=...)`` and ``Rdata.rdb`` holds one record per object at ``offset``: a 4-byte big-endian
uncompressed length followed by a zlib stream (or a type byte then bzip2/xz when ``compressed`` is
2/3) of the object serialized with ``serialize(x, NULL, xdr=TRUE)``.

The reader covers the value types data sets are made of (atomic vectors, lists, pairlists,
symbols, attributes, the compact ALTREP sequences and wrappers R 3.5+ writes) and raises
``ValueError`` naming the type code for anything else (closures, environments, byte code), since
data is all we read. The format is documented in R's ``src/main/serialize.c`` and in
"R Internals", section 1.8 "Serialization Formats".
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# SEXP type codes (Rinternals.h) and the pseudo-types used only in serialized streams (serialize.c).
NILSXP, SYMSXP, LISTSXP, LANGSXP = 0, 1, 2, 6
CHARSXP, LGLSXP, INTSXP, REALSXP, CPLXSXP, STRSXP = 9, 10, 13, 14, 15, 16
VECSXP, EXPRSXP, RAWSXP = 19, 20, 24
ALTREP_SXP, EMPTYENV_SXP, BASEENV_SXP = 238, 242, 241
ATTRLISTSXP, ATTRLANGSXP = 239, 240
MISSINGARG_SXP, UNBOUNDVALUE_SXP, GLOBALENV_SXP, NILVALUE_SXP, REFSXP = 251, 252, 253, 254, 255

NA_INTEGER = -(2**31)
# CHARSXP encoding flags live in the "levels" bits of the item header.
_LATIN1_MASK, _BYTES_MASK = 1 << 2, 1 << 1


@dataclass
class RObject:
    """An R value with attributes, e.g. a named list or a factor.

    ``value`` is the Python conversion of the data part (list / str / float / ...), ``attributes``
    maps attribute names (``names``, ``class``, ``levels`` ...) to their converted values.
    """

    value: Any
    attributes: dict[str, Any] = field(default_factory=dict)

    def named(self) -> dict[str, Any]:
        """Return ``{name: element}`` for a named vector/list (raises if it has no names)."""
        names = self.attributes.get("names")
        if names is None:
            raise ValueError("R object has no 'names' attribute")
        return dict(zip(names, self.value))


@dataclass(frozen=True)
class RSymbol:
    name: str


class _XDRReader:
    """Reads one serialized R object from a byte buffer (XDR = big-endian binary)."""

    def __init__(self, buffer: bytes) -> None:
        self.buffer = buffer
        self.position = 0
        self.reference_table: list[Any] = []

    # -- primitives ---------------------------------------------------------------------------
    def _take(self, size: int) -> bytes:
        end = self.position + size
        if end > len(self.buffer):
            raise ValueError(f"truncated R serialization stream at byte {self.position}")
        chunk = self.buffer[self.position : end]
        self.position = end
        return chunk

    def read_int(self) -> int:
        return struct.unpack(">i", self._take(4))[0]

    def read_length(self) -> int:
        length = self.read_int()
        if length == -1:  # long vector: two more ints, upper and lower 32 bits
            upper, lower = self.read_int(), self.read_int()
            return (upper << 32) + lower
        return length

    # -- stream -------------------------------------------------------------------------------
    def read_stream(self) -> Any:
        magic = self._take(2)
        if magic != b"X\n":
            raise ValueError(f"only XDR ('X\\n') R serialization is supported, got {magic!r}")
        version = self.read_int()
        self.read_int()  # R version that wrote it
        self.read_int()  # minimal R version needed to read it
        if version == 3:
            encoding_length = self.read_int()
            self._take(encoding_length)  # native encoding name, e.g. "UTF-8"
        elif version != 2:
            raise ValueError(f"unsupported R serialization version {version}")
        return self.read_item()

    def read_item(self) -> Any:
        flags = self.read_int()
        sexp_type = flags & 0xFF
        levels = flags >> 12
        has_attributes = bool(flags & (1 << 9))
        has_tag = bool(flags & (1 << 10))

        if sexp_type == NILVALUE_SXP:
            return None
        if sexp_type in (EMPTYENV_SXP, BASEENV_SXP, GLOBALENV_SXP, UNBOUNDVALUE_SXP, MISSINGARG_SXP):
            return RSymbol(f"<special {sexp_type}>")
        if sexp_type == REFSXP:
            index = (flags >> 8) or self.read_int()
            return self.reference_table[index - 1]
        if sexp_type == SYMSXP:
            symbol = RSymbol(self.read_item())
            self.reference_table.append(symbol)
            return symbol
        if sexp_type in (LISTSXP, LANGSXP, ATTRLISTSXP, ATTRLANGSXP):
            return self._read_pairlist(has_attributes, has_tag)
        if sexp_type == CHARSXP:
            return self._read_charsxp(levels)
        if sexp_type == ALTREP_SXP:
            return self._read_altrep()

        value = self._read_vector(sexp_type)
        if has_attributes:
            attributes = self.read_item()
            return RObject(value, attributes if isinstance(attributes, dict) else {})
        return value

    def _read_pairlist(self, has_attributes: bool, has_tag: bool) -> dict[str, Any] | list[Any]:
        """A pairlist becomes a dict when every cell is tagged (attribute lists), else a list."""
        cells: list[tuple[str | None, Any]] = []
        while True:
            if has_attributes:
                self.read_item()  # attributes of a pairlist cell: not needed for data
            tag = self.read_item() if has_tag else None
            car = self.read_item()
            cells.append((tag.name if isinstance(tag, RSymbol) else None, car))
            # The cdr is read inline (iteratively) when it is another pairlist cell.
            flags = self.read_int()
            sexp_type = flags & 0xFF
            if sexp_type == NILVALUE_SXP:
                break
            if sexp_type not in (LISTSXP, LANGSXP, ATTRLISTSXP, ATTRLANGSXP):
                self.position -= 4
                cells.append((None, self.read_item()))
                break
            has_attributes = bool(flags & (1 << 9))
            has_tag = bool(flags & (1 << 10))
        if all(tag is not None for tag, _ in cells):
            return {tag: value for tag, value in cells}
        return [value for _, value in cells]

    def _read_charsxp(self, levels: int) -> str | None:
        length = self.read_int()
        if length == -1:
            return None  # NA_character_
        raw = self._take(length)
        if levels & (_LATIN1_MASK | _BYTES_MASK):
            return raw.decode("latin-1")  # raw bytes map one-to-one onto the first 256 code points
        # UTF-8 flagged, ASCII, or native strings (the writer's encoding, UTF-8 here).
        return raw.decode("utf-8")

    def _read_vector(self, sexp_type: int) -> Any:
        if sexp_type == NILSXP:
            return None
        length = self.read_length()
        if sexp_type in (LGLSXP, INTSXP):
            values = struct.unpack(f">{length}i", self._take(4 * length))
            if sexp_type == LGLSXP:
                return [None if v == NA_INTEGER else bool(v) for v in values]
            return [None if v == NA_INTEGER else v for v in values]
        if sexp_type == REALSXP:
            return list(struct.unpack(f">{length}d", self._take(8 * length)))
        if sexp_type == CPLXSXP:
            parts = struct.unpack(f">{2 * length}d", self._take(16 * length))
            return [complex(parts[i], parts[i + 1]) for i in range(0, 2 * length, 2)]
        if sexp_type == STRSXP:
            return [self.read_item() for _ in range(length)]
        if sexp_type in (VECSXP, EXPRSXP):
            return [self.read_item() for _ in range(length)]
        if sexp_type == RAWSXP:
            return self._take(length)
        raise ValueError(
            f"R serialization type {sexp_type} is not supported by this data reader "
            "(only data values: vectors, lists, pairlists, symbols)"
        )

    def _read_altrep(self) -> Any:
        """ALTREP objects: (class info pairlist, state, attributes). Expand the common classes."""
        info = self.read_item()
        state = self.read_item()
        attributes = self.read_item()
        class_name = info[0].name if isinstance(info, list) and isinstance(info[0], RSymbol) else None
        if class_name in ("compact_intseq", "compact_realseq"):
            length, start, step = state
            value: Any = [start + i * step for i in range(int(length))]
            if class_name == "compact_intseq":
                value = [int(v) for v in value]
        elif class_name and class_name.startswith("wrap_"):
            value = state[0]  # list(wrapped vector, metadata)
        elif class_name == "deferred_string":
            # state is a pairlist (argument vector, scalar info): the strings are the
            # coerced numbers. Formatting them exactly as R would is out of scope for data.
            raise ValueError("ALTREP deferred_string is not supported by this reader")
        else:
            raise ValueError(f"unsupported ALTREP class {class_name!r}")
        if isinstance(value, RObject):
            value = value.value
        if isinstance(attributes, dict) and attributes:
            return RObject(value, attributes)
        return value


def unserialize(buffer: bytes) -> Any:
    """Decode one object written by R's ``serialize(x, NULL)`` (XDR format, version 2 or 3)."""
    return _XDRReader(buffer).read_stream()


def read_rds(path: str | Path) -> Any:
    """Read an ``.rds`` file (gzip/bzip2/xz-compressed or plain serialized stream)."""
    return unserialize(_decompress_whole_file(Path(path).read_bytes()))


def _decompress_whole_file(data: bytes) -> bytes:
    if data[:2] == b"\x1f\x8b":
        return gzip.decompress(data)
    if data[:3] == b"BZh":
        return bz2.decompress(data)
    if data[:6] == b"\xfd7zXZ\x00":
        return lzma.decompress(data)
    return data


def _decompress_record(record: bytes, compression: int) -> bytes:
    """One lazy-load record: 4-byte big-endian output length, then the compressed stream."""
    expected_length = struct.unpack(">I", record[:4])[0]
    body = record[4:]
    if compression in (2, 3):
        kind, body = body[:1], body[1:]  # '2' bzip2, 'X' xz, 'Z' zlib, '0' stored
        decoders = {b"2": bz2.decompress, b"X": lzma.decompress, b"Z": zlib.decompress}
        payload = body if kind == b"0" else decoders[kind](body)
    else:
        payload = zlib.decompress(body)
    if len(payload) != expected_length:
        raise ValueError(f"lazy-load record decompressed to {len(payload)} bytes, expected {expected_length}")
    return payload


def read_lazy_load_database(rdx_path: str | Path) -> dict[str, Any]:
    """Read every variable of an R lazy-load database (``<base>.rdx`` + ``<base>.rdb``).

    Returns ``{variable name: converted value}``; a character vector becomes ``list[str]``.
    """
    rdx_path = Path(rdx_path)
    index = read_rds(rdx_path)
    if not isinstance(index, RObject):
        raise ValueError(f"{rdx_path} is not an R lazy-load index (expected a named list)")
    index_fields = index.named()
    variables = index_fields["variables"].named()
    compressed = index_fields.get("compressed")
    compression = int(compressed[0]) if isinstance(compressed, list) and compressed else 1
    database = rdx_path.with_suffix(".rdb").read_bytes()
    objects: dict[str, Any] = {}
    for name, (offset, length) in variables.items():
        offset, length = int(offset), int(length)
        objects[name] = unserialize(_decompress_record(database[offset : offset + length], compression))
    return objects
