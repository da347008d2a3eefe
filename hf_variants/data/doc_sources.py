"""The Debian documentation packages of the pretraining corpus: which files of each are read,
in which markup, and under which licence.

A package is fetched with ``apt-get download`` and unpacked with ``dpkg -x`` (never installed)
into ``cache_dir()/debian/<package>/``. Only English prose pages are read: translations, API
listings generated from code, indexes, search pages and single-page duplicates of the same
manual are excluded by path.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .markup import html_sections, html_to_paragraphs, pod_to_paragraphs, rst_to_paragraphs

FORMATS = ("rst", "html", "html-chapters", "pod")


@dataclass(frozen=True)
class DocSource:
    """Files of one Debian package read as documents.

    ``include``: glob patterns relative to the unpacked package root; ``exclude``: a regex searched
    in each matched path (relative, with ``/``). ``kind``: ``rst`` / ``html`` / ``pod`` (one file,
    one document) or ``html-chapters`` (a single-page manual cut at its h1/h2 headings, one
    document per chapter).
    """

    name: str
    package: str
    licence: str
    kind: str
    include: tuple[str, ...]
    exclude: str = ""
    description: str = ""
    # The Debian version read (docs/corpus.md's table): ``apt-get download package=version``, so a
    # rebuild on a fresh machine reads the same text even after the archive ships a newer revision
    # (linux-doc-6.12 6.12.117 -> 6.12.118 changed 16 words and the zoo's tokenizers). Empty: the
    # distribution's current version (tests' stand-ins only).
    version: str = ""

    def __post_init__(self) -> None:
        if self.kind not in FORMATS:
            raise ValueError(f"source {self.name}: kind must be one of {FORMATS}, got {self.kind!r}")

    def files(self, root: Path) -> list[Path]:
        """The matched files under ``root`` (the unpacked package), sorted, without duplicates."""
        exclude = re.compile(self.exclude) if self.exclude else None
        found: set[Path] = set()
        for pattern in self.include:
            for path in root.glob(pattern):
                relative = path.relative_to(root).as_posix()
                if path.is_file() and not (exclude and exclude.search(relative)):
                    found.add(path)
        return sorted(found)

    def documents(self, root: Path) -> Iterator[tuple[str, list[str]]]:
        """``(title, paragraphs)`` per document, in file order (paragraphs not yet filtered)."""
        for path in self.files(root):
            text = read_text(path)
            relative = path.relative_to(root).as_posix()
            if self.kind == "rst":
                yield relative, rst_to_paragraphs(text)
            elif self.kind == "pod":
                yield relative, pod_to_paragraphs(text)
            elif self.kind == "html":
                title, paragraphs = html_to_paragraphs(text)
                yield title or relative, paragraphs
            else:
                for index, (heading, paragraphs) in enumerate(html_sections(text, level=2)):
                    yield f"{relative}: {heading or index}", paragraphs


def read_text(path: Path) -> str:
    """A file's text (gunzipped if it ends in .gz): UTF-8, or Latin-1 where it is not UTF-8."""
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


_SPHINX_GENERATED = (
    r"(?:^|/)(?:genindex[^/]*|search|py-modindex|modindex|index-\w+)\.html$|/_modules/|/_sources/|/_static/"
)

