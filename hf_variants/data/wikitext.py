"""Turn a MediaWiki XML dump into plain-text paragraphs (a small, readable markup stripper).

What is kept: the prose paragraphs of main-namespace articles that are not redirects, with links
replaced by their visible text and bold/italic quotes removed. What is dropped: templates
(``{{...}}``, nested), tables (``{|...|}``), references (``<ref>...</ref>``), HTML comments and
tags, file/image/category/interlanguage links, headings, list/indent lines (``* # : ;``, mostly
"See also"/"References" sections) and fragments under ``MIN_PARAGRAPH_CHARACTERS`` characters.
It is not a full MediaWiki parser (no template expansion), so a few sentences lose a templated
value (e.g. a ``{{convert|...}}`` measurement); what remains is real article text.
"""

from __future__ import annotations

import bz2
import html
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path

MIN_PARAGRAPH_CHARACTERS = 40
# Link targets with these prefixes are media, categories or other-language links: not prose.
_NON_PROSE_LINK_PREFIX = re.compile(
    r"^\s*:?\s*(file|image|media|category|[a-z]{2,3}(-[a-z]+)?|wikt|wiktionary)\s*:", re.I
)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_REF_PAIRED = re.compile(r"<ref[^>/]*?>.*?</ref\s*>", re.S | re.I)
_REF_SELF_CLOSING = re.compile(r"<ref[^>]*?/>", re.I)
_DROPPED_ELEMENTS = re.compile(
    r"<(gallery|math|timeline|score|syntaxhighlight|source|pre|table)\b.*?</\1\s*>", re.S | re.I
)
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*?>")
_EXTERNAL_LINK = re.compile(r"\[(?:https?:|ftp:)?//[^\s\]]+(?:\s+([^\]]*))?\]")
_BOLD_ITALIC = re.compile(r"'{2,}")
_EMPTY_BRACKETS = re.compile(r"\(\s*[,;]?\s*\)")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([,.;:!?)])")
_MULTIPLE_SPACES = re.compile(r"[ \t\u00a0]+")


def _remove_balanced(text: str, opening: str, closing: str) -> str:
    """Remove every (possibly nested) ``opening ... closing`` region, e.g. templates or tables."""
    delimiters = re.compile(f"{re.escape(opening)}|{re.escape(closing)}")
    pieces: list[str] = []
    depth = 0
    segment_start = 0
    for match in delimiters.finditer(text):  # jumps from delimiter to delimiter: fast on long pages
        if match.group() == opening:
            if depth == 0:
                pieces.append(text[segment_start : match.start()])
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                segment_start = match.end()
    # An unclosed region (truncated article) is dropped to the end, as the wiki would not render it.
    if depth == 0:
        pieces.append(text[segment_start:])
    return "".join(pieces)


def _replace_internal_links(text: str) -> str:
    """``[[target|label]]`` → label, ``[[target]]`` → target; media/category links vanish."""
    pieces: list[str] = []
    position = 0
    while True:
        start = text.find("[[", position)
        if start < 0:
            pieces.append(text[position:])
            return "".join(pieces)
        pieces.append(text[position:start])
        depth, cursor = 1, start + 2
        while cursor < len(text) and depth:
            if text.startswith("[[", cursor):
                depth, cursor = depth + 1, cursor + 2
            elif text.startswith("]]", cursor):
                depth, cursor = depth - 1, cursor + 2
            else:
                cursor += 1
        inner = text[start + 2 : cursor - 2] if depth == 0 else text[start + 2 :]
        if not _NON_PROSE_LINK_PREFIX.match(inner):
            label = inner.split("|")[-1] if "|" in inner else inner
            # A trailing "word" glued to the link ([[bank]]s) stays attached after the label.
            pieces.append(_replace_internal_links(label))
        position = cursor


def wikitext_to_paragraphs(wikitext: str) -> list[str]:
    """Plain prose paragraphs of one article's wikitext, in order."""
    text = _COMMENT.sub("", wikitext)
    text = _REF_PAIRED.sub("", text)
    text = _REF_SELF_CLOSING.sub("", text)
    text = _DROPPED_ELEMENTS.sub("", text)
    text = _remove_balanced(text, "{{", "}}")
    text = _remove_balanced(text, "{|", "|}")
    text = _replace_internal_links(text)
    text = _EXTERNAL_LINK.sub(lambda match: match.group(1) or "", text)
    text = _HTML_TAG.sub("", text)
    text = _BOLD_ITALIC.sub("", text)
    text = html.unescape(text)

    paragraphs: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        prose_lines = [
            line.strip()
            for line in block.split("\n")
            if line.strip() and not line.lstrip().startswith(("=", "*", "#", ":", ";", "|", "!", "{", "}"))
        ]
        if not prose_lines:
            continue
        paragraph = " ".join(prose_lines)
        paragraph = _EMPTY_BRACKETS.sub("", paragraph)
        paragraph = _MULTIPLE_SPACES.sub(" ", paragraph)
        paragraph = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", paragraph).strip()
        if len(paragraph) >= MIN_PARAGRAPH_CHARACTERS and re.search(r"[a-zA-Z]", paragraph):
            paragraphs.append(paragraph)
    return paragraphs


def iter_dump_articles(dump_path: str | Path) -> Iterator[tuple[str, str]]:
    """Yield ``(title, wikitext)`` for main-namespace, non-redirect pages of a (bz2) XML dump."""
    opener = bz2.open if str(dump_path).endswith(".bz2") else open
    with opener(dump_path, "rb") as stream:
        for _, element in ElementTree.iterparse(stream, events=("end",)):
            if not element.tag.endswith("}page") and element.tag != "page":
                continue
            namespace = element.tag[: element.tag.index("}") + 1] if element.tag.startswith("{") else ""
            title = element.findtext(f"{namespace}title") or ""
            page_namespace = element.findtext(f"{namespace}ns")
            is_redirect = element.find(f"{namespace}redirect") is not None
            wikitext = element.findtext(f"{namespace}revision/{namespace}text") or ""
            element.clear()
            if page_namespace == "0" and not is_redirect:
                yield title, wikitext
