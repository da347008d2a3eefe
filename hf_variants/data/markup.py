"""Markup → prose paragraphs: cleaners for HTML, reStructuredText and Perl's POD.

Each cleaner takes one document's source text and returns its paragraphs as plain text
(whitespace collapsed, markup removed). Code, literal blocks, tables, navigation and
comments are dropped rather than flattened: a pretraining corpus should be prose, and a
flattened table or code listing is neither prose nor code. ``is_prose`` is the last filter:
it drops what still looks like code, a heading or a list of identifiers.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

MIN_PROSE_WORDS = 5  # fewer words is a heading, a label or a fragment
MIN_WORDLIKE_FRACTION = 0.6  # share of tokens that read as words (not identifiers, numbers, symbols)

_WORDLIKE = re.compile(r"^[(\"'“‘\[]*[A-Za-z][a-z]*(?:['’-][A-Za-z][a-z]*)*[)\"'”’\].,;:!?]*$")
_SPACES = re.compile(r"\s+")


def normalise_space(text: str) -> str:
    """Collapse every run of whitespace (newlines included) into one space; strip the ends."""
    return _SPACES.sub(" ", text).strip()


_BOILERPLATE = re.compile(
    r"^(?:Permission is granted to copy|Permission is hereby granted|Copyright\s*(?:©|\(c\)|\d)|"
    r"This (?:program|library|file|document|documentation|manual) is free (?:software|documentation)|"
    r"Licensed under the|Redistribution and use in source and binary forms|THIS SOFTWARE IS PROVIDED|"
    r"You should have received a copy of the GNU|(?:Next|Previous|Prev|Up)\s*:\s)",
    re.I,
)


def is_boilerplate(paragraph: str) -> bool:
    """True for a licence or copyright notice, or a "Next: ..." navigation line: they recur on
    many pages and are not the page's text."""
    return bool(_BOILERPLATE.match(paragraph))


def is_prose(paragraph: str, min_words: int = MIN_PROSE_WORDS) -> bool:
    """True for a paragraph of running text: at least ``min_words`` tokens, and at least
    MIN_WORDLIKE_FRACTION of them plain words (letters, an apostrophe or hyphen, surrounding
    punctuation). Code (``x = f(y)``), command lines, tables of numbers and headings fail."""
    tokens = paragraph.split()
    if len(tokens) < min_words:
        return False
    wordlike = sum(1 for token in tokens if _WORDLIKE.match(token))
    return wordlike >= MIN_WORDLIKE_FRACTION * len(tokens)


# ----------------------------------------------------------------------------------------- HTML

# Elements whose whole subtree is not prose.
_HTML_SKIP_TAGS = frozenset(
    {
        "head",
        "title",
        "script",
        "style",
        "noscript",
        "template",
        "pre",
        "table",
        "nav",
        "header",
        "footer",
        "aside",
        "form",
        "button",
        "select",
        "textarea",
        "svg",
        "math",
        "iframe",
        "object",
        "map",
    }
)
# Containers of navigation, page chrome and generated indexes in Sphinx, DocBook, asciidoc,
# mdBook and Texinfo output, recognised by one token of their class, id or role.
_HTML_SKIP_TOKENS = frozenset(
    {
        "related",
        "footer",
        "header",
        "navheader",
        "navfooter",
        "navigation",
        "nav",
        "navbar",
        "docnav",
        "toc",
        "toctree-wrapper",
        "contents",
        "breadcrumb",
        "breadcrumbs",
        "menu",
        "menu-bar",
        "search",
        "headerlink",
        "highlight",
        "literal-block",
        "doctest",
        "sig",
        "sig-object",
        "copyright",
        "last-updated",
        "footnote",
        "footnotes",
        "legalnotice",
        "mini-toc",
        "nav-chapters",
        "nav-wrapper",
        "mobile-nav-chapters",
        "chapter-navigation",
        "searchbox",
        "synopsis",
        "cmdsynopsis",
        "funcsynopsis",
        "programlisting",
        "screen",
        "example-contents",
    }
)
# ... and by a prefix: Texinfo's definition headers (deffn, deftypefn, ...) are signatures.
_HTML_SKIP_TOKEN_PREFIX = re.compile(
    r"^(?:sphinxsidebar|highlight-|nav-|toc|def(?:fn|typefn|un|vr|typevr|tp|op|typeop|mac|spec)x?$)", re.I
)
# Never skipped by class: mdBook marks <html> "sidebar-visible", some themes mark <body>.
_HTML_ALWAYS_ENTERED = frozenset({"html", "body", "main"})
_HTML_BLOCK_TAGS = frozenset(
    {
        "p",
        "li",
        "dd",
        "dt",
        "blockquote",
        "div",
        "section",
        "article",
        "main",
        "body",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "dl",
        "figcaption",
        "caption",
        "br",
        "hr",
    }
)
_HTML_VOID_TAGS = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)
_HEADING = re.compile(r"^h([1-6])$")


