"""Django's French translation catalogs as parallel text: real human translations of English
interface strings, in the Hub's translation format."""

from __future__ import annotations

import struct

from hf_variants.data import load_django_translations
from hf_variants.data.parallel import read_catalog


def test_django_catalogs_are_english_french_pairs():
    pairs = load_django_translations()
    assert len(pairs) == 735 and pairs.column_names == ["translation", "source", "document"]
    by_english = {row["en"]: row["fr"] for row in pairs["translation"]}
    assert by_english["No fields changed."] == "Aucun champ modifié."
    assert all(row["en"] != row["fr"] for row in pairs["translation"])


def test_catalog_reader_drops_plural_forms_header_and_context():
    catalog = {
        "": "Content-Type: text/plain; charset=UTF-8\n",
        "month\x04May": "mai",
        "Yes": "Oui",
        "Same": "Same",
        "Untranslated": "",
    }
    keys = sorted(catalog)
    ids = b"".join(k.encode() + b"\0" for k in keys)
    strs = b"".join(catalog[k].encode() + b"\0" for k in keys)
    # A compiled .mo file (GNU format, little-endian): header, two offset tables, then the strings.
    n, start = len(keys), 28 + 16 * len(keys)
    id_table, str_table, offset = [], [], start
    for k in keys:
        id_table += [len(k.encode()), offset]
        offset += len(k.encode()) + 1
    for k in keys:
        str_table += [len(catalog[k].encode()), offset]
        offset += len(catalog[k].encode()) + 1
    data = struct.pack("<7I", 0x950412DE, 0, n, 28, 28 + 8 * n, 0, 0) + struct.pack(f"<{4 * n}I", *id_table, *str_table)
    data += ids + strs
    assert sorted(read_catalog(data)) == [("May", "mai"), ("Yes", "Oui")]
