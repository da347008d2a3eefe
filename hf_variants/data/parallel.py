"""Real parallel text: Django's English interface strings and their French translations.

No parallel corpus of running prose (Europarl, OPUS, WMT) is reachable from the package
registries; the closest real parallel text found is a software translation catalog. Django 5.2.8's
wheel ships gettext catalogs (.mo) for twelve of its apps, written by its volunteer translators:
each English message (``msgid``) with its French translation (``msgstr``), e.g. "No fields
changed." -> "Aucun champ modifié.". The strings are short (a word to two sentences, some with
``%(name)s`` placeholders or HTML), so this is parallel text of a narrow register, not news or
books. The Hub's ``opus_books`` / ``wmt16`` have the same ``translation`` layout.
"""

from __future__ import annotations

import gettext
import io

import datasets

from .fetch import fetch
from .sources import DJANGO_CATALOG_APPS, DJANGO_FRENCH_CATALOGS

# Measured on django 5.2.8: the pairs left after the filters of load_django_translations.
DJANGO_FRENCH_PAIRS = 735
CONTEXT_SEPARATOR = "\x04"  # gettext writes "context\x04message" for messages with a msgctxt


def read_catalog(data: bytes) -> list[tuple[str, str]]:
    """(English, translation) pairs of one compiled gettext catalog, in catalog order.

    The stdlib parser reads the binary .mo format; plural entries (keyed by (message, n)), the
    header (empty message), untranslated and unchanged messages are left out, and a message
    context is dropped from the English side.
    """
    catalog = gettext.GNUTranslations(io.BytesIO(data))._catalog  # the parsed {msgid: msgstr} table
    pairs = []
    for message, translation in catalog.items():
        if not isinstance(message, str) or not message or not translation:
            continue
        message = message.split(CONTEXT_SEPARATOR, 1)[-1]
        if message.strip() != translation.strip():
            pairs.append((message.strip(), translation.strip()))
    return pairs


def load_django_translations() -> datasets.Dataset:
    """English-French pairs from Django's catalogs (see the module docstring).

    Returns:
        A Dataset of 735 rows: ``translation`` ({"en": ..., "fr": ...}, the Hub's translation
        format), ``source`` (the Django app) and ``document`` (the row index, so that
        run_pretraining's held-out split is by pair).
    """
    paths = fetch(DJANGO_FRENCH_CATALOGS)
    rows: dict[str, list] = {"translation": [], "source": []}
    for app in DJANGO_CATALOG_APPS:
        for english, french in read_catalog(paths[f"{app.replace('/', '-')}.mo"].read_bytes()):
            rows["translation"].append({"en": english, "fr": french})
            rows["source"].append(app)
    if len(rows["source"]) != DJANGO_FRENCH_PAIRS:
        raise RuntimeError(
            f"Django's catalogs gave {len(rows['source'])} pairs, expected {DJANGO_FRENCH_PAIRS}; "
            "delete the django_catalogs_fr cache and load again"
        )
    rows["document"] = list(range(len(rows["source"])))
    return datasets.Dataset.from_dict(rows)