class _ParagraphParser(HTMLParser):
    """Collects the text of block elements outside skipped subtrees, as paragraphs.

    ``split_level``: a heading of this level or above (h1..hN) starts a new section, so a
    single-page manual can be cut into chapters. ``sections`` holds ``(title, paragraphs)``.
    """

    def __init__(self, split_level: int = 0) -> None:
        super().__init__(convert_charrefs=True)
        self.split_level = split_level
        self.stack: list[tuple[str, bool]] = []  # (tag, opened a skipped subtree)
        self.skipping = 0
        self.buffer: list[str] = []
        self.title: list[str] = []
        self.in_title = False
        self.sections: list[tuple[str, list[str]]] = [("", [])]
        self.heading_level = 0
        self.heading_text: list[str] = []

    def _flush(self) -> None:
        # "¶" is the permalink anchor Sphinx, Texinfo and the Apache manual put after headings.
        text = normalise_space("".join(self.buffer).replace("¶", ""))
        self.buffer = []
        if text:
            self.sections[-1][1].append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        if tag in _HTML_BLOCK_TAGS and not self.skipping:
            self._flush()
        heading = _HEADING.match(tag)
        if heading and not self.skipping and int(heading.group(1)) <= self.split_level:
            self.sections.append(("", []))
            self.heading_level, self.heading_text = int(heading.group(1)), []
        if tag in _HTML_VOID_TAGS:
            return
        skip = tag in _HTML_SKIP_TAGS
        if not skip and tag not in _HTML_ALWAYS_ENTERED:
            tokens = [
                token.lower()
                for name, value in attrs
                if name in ("class", "id", "role")
                for token in (value or "").split()
            ]
            skip = any(token in _HTML_SKIP_TOKENS or _HTML_SKIP_TOKEN_PREFIX.match(token) for token in tokens)
        # <code> inside running text stays (it names things); a <div class="highlight"> does not.
        self.stack.append((tag, skip))
        if skip:
            self.skipping += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in _HTML_VOID_TAGS or all(open_tag != tag for open_tag, _ in self.stack):
            return  # a stray end tag: ignore it rather than unwinding the stack
        while self.stack:
            open_tag, skip = self.stack.pop()
            if skip:
                self.skipping -= 1
            if open_tag == tag:
                break
        if tag in _HTML_BLOCK_TAGS and not self.skipping:
            self._flush()
        heading = _HEADING.match(tag)
        if heading and int(heading.group(1)) == self.heading_level:
            title = normalise_space("".join(self.heading_text))
            self.sections[-1] = (title, self.sections[-1][1])
            self.heading_level = 0

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if not self.skipping:
            self.buffer.append(data)
            if self.heading_level:
                self.heading_text.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def html_to_paragraphs(html: str) -> tuple[str, list[str]]:
    """``(title, paragraphs)`` of one HTML page: the ``<title>`` and the text of its block
    elements, without navigation, code (``<pre>``), tables, scripts or page chrome."""
    parser = _ParagraphParser()
    parser.feed(html)
    parser.close()
    return normalise_space("".join(parser.title)), [p for _, section in parser.sections for p in section]


