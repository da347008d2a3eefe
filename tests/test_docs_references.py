"""The docs' ``file.py:LINE`` references point at the symbol they name (read with ``ast``; nothing imported).

A line reference in ``docs/**/*.md`` is a code span ``path.py:LINE`` followed, after one space, by a
code span naming the qualified symbol it points at::

    `modeling_bert.py:740` `BertForMaskedLM.forward`
    `:154` `BertEmbeddings.forward`        (a bare `:LINE`: the file of the last `….py` span before it
                                            in the same paragraph or table)

``path`` is relative to the repository root, to ``hf_variants/``, or the tail of exactly one path under
``hf_variants/`` (``modeling_bert.py``, ``modules/heads.py``). A symbol is a class, function or method
(``Class.method``, nested classes by their dotted path) or a module- or class-level assignment
(``SHARED_EMBEDDING_MODULES``, ``BertModel.encoder_class``); LINE is its ``def`` / ``class`` line or one
of its decorator lines. A reference and its symbol stand on one line of the doc.

A file span followed by a symbol span without a line (``modules/masks.py`` ``make_attention_bias``)
is a name, not a reference: the test leaves it alone (the docs' records of earlier sessions name code
that later moved), ``python -m tests.test_docs_references --names`` also checks that each such symbol
exists.

The test fails, naming the doc line, when the file does not exist (or its name is not unique), the
symbol is not in it, the line is not the symbol's, a reference has no symbol, or a ``.py:LINE`` /
``:LINE`` text is not of this form (a range ``:383-410`` is not: name the first and last symbols).

Line numbers drift as the code changes; the symbols do not. After a change (or a merge) rewrite every
reference's line to its symbol's current ``def`` line, then re-run the test::

    python -m tests.test_docs_references --fix     # prints each change; exit 1 if something is left to fix by hand
    python -m tests.test_docs_references           # only reports
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = ROOT / "hf_variants"
DOCS_DIR = ROOT / "docs"

CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINE_REFERENCE = re.compile(r"(?P<path>[\w./-]*\.py)?:(?P<line>\d+)")
FILE_SPAN = re.compile(r"[\w./-]*\.py")
SYMBOL_SPAN = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
# Anything that looks like a line reference; each match must belong to a reference of the checked form.
LOOKS_LIKE_REFERENCE = re.compile(r"\.py:\d|`:\d")
FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Symbol:
    """One definition of a qualified name: its ``def``/``class``/assignment line and every line that may cite it."""

    def_line: int
    lines: frozenset[int]


@dataclass
class Reference:
    """A checked span of a doc: ``path.py:LINE`` + symbol, or ``path.py`` + symbol (``line`` None)."""

    doc: str  # its path as shown in a problem (relative to the repository root)
    doc_line: int  # 1-based
    start: int  # offset of the line number's digits in the doc line (-1 when ``line`` is None)
    line: int | None
    path: str  # as resolved: the span's own path, or the paragraph's last file for a bare ``:LINE``
    symbol: str

    def where(self) -> str:
        return f"{self.doc}:{self.doc_line}"


def symbols_of(source: str) -> dict[str, list[Symbol]]:
    """Qualified name -> its definitions in ``source`` (several for a property's getter and setter).

    Classes, functions and methods at any depth (nested ones under their parent's dotted name), and
    the names assigned at module or class level (not a function's locals).
    """
    found: dict[str, list[Symbol]] = {}

    def add(name: str, def_line: int, lines: set[int]) -> None:
        found.setdefault(name, []).append(Symbol(def_line, frozenset(lines)))

    def visit(node: ast.AST, prefix: str, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                add(name, child.lineno, {child.lineno, *(d.lineno for d in child.decorator_list)})
                visit(child, name + ".", in_function or not isinstance(child, ast.ClassDef))
            elif isinstance(child, (ast.Assign, ast.AnnAssign)) and not in_function:
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                for target in targets:
                    for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                        if isinstance(element, ast.Name):
                            add(prefix + element.id, child.lineno, {child.lineno})
            elif isinstance(child, ast.stmt):  # if / try / with blocks at this level keep the scope
                visit(child, prefix, in_function)

    visit(ast.parse(source), "", False)
    return found


class SourceIndex:
    """Resolves a doc's path to a file and reads each file's symbols once."""

    def __init__(self, root: Path = ROOT, package_dir: Path = PACKAGE_DIR) -> None:
        self.root = root
        self.package_dir = package_dir
        self.package_files = sorted(package_dir.rglob("*.py"))
        self._symbols: dict[Path, dict[str, list[Symbol]]] = {}

    def resolve(self, path: str) -> tuple[Path | None, str]:
        """(the file ``path`` names, "") or (None, why not)."""
        for base in (self.root, self.package_dir):
            candidate = (base / path).resolve()
            if "/" in path and candidate.is_file():
                return candidate, ""
        tail = "/" + path.lstrip("/")
        matches = [f for f in self.package_files if ("/" + f.relative_to(self.package_dir).as_posix()).endswith(tail)]
        if len(matches) == 1:
            return matches[0], ""
        if not matches:
            return None, f"no file {path!r} in the repository root or under {self.package_dir.name}/"
        names = ", ".join(f.relative_to(self.package_dir).as_posix() for f in matches)
        return None, f"{path!r} names {len(matches)} files ({names}): give more of its path"

    def symbols(self, file: Path) -> dict[str, list[Symbol]]:
        if file not in self._symbols:
            self._symbols[file] = symbols_of(file.read_text(encoding="utf-8"))
        return self._symbols[file]


def parse_doc(doc: Path, root: Path = ROOT, names: bool = False) -> tuple[list[Reference], list[str]]:
    """The references of one doc, and the problems of form (a reference with no symbol, a range, ...).
    ``names``: also return each ``file.py`` ``Symbol`` pair without a line (``line`` None)."""
    shown = doc.relative_to(root).as_posix() if doc.is_relative_to(root) else doc.as_posix()
    references: list[Reference] = []
    problems: list[str] = []
    in_fence = False
    block_file: str | None = None  # the last ``….py`` span of the current paragraph or table
    for number, text in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
        where = f"{shown}:{number}"
        if FENCE.match(text):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if not text.strip() or text.lstrip().startswith("#"):
            block_file = None
        spans = list(CODE_SPAN.finditer(text))
        covered: list[tuple[int, int]] = []  # the spans that make up the references found on this line
        for index, span in enumerate(spans):
            content = span.group(1)
            following = spans[index + 1] if index + 1 < len(spans) else None
            symbol = None
            if following is not None and text[span.end() : following.start()] == " ":
                if SYMBOL_SPAN.fullmatch(following.group(1)):
                    symbol = following
            line_match = LINE_REFERENCE.fullmatch(content)
            if line_match:
                path = line_match.group("path") or block_file
                if line_match.group("path"):
                    block_file = path
                if symbol is None:
                    problems.append(
                        f"{where}: `{content}` names no symbol: write `{content}` `Class.method` (on the same line)"
                    )
                    covered.append(span.span())
                    continue
                if path is None:
                    problems.append(f"{where}: `{content}` has no file: no `….py` span before it in its paragraph")
                    covered.append(span.span())
                    continue
                references.append(
                    Reference(
                        shown,
                        number,
                        span.start(1) + content.rindex(":") + 1,
                        int(line_match["line"]),
                        path,
                        symbol.group(1),
                    )
                )
                covered += [span.span(), symbol.span()]
            elif FILE_SPAN.fullmatch(content):
                block_file = content
                if symbol is not None and names:
                    references.append(Reference(shown, number, -1, None, content, symbol.group(1)))
                    covered += [span.span(), symbol.span()]
        for stray in LOOKS_LIKE_REFERENCE.finditer(text):
            if not any(start <= stray.start() < end for start, end in covered):
                excerpt = text[max(0, stray.start() - 30) : stray.end() + 12].strip()
                problems.append(
                    f"{where}: not a checked reference: ...{excerpt}... (write `file.py:LINE` `Symbol`; "
                    "a range names its first and last symbols)"
                )
    return references, problems


def check(reference: Reference, index: SourceIndex) -> tuple[str, int | None]:
    """("", None) when the reference holds; else the problem and, where only the line is wrong, the line to write."""
    file, why = index.resolve(reference.path)
    label = f"`{reference.path}" + (f":{reference.line}`" if reference.line is not None else "`")
    if file is None:
        return f"{reference.where()}: {label} `{reference.symbol}`: {why}", None
    shown = file.relative_to(index.root).as_posix() if file.is_relative_to(index.root) else file.as_posix()
    try:
        definitions = index.symbols(file).get(reference.symbol)
    except SyntaxError as error:  # e.g. a merge left conflict markers in it
        return f"{reference.where()}: {label}: {shown} does not parse (line {error.lineno}: {error.msg})", None
    if not definitions:
        return f"{reference.where()}: {label}: no `{reference.symbol}` in {shown}", None
    if reference.line is None or any(reference.line in d.lines for d in definitions):
        return "", None
    current = definitions[0].def_line
    problem = (
        f"{reference.where()}: {label} `{reference.symbol}`: {shown} defines it at line {current}, "
        f"not {reference.line} (python -m tests.test_docs_references --fix)"
    )
    return problem, current


def doc_files(docs_dir: Path = DOCS_DIR) -> list[Path]:
    return sorted(docs_dir.rglob("*.md"))


def problems_in(doc: Path, index: SourceIndex, names: bool = False) -> list[str]:
    references, problems = parse_doc(doc, index.root, names)
    return problems + [problem for problem, _ in (check(r, index) for r in references) if problem]


def fix_doc(doc: Path, index: SourceIndex) -> tuple[list[str], list[str]]:
    """Rewrite each line reference whose symbol moved to the symbol's ``def`` line, in place.

    Returns the changes made and the problems left (those a line number cannot fix).
    """
    references, problems = parse_doc(doc, index.root)
    lines = doc.read_text(encoding="utf-8").splitlines(keepends=True)
    changes: list[str] = []
    # Right to left within a line, so earlier offsets stay valid when a number's width changes.
    for reference in sorted(references, key=lambda r: (r.doc_line, r.start), reverse=True):
        problem, new_line = check(reference, index)
        if new_line is None:
            if problem:
                problems.append(problem)
            continue
        text = lines[reference.doc_line - 1]
        old = str(reference.line)
        assert text[reference.start : reference.start + len(old)] == old, (reference, text)
        lines[reference.doc_line - 1] = text[: reference.start] + str(new_line) + text[reference.start + len(old) :]
        changes.append(f"{reference.where()}: {reference.path}:{old} -> :{new_line} `{reference.symbol}`")
    if changes:
        doc.write_text("".join(lines), encoding="utf-8")
    return sorted(changes), sorted(problems)


# ---------------------------------------------------------------------------------------------------
# The docs as they are


def test_every_docs_reference_names_its_symbol_at_its_line() -> None:
    index = SourceIndex()
    problems = [p for doc in doc_files() for p in problems_in(doc, index)]
    assert not problems, "\n".join(problems)


def test_the_reading_a_variant_pages_are_read() -> None:
    """Guards against a parser that finds nothing (which would pass the test above vacuously)."""
    references, _ = parse_doc(DOCS_DIR / "architecture.md")
    lined = [r for r in references if r.line is not None]
    assert len(lined) >= 40, f"only {len(lined)} line references parsed in docs/architecture.md"
    assert any(r.symbol == "BertForMaskedLM.forward" for r in lined)


# ---------------------------------------------------------------------------------------------------
# The checker and the fixer, on a hand-made package and doc

PACKAGE_SOURCE = """\
import functools

LIMIT = 3


class Head:
    kind: str = "mlm"

    @functools.cache
    def forward(self, x):
        return x

    class Output:
        pass


def helper():
    def inner():
        pass
    local = 1
    return inner
"""


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, SourceIndex]:
    package = tmp_path / "hf_variants"
    (package / "models" / "toy").mkdir(parents=True)
    (package / "models" / "toy" / "modeling_toy.py").write_text(PACKAGE_SOURCE)
    (package / "models" / "other").mkdir(parents=True)
    (package / "models" / "other" / "modeling_toy.py").write_text("")
    (package / "models" / "toy" / "unique.py").write_text(PACKAGE_SOURCE)
    (tmp_path / "docs").mkdir()
    return tmp_path, SourceIndex(tmp_path, package)


def _doc(root: Path, text: str) -> Path:
    doc = root / "docs" / "page.md"
    doc.write_text(text)
    return doc


def _problems(root: Path, index: SourceIndex, text: str) -> list[str]:
    return problems_in(_doc(root, text), index)


def test_symbols_are_qualified_and_cover_decorators_assignments_and_nesting() -> None:
    symbols = symbols_of(PACKAGE_SOURCE)
    assert symbols["Head.forward"] == [Symbol(10, frozenset({9, 10}))]
    assert symbols["Head.Output"][0].def_line == 13
    assert symbols["Head.kind"][0].def_line == 7
    assert symbols["LIMIT"][0].def_line == 3
    assert symbols["helper.inner"][0].def_line == 18
    assert "helper.local" not in symbols and "local" not in symbols


def test_correct_references_pass_in_every_accepted_form(tree: tuple[Path, SourceIndex]) -> None:
    root, index = tree
    text = (
        "`unique.py:6` `Head` and `:9` `Head.forward` (its decorator) or `:10` `Head.forward`;\n"
        "`models/toy/modeling_toy.py:17` `helper`, `hf_variants/models/toy/unique.py:3` `LIMIT`,\n"
        "`toy/modeling_toy.py` `Head.Output`.\n"
    )
    assert problems_in(_doc(root, text), index, names=True) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("`unique.py:7` `Head.forward`", "defines it at line 10, not 7"),
        ("`unique.py:10` `Head.backward`", "no `Head.backward`"),
        ("`missing.py:1` `Head`", "no file 'missing.py'"),
        ("`modeling_toy.py:6` `Head`", "names 2 files"),
        ("`unique.py:6`, the head", "names no symbol"),
        ("the forward (`:10` `Head.forward`)", "has no file"),
        ("`unique.py:6` `Head`\n\nthen `:10` `Head.forward`", "has no file"),  # a paragraph ends the file's scope
        ("`unique.py:6-10` `Head`", "not a checked reference"),
        ("see unique.py:10 here", "not a checked reference"),
    ],
)
def test_each_broken_reference_is_reported_with_its_doc_line(
    tree: tuple[Path, SourceIndex], text: str, expected: str
) -> None:
    root, index = tree
    problems = _problems(root, index, "# Title\n\n" + text + "\n")
    assert len(problems) == 1 and expected in problems[0], problems
    assert problems[0].startswith(f"docs/page.md:{3 + text.count(chr(10))}:"), problems  # the broken line


def test_names_without_a_line_are_checked_only_when_asked(tree: tuple[Path, SourceIndex]) -> None:
    root, index = tree
    doc = _doc(root, "`toy/unique.py` `Head.missing` and `unique.py` `Head.Output`\n")
    assert problems_in(doc, index) == []
    problems = problems_in(doc, index, names=True)
    assert len(problems) == 1 and "no `Head.missing`" in problems[0], problems


def test_a_file_that_does_not_parse_is_named(tree: tuple[Path, SourceIndex]) -> None:
    root, index = tree
    (root / "hf_variants" / "models" / "toy" / "unique.py").write_text("<<<<<<< HEAD\nclass Head:\n")
    problems = _problems(root, index, "`unique.py:2` `Head`\n")
    assert len(problems) == 1 and "unique.py does not parse (line 1" in problems[0], problems


def test_fix_rewrites_moved_lines_only_and_a_second_run_changes_nothing(tree: tuple[Path, SourceIndex]) -> None:
    root, index = tree
    doc = _doc(
        root, "`unique.py:6` `Head`, `:1000` `Head.forward`, `:2` `helper` and `:9` `Head.forward`.\n`x.py:1` `y`\n"
    )
    changes, left = fix_doc(doc, index)
    assert len(changes) == 2 and len(left) == 1 and "no file 'x.py'" in left[0], (changes, left)
    first_line = "`unique.py:6` `Head`, `:10` `Head.forward`, `:17` `helper` and `:9` `Head.forward`."
    assert doc.read_text().splitlines()[0] == first_line
    assert fix_doc(doc, index) == ([], left)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--fix", action="store_true", help="rewrite each moved reference's line number in place")
    parser.add_argument("--names", action="store_true", help="also check `file.py` `Symbol` pairs without a line")
    parser.add_argument("docs", nargs="*", type=Path, help="docs to read (default: docs/**/*.md)")
    args = parser.parse_args(argv)
    index = SourceIndex()
    docs = [d.resolve() for d in args.docs] or doc_files()
    left: list[str] = []
    for doc in docs:
        if args.fix:
            changes, problems = fix_doc(doc, index)
            for change in changes:
                print(change)
        else:
            problems = problems_in(doc, index, args.names)
        left += problems
    print("\n".join(left) if left else f"every reference holds ({len(docs)} docs read)")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