DOC_SOURCES: tuple[DocSource, ...] = (
    DocSource(
        "linux-doc",
        "linux-doc-6.12",
        "GPL-2.0 (per-file SPDX: some GPL-2.0+, GFDL-1.1+, CC-BY-4.0)",
        "rst",
        ("usr/share/doc/linux-doc-*/Documentation/**/*.rst.gz",),
        exclude=r"/translations/|/output/",
        description="Linux kernel documentation (reStructuredText sources)",
        version="6.12.117-1~deb12u1",
    ),
    DocSource(
        "python-doc",
        "python3.11-doc",
        "PSF-2.0",
        "rst",
        ("usr/share/doc/python3.*/html/_sources/**/*.rst.txt",),
        exclude=r"^usr/share/doc/python3\.\d+-doc/",
        description="Python 3.11 documentation (reStructuredText sources)",
        version="3.11.2-6+deb12u9",
    ),
    DocSource(
        "sphinx-doc",
        "sphinx-doc",
        "BSD-2-Clause",
        "rst",
        ("usr/share/doc/sphinx-doc/html/_sources/**/*.rst.txt",),
        description="Sphinx documentation (reStructuredText sources)",
        version="5.3.0-4",
    ),
    DocSource(
        "django-doc",
        "python-django-doc",
        "BSD-3-Clause",
        "html",
        ("usr/share/doc/python-django-doc/html/**/*.html",),
        exclude=_SPHINX_GENERATED,
        description="Django 3.2 documentation",
        version="3:3.2.25-0+deb12u7",
    ),
    DocSource(
        "sqlalchemy-doc",
        "python-sqlalchemy-doc",
        "MIT",
        "html",
        ("usr/share/doc/python-sqlalchemy-doc/html/**/*.html",),
        exclude=_SPHINX_GENERATED,
        description="SQLAlchemy 1.4 documentation",
        version="1.4.46+ds1-1",
    ),
    DocSource(
        "postgresql-doc",
        "postgresql-doc-15",
        "PostgreSQL",
        "html",
        ("usr/share/doc/postgresql-doc-15/html/*.html",),
        exclude=r"(?:^|/)bookindex\.html$",
        description="PostgreSQL 15 manual",
        version="15.20-0+deb12u1",
    ),
    DocSource(
        "perl-doc",
        "perl-doc",
        "GPL-1.0+ or Artistic-1.0",
        "pod",
        ("usr/share/perl/*/pod/*.pod",),
        description="Perl 5.36 core documentation (POD)",
        version="5.36.0-7+deb12u4",
    ),
    DocSource(
        "git-doc",
        "git-doc",
        "GPL-2.0",
        "html",
        ("usr/share/doc/git-doc/**/*.html",),
        exclude=r"(?:^|/)(?:index|git-gui|gitk)\.html$|RelNotes",
        description="Git manual pages and guides",
        version="1:2.39.5-0+deb12u3",
    ),
    DocSource(
        "rust-doc",
        "rust-doc",
        "MIT or Apache-2.0",
        "html",
        tuple(
            f"usr/share/doc/rust-doc/html/{book}/**/*.html"
            for book in (
                "book",
                "reference",
                "nomicon",
                "edition-guide",
                "embedded-book",
                "rust-by-example",
                "rustc",
                "rustdoc",
                "cargo",
            )
        ),
        exclude=r"/(?:print|toc|404|SUMMARY)\.html$|/2018-edition/|/first-edition/|/second-edition/",
        description="The Rust books (The Rust Programming Language, the Reference, the Nomicon, Rust by "
        "Example, the Cargo, rustc and rustdoc books); not the generated API pages",
        version="1.63.0+dfsg1-2",
    ),
    DocSource(
        "gimp-help",
        "gimp-help-en",
        "GFDL-1.2+",
        "html",
        ("usr/share/gimp/2.0/help/en/*.html",),
        description="The GIMP user manual (English)",
        version="2.10.34-2",
    ),
    DocSource(
        "debian-handbook",
        "debian-handbook",
        "GPL-2.0+ or CC-BY-SA-3.0",
        "html",
        ("usr/share/doc/debian-handbook/html/en-US/*.html",),
        exclude=r"/ix01\.html$|/index\.html$",
        description="The Debian Administrator's Handbook (English)",
        version="11.20220922",
    ),
    DocSource(
        "debian-reference",
        "debian-reference-en",
        "GPL-2.0+",
        "html",
        ("usr/share/debian-reference/*.en.html",),
        exclude=r"/index\.en\.html$",
        description="Debian Reference (English)",
        version="2.100",
    ),
    DocSource(
        "debian-policy",
        "debian-policy",
        "GPL-2.0+",
        "html",
        ("usr/share/doc/debian-policy/policy.html/*.html", "usr/share/doc/debian-policy/*.html"),
        exclude=r"/(?:index|search|genindex|README|policy|menu-policy|perl-policy)\.html$",
        description="Debian Policy Manual and related policies",
        version="4.6.2.0",
    ),
    DocSource(
        "developers-reference",
        "developers-reference",
        "MIT",
        "html",
        ("usr/share/developers-reference/*.html",),
        exclude=_SPHINX_GENERATED + r"|/index\.html$",
        description="Debian Developer's Reference",
        version="12.18",
    ),
    DocSource(
        "apache-doc",
        "apache2-doc",
        "Apache-2.0",
        "html",
        ("usr/share/doc/apache2-doc/manual/en/**/*.html",),
        exclude=r"/sitemap\.html$|/index\.html$|/quickreference\.html$",
        description="Apache HTTP Server 2.4 manual (English)",
        version="2.4.71-1~deb12u1",
    ),
    DocSource(
        "sqlite-doc",
        "sqlite3-doc",
        "public domain",
        "html",
        ("usr/share/doc/sqlite3/*.html", "usr/share/doc/sqlite3/**/*.html"),
        exclude=r"/c3ref/|/syntax/|/releaselog/|/(?:changes|docs|sitemap|keyword_index|toc|capi3ref|fileio)\.html$",
        description="SQLite documentation (not the generated C API and syntax-diagram pages)",
        version="3.40.1-2+deb12u2",
    ),
    DocSource(
        "lilypond-doc",
        "lilypond-doc-html",
        "GFDL-1.3+",
        "html",
        tuple(
            f"usr/share/doc/lilypond/html/Documentation/{manual}/*.html"
            for manual in ("learning", "notation", "usage", "extending", "essay", "contributor", "changes", "web")
        ),
        exclude=r"/index\.html$",
        description="LilyPond manuals (English; not the generated internals reference or snippets)",
        version="2.24.1-2",
    ),
    DocSource(
        "gnu-standards",
        "gnu-standards",
        "GFDL-1.3+ (no invariant sections)",
        "html-chapters",
        ("usr/share/doc/gnu-standards/*.html",),
        description="GNU Coding Standards and Information for GNU Maintainers (one document per chapter)",
        version="2022.03.23-0.1",
    ),
    DocSource(
        "bash-doc",
        "bash-doc",
        "GFDL-1.3+ / GPL-3.0+",
        "html-chapters",
        ("usr/share/doc/bash/bashref.html",),
        description="The Bash Reference Manual (one document per chapter)",
        version="5.2.15-2",
    ),
    DocSource(
        "erlang-doc",
        "erlang-doc",
        "Apache-2.0",
        "html",
        ("usr/share/doc/erlang-doc/**/*.html",),
        exclude=r"/java/|/(?:index|users_guide|part|book|warning|release_notes|notes)\.html$|/(?:wx|jinterface)-",
        description="Erlang/OTP documentation (user's guides and reference manuals; not the wx and Java bindings)",
        version="1:25.2.3+dfsg-1+deb12u4",
    ),
    DocSource(
        "nodejs-doc",
        "nodejs-doc",
        "MIT",
        "html",
        ("usr/share/doc/nodejs/api/*.html",),
        exclude=r"/(?:index|all)\.html$",
        description="Node.js 18 API documentation",
        version="18.20.4+dfsg-1~deb12u3",
    ),
    DocSource(
        "cmake-doc",
        "cmake-doc",
        "BSD-3-Clause",
        "rst",
        ("usr/share/doc/cmake-data/html/_sources/**/*.rst.txt",),
        description="CMake documentation (reStructuredText sources)",
        version="3.25.1-1",
    ),
    DocSource(
        "octave-doc",
        "octave-doc",
        "GPL-3.0+",
        "html",
        ("usr/share/doc/octave/octave.html/*.html",),
        exclude=r"/index\.html$|/(?:Concept|Function|Operator|Graphics-Properties)[-_]Index\.html$",
        description="The GNU Octave manual",
        version="7.3.0-2",
    ),
    DocSource(
        "zsh-doc",
        "zsh-doc",
        "MIT-like (zsh licence)",
        "html",
        ("usr/share/doc/zsh-common/html/*.html",),
        exclude=r"/(?:index|zsh_toc|zsh_abt|.*Index.*)\.html$",
        description="The Z Shell manual",
        version="5.9-4",
    ),
    DocSource(
        "pandas-doc",
        "python-pandas-doc",
        "BSD-3-Clause",
        "rst",
        ("usr/share/doc/python-pandas-doc/html/_sources/**/*.rst.txt",),
        exclude=r"/reference/|/generated/|/whatsnew/",
        description="pandas user guide and getting-started pages (reStructuredText sources; no API reference)",
        version="1.5.3+dfsg-2",
    ),
    DocSource(
        "sympy-doc",
        "python-sympy-doc",
        "BSD-3-Clause",
        "rst",
        ("usr/share/doc/python-sympy-doc/html/_sources/**/*.rst.txt",),
        description="SymPy documentation (reStructuredText sources)",
        version="1.11.1-1",
    ),
)
DOC_SOURCE_NAMES = tuple(source.name for source in DOC_SOURCES)