def html_sections(html: str, level: int) -> list[tuple[str, list[str]]]:
    """A single-page manual cut at its headings of ``level`` or above (1 = h1): a list of
    ``(heading, paragraphs)``; text before the first such heading is a section titled ""."""
    if not 1 <= level <= 6:
        raise ValueError(f"heading level must be 1..6, got {level}")
    parser = _ParagraphParser(split_level=level)
    parser.feed(html)
    parser.close()
    return [(title, paragraphs) for title, paragraphs in parser.sections if paragraphs]


# ------------------------------------------------------------------------------ reStructuredText

_RST_DIRECTIVE = re.compile(r"^\.\.\s+(?:\|[^|]+\|\s+)?([\w:.+-]+)::")
_RST_COMMENT = re.compile(r"^\.\.(?:\s|$)")
_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+.:_<>])\1{2,}\s*$")
_RST_TABLE_LINE = re.compile(r"^(?:\+[-=+]+\+\s*$|\||={2,}(?:\s+={2,})+\s*$|-{2,}(?:\s+-{2,})+\s*$)")
_RST_BULLET = re.compile(r"^(?:[-*+•]|#\.|\d+[.)]|\(\d+\)|[a-zA-Z][.)])\s+")
_RST_FIELD = re.compile(r"^:[\w .()-]+:(?:\s|$)")
# Directives whose content is code, data, tables, media or generated listings.
_RST_DROP_DIRECTIVES = frozenset({
    "code-block", "code", "sourcecode", "literalinclude", "include", "toctree", "table", "list-table",
    "csv-table", "flat-table", "image", "figure", "math", "raw", "kernel-doc", "kernel-abi",
    "kernel-feat", "kernel-include", "productionlist", "doctest", "testcode", "testoutput",
    "testsetup", "testcleanup", "highlight", "index", "sectionauthor", "moduleauthor",
    "codeauthor", "graphviz", "digraph", "tabularcolumns", "contents", "parsed-literal", "only",
    "cssclass", "rst-class", "role", "default-role", "ifconfig", "opcode", "option", "cmdoption",
    "program", "envvar", "describe", "literal", "c:namespace", "c:namespace-push", "c:namespace-pop",
    "kernel-cmd", "maintainers-include", "kfigure", "kernel-figure", "kernel-image", "kernel-render",
    "audit-event", "audit-event-table", "availability", "impl-detail", "seealso", "autosummary",
    "automodule", "autoclass", "autofunction", "currentmodule", "module", "glossary", "rubric",
    "centered", "hlist", "deprecated-removed", "versionadded", "versionchanged", "deprecated",
    "SPDX-License-Identifier", "dropdown", "tabs", "tab", "code-tab",
})  # fmt: skip
# Inline markup, applied in order.
_RST_INLINE = (
    (re.compile(r":[\w:.+-]+:`~?!?([^`<]*?)\s*<[^`>]*>`"), r"\1"),  # :ref:`text <target>`
    (re.compile(r":[\w:.+-]+:`~?!?([^`]*)`"), r"\1"),  # :func:`name`
    (re.compile(r"``(.+?)``"), r"\1"),  # ``literal``
    (re.compile(r"`([^`<]*?)\s*<[^`>]*>`__?"), r"\1"),  # `text <url>`_
    (re.compile(r"`([^`]+)`(?:__?|:[\w:.+-]+:)?"), r"\1"),  # `ref`_ , `interpreted`
    (re.compile(r"\*\*(\S(?:.*?\S)?)\*\*"), r"\1"),
    (re.compile(r"(?<![\w*])\*(\S(?:.*?\S)?)\*(?![\w*])"), r"\1"),
    (re.compile(r"(?<![\w)|])\|([^|\s](?:[^|]*[^|\s])?)\|_{0,2}(?![\w(|])"), r"\1"),  # |substitution|
    (re.compile(r"\s*\[(?:#[\w-]*|\d+|\*)\]_"), ""),  # footnote references
    (re.compile(r"\\ "), ""),  # escaped space (joins markup to a word)
    (re.compile(r"\\(.)"), r"\1"),
)


def rst_inline(text: str) -> str:
    """Inline reStructuredText markup removed, the text of roles, references and literals kept."""
    for pattern, replacement in _RST_INLINE:
        text = pattern.sub(replacement, text)
    return normalise_space(text)


def rst_to_paragraphs(text: str) -> list[str]:
    """Paragraphs of a reStructuredText document: section titles (their own short paragraph),
    body paragraphs, list items and the content of prose directives (note, warning, function
    descriptions...). Dropped: comments and licence headers (``.. SPDX...``), literal blocks
    (after ``::``), code/table/media/toctree directives, tables, field lists."""
    paragraphs: list[str] = []
    current: list[str] = []
    skip_deeper_than: int | None = None  # skip blank lines and lines indented deeper than this
    in_simple_table = False
    after_border = False  # the previous line of a simple table was one of its borders

    def flush() -> None:
        if current:
            paragraph = rst_inline(" ".join(current))
            if paragraph:
                paragraphs.append(paragraph)
            current.clear()

    for raw_line in text.expandtabs(8).splitlines():
        stripped = raw_line.strip()
        indent = len(raw_line) - len(raw_line.lstrip())
        if skip_deeper_than is not None:
            if not stripped or indent > skip_deeper_than:
                continue
            skip_deeper_than = None
        if in_simple_table:
            # A simple table ends at a border line followed by a blank line; we end it at the
            # first blank line after a border, which is the same for well-formed tables.
            if not stripped and after_border:
                in_simple_table = False
            after_border = bool(_RST_TABLE_LINE.match(stripped))
            continue
        if not stripped:
            flush()
            continue
        directive = _RST_DIRECTIVE.match(stripped)
        if directive or _RST_COMMENT.match(stripped):
            flush()
            name = directive.group(1) if directive else ""
            keeps_content = directive is not None and name not in _RST_DROP_DIRECTIVES
            remainder = stripped[directive.end() :].strip() if directive else ""
            if (
                keeps_content
                and name
                in (
                    "note",
                    "warning",
                    "important",
                    "attention",
                    "caution",
                    "danger",
                    "hint",
                    "admonition",
                    "topic",
                    "sidebar",
                )
                and remainder
            ):
                current.append(remainder)  # ".. note:: Text on the same line" is prose
            if not keeps_content:
                skip_deeper_than = indent
            continue
        if _RST_ADORNMENT.match(stripped):
            flush()  # a section title's under/overline: the title becomes its own paragraph
            continue
        if _RST_TABLE_LINE.match(stripped):
            flush()  # grid-table lines all start with + or |, so each is dropped here
            if stripped.startswith("="):
                in_simple_table, after_border = True, True
            continue
        if _RST_FIELD.match(stripped) and not current:
            continue  # metadata (":Author: ...") and parameter fields
        bullet = _RST_BULLET.match(stripped)
        if bullet:
            flush()
            stripped = stripped[bullet.end() :]
        if stripped.endswith("::"):
            # "Text::" introduces a literal block (rendered as "Text:"); a bare "::" vanishes.
            head = stripped[:-2].rstrip()
            if head:  # "root):::" keeps one colon, "Example ::" none
                current.append(head + (":" if not stripped[:-2].endswith((" ", ":")) else ""))
            flush()
            skip_deeper_than = indent
            continue
        current.append(stripped)
    flush()
    return paragraphs


# ------------------------------------------------------------------------------------------ POD

_POD_COMMAND = re.compile(r"^=(\w+)\s*(.*)$", re.S)
_POD_DOUBLE = re.compile(r"([A-Z])<{2,}\s+(.*?)\s+>{2,}", re.S)  # C<< $a <=> $b >>
_POD_SINGLE = re.compile(r"([A-Z])<([^<>]*)>")
_POD_LOOSE = re.compile(r"\b([BCFILSX])<([^>]*)>")
_POD_ENTITIES = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/", "quot": '"', "amp": "&", "apos": "'"}
_POD_BOILERPLATE_HEADINGS = re.compile(
    r"^(?:AUTHORS?|COPYRIGHT|LICEN[CS]E|COPYRIGHT AND LICEN[CS]E|"
    r"AUTHORS? AND COPYRIGHT|SEE ALSO)\b",
    re.I,
)


def _pod_code(code: str, body: str) -> str:
    if code in "XZ":
        return ""  # index entries and zero-width markers
    if code == "E":
        if body.isdigit():
            return chr(int(body))
        if body.lower().startswith("0x"):
            return chr(int(body, 16))
        return _POD_ENTITIES.get(body, "")
    if code == "L":
        text, bar, target = body.partition("|")
        if bar:
            return text
        # L<perlfunc/open> reads as "open in perlfunc"; L</"Section"> as "Section".
        page, slash, section = body.partition("/")
        section = section.strip('"')
        if slash and page:
            return f"{section} in {page}"
        return section or page.strip('"')
    return body  # B, I, C, F, S: the text itself


def pod_inline(text: str) -> str:
    """POD formatting codes resolved: B<>, I<>, C<>, F<>, S<> keep their text, L<> its label,
    E<> its character, X<> and Z<> vanish; nested and C<< >> forms included."""
    text = _POD_DOUBLE.sub(lambda match: _pod_code(match.group(1), match.group(2)), text)
    previous = None
    while previous != text:  # innermost codes first
        previous = text
        text = _POD_SINGLE.sub(lambda match: _pod_code(match.group(1), match.group(2)), text)
    # What is left has a bare "<" inside (C<print <<EOF;>): a single-bracket code ends at its first ">".
    text = _POD_LOOSE.sub(lambda match: _pod_code(match.group(1), match.group(2)), text)
    return normalise_space(text)


def pod_to_paragraphs(text: str) -> list[str]:
    """Paragraphs of a POD document: headings (their own short paragraph), ordinary paragraphs
    and text ``=item`` labels. Dropped: verbatim (indented, i.e. code) paragraphs, ``=begin``
    /``=for`` blocks, text outside POD (after ``=cut``), and AUTHOR/COPYRIGHT/LICENSE/SEE ALSO
    sections (boilerplate and lists of links)."""
    paragraphs: list[str] = []
    in_pod = False
    in_begin_block = False
    in_boilerplate = False
    for block in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")):
        block = block.lstrip("\n")
        if not block.strip():
            continue
        command = _POD_COMMAND.match(block)
        if command:
            name, argument = command.group(1), command.group(2).strip()
            in_pod = name != "cut"
            if name == "begin":
                in_begin_block = True
            elif name == "end":
                in_begin_block = False
            elif name.startswith("head") and not in_begin_block:
                level = int(name[4:]) if name[4:].isdigit() else 1
                if level <= 2 or in_boilerplate:
                    in_boilerplate = bool(_POD_BOILERPLATE_HEADINGS.match(argument))
                if not in_boilerplate:
                    paragraphs.append(pod_inline(argument))
            elif name == "item" and not in_begin_block and not in_boilerplate:
                label = pod_inline(argument)
                if label and label not in ("*", "-") and not re.fullmatch(r"\d+\.?", label):
                    paragraphs.append(label)
            continue
        if not in_pod or in_begin_block or in_boilerplate or block.startswith((" ", "\t")):
            continue  # code outside POD, =begin blocks, boilerplate, verbatim paragraphs
        paragraph = pod_inline(block)
        if paragraph:
            paragraphs.append(paragraph)
    return [paragraph for paragraph in paragraphs if paragraph]
