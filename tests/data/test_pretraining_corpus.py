"""The pretraining corpus: markup cleaners on real-looking snippets, deduplication, the
document-level split, the Arrow cache, and (slow) a real fetch of a small Debian package."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading

import datasets
import pytest

from hf_variants.data import load_named_dataset, pretraining_corpus
from hf_variants.data.doc_sources import DocSource
from hf_variants.data.markup import (
    html_sections,
    html_to_paragraphs,
    is_boilerplate,
    is_prose,
    pod_to_paragraphs,
    rst_to_paragraphs,
)
from hf_variants.data.pretraining_corpus import (
    deduplicate,
    fetch_debian_package,
    is_validation_document,
    load_pretraining_corpus,
)

# Shaped like Documentation/PCI/pci.rst and the Python library docs.
RST = """\
.. SPDX-License-Identifier: GPL-2.0

.. _pci_howto:

==============================
How To Write Linux PCI Drivers
==============================

:Authors: - Martin Mares <mj@ucw.cz>

The world of PCI is vast and full of (mostly unpleasant) surprises. Use :c:func:`pci_enable_device`
and ``pci_set_master()`` as described in `the PCI book <https://example.org>`_.

- Enable the device before touching any of its registers.
- Request MMIO/IOP resources
  from the kernel, then map them.

A typical driver probes like this (as root):::

    static int probe(struct pci_dev *dev)
    {
            return 0;
    }

.. code-block:: c

   pci_disable_device(dev);

.. note::
   The **probe** function is called in process context, so it may sleep.

+--------+--------+
| name   | value  |
+--------+--------+

=====  =====
col a  col b
=====  =====
1      2
=====  =====

Tables are gone and this paragraph after them stays.
"""


def test_rst_cleaner_keeps_prose_and_drops_code_tables_comments():
    paragraphs = rst_to_paragraphs(RST)
    assert paragraphs == [
        "How To Write Linux PCI Drivers",
        "The world of PCI is vast and full of (mostly unpleasant) surprises. Use pci_enable_device and "
        "pci_set_master() as described in the PCI book.",
        "Enable the device before touching any of its registers.",
        "Request MMIO/IOP resources from the kernel, then map them.",
        "A typical driver probes like this (as root):",
        "The probe function is called in process context, so it may sleep.",
        "Tables are gone and this paragraph after them stays.",
    ]


HTML = """<!DOCTYPE html><html lang="en" class="sidebar-visible"><head><title>Making queries &mdash; Django</title>
<script>var x = 1;</script><style>p {color: red}</style></head>
<body><nav class="related"><ul><li><a href="index.html">Home</a> previous page next page link</li></ul></nav>
<div class="document"><div class="body" role="main">
<h1>Making queries<a class="copiable-link" href="#q"> ¶</a></h1>
<p>Once you&#8217;ve created your <code class="docutils literal">data models</code>, Django gives you a
database-abstraction API that lets you create objects.<p>An unclosed paragraph is still a paragraph here.
<div class="highlight-python"><pre>Entry.objects.filter(pub_date__year=2006)</pre></div>
<table><tr><td>a table cell that is not prose at all</td></tr></table>
<ul><li>First item of a list with enough words.</li><li>Second item, also long enough.</li></ul>
</div></div>
<div class="sphinxsidebar" role="navigation"><p>Search the documentation for these words</p></div>
<footer><p>Copyright Django Software Foundation and contributors.</p></footer></body></html>"""


def test_html_cleaner_keeps_the_body_and_drops_navigation_code_and_tables():
    title, paragraphs = html_to_paragraphs(HTML)
    assert title == "Making queries — Django"
    assert paragraphs == [
        "Making queries",
        "Once you’ve created your data models, Django gives you a database-abstraction API that lets you "
        "create objects.",
        "An unclosed paragraph is still a paragraph here.",
        "First item of a list with enough words.",
        "Second item, also long enough.",
    ]


def test_html_sections_cut_a_single_page_manual_into_chapters():
    page = (
        "<html><body><h1>Manual</h1><p>Front matter text.</p><h2>1 Intro</h2><p>Intro text.</p>"
        "<h3>1.1 Sub</h3><p>Sub text.</p><h2>2 Usage</h2><p>Usage text.</p></body></html>"
    )
    assert html_sections(page, level=2) == [
        ("Manual", ["Manual", "Front matter text."]),  # h1 is "level 2 or above" too
        ("1 Intro", ["1 Intro", "Intro text.", "1.1 Sub", "Sub text."]),
        ("2 Usage", ["2 Usage", "Usage text."]),
    ]
    with pytest.raises(ValueError, match="heading level"):
        html_sections(page, level=0)


POD = """\
=encoding utf8

=head1 NAME

perlsub - Perl subroutines

=head1 DESCRIPTION

Like many languages, B<Perl> provides for user-defined subroutines; see
L<perlfunc/local> and L<the syntax|perlsyn>. Compare with C<< $a <=> $b >> and E<lt>STDINE<gt>.X<subroutine>
Here documents (C<print <<EOF;>) end at the delimiter.

    sub max { my $max = shift; }

=over 4

=item *

Arguments arrive in the array @_ as aliases.

=back

=begin html

<p>Only for HTML readers.</p>

=end html

=head1 AUTHOR

Larry Wall wrote this a long time ago.

=cut

sub code_after_cut { 1 }
"""


def test_pod_cleaner_resolves_codes_and_drops_verbatim_boilerplate_and_code():
    assert pod_to_paragraphs(POD) == [
        "NAME",
        "perlsub - Perl subroutines",
        "DESCRIPTION",
        "Like many languages, Perl provides for user-defined subroutines; see local in perlfunc and the "
        "syntax. Compare with $a <=> $b and <STDIN>. Here documents (print <<EOF;) end at the delimiter.",
        "Arguments arrive in the array @_ as aliases.",
    ]


def test_is_prose_separates_sentences_from_code_headings_and_commands():
    assert is_prose("The probe function is called in process context, so it may sleep.")
    assert not is_prose("Making queries")  # a heading
    assert not is_prose("x = foo(bar, baz) + qux[0] * 2;")
    assert not is_prose("$ git commit -m 'x' --amend --no-edit")
    assert not is_prose("0x10 0x20 0x30 0x40 0x50 0x60")
    assert is_boilerplate("Permission is granted to copy, distribute and/or modify this document under the GFDL.")
    assert is_boilerplate("Copyright (c) 2004 The Authors. All rights reserved.")
    assert is_boilerplate("Next: What’s New in SQLAlchemy 1.0?")
    assert not is_boilerplate("The copyright file of a package lists its licences.")


def test_deduplicate_drops_repeated_paragraphs_short_and_duplicate_documents():
    boiler = "This page is part of the manual and is maintained by its authors."
    body = " ".join(["word"] * 40)
    documents = [
        ("a", [boiler, "Yes.", body]),
        ("a", [boiler, "Yes.", "Another page with enough distinct words " + body]),  # boiler dropped here
        ("b", [boiler, "Too short."]),  # only a repeat and a short line remain: dropped
        ("b", ["Yes.", body.replace("word", "other")]),
        ("b", ["Yes.", body.replace("word", "other")]),  # the same document again
    ]
    stats: dict = {}
    kept = list(deduplicate(documents, stats))
    assert [source for source, _ in kept] == ["a", "a", "b"]
    assert kept[0][1] == f"{boiler}\n\nYes.\n\n{body}"
    assert boiler not in kept[1][1] and kept[1][1].startswith("Yes.\n\n")  # short lines may repeat
    assert stats["a"] == {"duplicate_paragraphs": 1}
    # the 5th document's long paragraph is a repeat, so it falls under the length limit first
    assert stats["b"] == {"duplicate_paragraphs": 2, "short_documents": 2}


def test_validation_split_is_by_document_hash_deterministic_and_near_the_fraction():
    texts = [f"document number {index} with its own text" for index in range(20_000)]
    first = [is_validation_document("src", text) for text in texts]
    assert first == [is_validation_document("src", text) for text in reversed(texts)][::-1]  # order-free
    assert 0.007 < sum(first) / len(texts) < 0.013  # 1% expected: 200 ± 14 (binomial std)
    assert sum(is_validation_document("src", text, 0.5) for text in texts) > 9_000
    with pytest.raises(ValueError, match="validation fraction"):
        is_validation_document("src", "text", 1.5)


def test_doc_source_selects_files_by_glob_and_exclude(tmp_path):
    for name in ("a/one.html", "a/genindex.html", "a/sub/two.html", "b/three.html"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"<html><title>{name}</title><body><p>Text of {name}.</p></body></html>")
    source = DocSource("t", "pkg", "MIT", "html", ("a/**/*.html",), exclude=r"genindex")
    assert [path.relative_to(tmp_path).as_posix() for path in source.files(tmp_path)] == [
        "a/one.html",
        "a/sub/two.html",
    ]
    assert list(source.documents(tmp_path))[0] == ("a/one.html", ["Text of a/one.html."])
    with pytest.raises(ValueError, match="kind must be one of"):
        DocSource("t", "pkg", "MIT", "markdown", ("*.md",))


def test_an_unpacked_package_is_pruned_to_the_files_read(tmp_path):
    tree = tmp_path / "debian" / "pkg"
    for name in ("doc/a.html", "doc/img/b.png", "doc/fr/a.html", "doc/copyright"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("<p>Text.</p>")
    (tree / ".unpacked").write_text("pkg_1.0_all.deb\n")  # as fetch_debian_package leaves it
    source = DocSource("t", "pkg", "MIT", "html", ("doc/*.html",))
    assert pretraining_corpus._pruned_package_tree(source, tmp_path) == tree
    left = sorted(path.relative_to(tree).as_posix() for path in tree.rglob("*") if path.is_file())
    assert left == [".pruned", ".unpacked", "doc/a.html", "doc/copyright"]


def test_bad_sources_are_refused_with_the_known_names(tmp_path):
    with pytest.raises(ValueError, match="known sources: linux-doc"):
        load_pretraining_corpus(tmp_path, sources=["no-such-source"])
    with pytest.raises(ValueError, match="list of source names"):
        load_pretraining_corpus(tmp_path, sources="lee")


def test_a_small_build_is_split_by_document_saved_as_arrow_and_reused(tmp_path, monkeypatch):
    corpus = load_pretraining_corpus(tmp_path, sources=["lee", "wikipedia"], validation_fraction=0.1)
    assert set(corpus) == {"train", "validation"}
    assert set(corpus["train"].select(range(40))["source"]) == {"lee", "wikipedia"}  # rows shuffled
    assert corpus["train"].column_names == ["text", "source"]
    train, validation = set(corpus["train"]["text"]), set(corpus["validation"]["text"])
    assert not train & validation and 15 <= len(validation) <= 65  # ~10% of 290 articles + 98 pages
    assert all(
        is_validation_document(source, text, 0.1)
        for source, text in zip(corpus["validation"]["source"], corpus["validation"]["text"])
    )
    assert corpus["train"].cache_files  # memory-mapped Arrow, not an in-memory table
    stats = pretraining_corpus.pretraining_corpus_stats(tmp_path, ["lee", "wikipedia"], 0.1)
    assert stats["train_documents"] == corpus["train"].num_rows
    lee_train = [text for text, source in zip(corpus["train"]["text"], corpus["train"]["source"]) if source == "lee"]
    assert stats["per_source"]["lee"]["train_words"] == sum(len(text.split()) for text in lee_train)

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the saved corpus should have been reused")

    monkeypatch.setattr(pretraining_corpus, "build_pretraining_corpus", no_rebuild)
    again = load_pretraining_corpus(tmp_path, sources=["lee", "wikipedia"], validation_fraction=0.1)
    assert list(again["validation"]["text"]) == list(corpus["validation"]["text"])


def test_a_second_process_waits_for_the_build_and_reads_it(tmp_path):
    # Two runs started together must not build into (or prune) the same folders at once: while
    # the build lock is held, a load waits; then it reads the finished build.
    from filelock import FileLock

    target = pretraining_corpus.corpus_path(tmp_path, ["lee"], 0.1)
    target.parent.mkdir(parents=True)
    loaded = {}
    waiter = threading.Thread(target=lambda: loaded.update(corpus=load_pretraining_corpus(tmp_path, ["lee"], 0.1)))
    with FileLock(str(target.with_name(target.name + ".lock"))):
        waiter.start()
        waiter.join(timeout=2.0)
        assert waiter.is_alive() and not loaded  # blocked on the lock, nothing built yet
        assert not target.exists()
    waiter.join(timeout=120)
    assert not waiter.is_alive() and (target / "dataset_dict.json").exists()
    stats = pretraining_corpus.pretraining_corpus_stats(tmp_path, ["lee"], 0.1)
    assert loaded["corpus"]["train"].num_rows == stats["train_documents"] > 200  # of lee's 300 articles


def test_the_built_default_corpus_loads_if_it_is_cached():
    path = pretraining_corpus.corpus_path()
    if not (path / "dataset_dict.json").exists():
        pytest.skip(f"the full corpus is not built in {path} (build: see docs/corpus.md)")
    corpus = load_named_dataset("hf_variants/pretraining_corpus")
    stats = pretraining_corpus.pretraining_corpus_stats()
    assert stats["train_words"] + stats["validation_words"] >= 10_000_000
    rows = corpus["validation"].select(range(5))
    assert all(text.strip() and "<p>" not in text for text in rows["text"])


def _require_debian_registry(error: RuntimeError) -> None:
    message = str(error)
    if any(
        sign in message
        for sign in (
            "Could not resolve",
            "Temporary failure",
            "Unable to connect",
            "Failed to fetch",
            "No such file or directory: 'apt-get'",
        )
    ):
        pytest.skip(f"the Debian archive is not reachable here: {message[:200]}")


@pytest.mark.slow
def test_fetch_a_real_debian_package_and_build_from_it(tmp_path):
    try:
        root = fetch_debian_package("gnu-standards", tmp_path)
    except RuntimeError as error:
        _require_debian_registry(error)
        raise
    assert (root / "usr/share/doc/gnu-standards/standards.html").exists()
    corpus = load_pretraining_corpus(tmp_path, sources=["gnu-standards"], validation_fraction=0.2)
    texts = list(corpus["train"]["text"]) + list(corpus["validation"]["text"])
    assert len(texts) >= 20  # chapters of the two manuals
    assert any("GNU" in text for text in texts) and not any("<" + "div" in text for text in texts)
    assert not list(root.rglob("*.pdf.gz"))  # pruned to the pages read
    shutil.rmtree(root)


@pytest.mark.slow
def test_an_unknown_package_fails_with_its_name(tmp_path):
    with pytest.raises(RuntimeError, match="hf-variants-no-such-package"):
        fetch_debian_package("hf-variants-no-such-package", tmp_path)


def _small_corpus() -> datasets.DatasetDict:
    features = datasets.Features({"text": datasets.Value("string"), "source": datasets.Value("string")})
    train = datasets.Dataset.from_dict(
        {"text": [f"doc {i}" for i in range(6)], "source": ["a", "b", "a", "c", "b", "a"]}, features=features
    )
    validation = datasets.Dataset.from_dict({"text": ["held a", "held b"], "source": ["a", "b"]}, features=features)
    return datasets.DatasetDict({"train": train, "validation": validation})


def test_upsampling_repeats_only_the_named_sources_training_documents():
    corpus = _small_corpus()
    mixed = pretraining_corpus.upsample_sources(corpus, {"b": 3})
    texts = list(mixed["train"]["text"])
    assert sorted(texts) == sorted(["doc 0", "doc 2", "doc 3", "doc 5"] + ["doc 1", "doc 4"] * 3)
    assert texts != sorted(texts)  # repeated documents are spread through the rows, not appended
    assert list(mixed["validation"]["text"]) == ["held a", "held b"]  # never repeated
    assert list(pretraining_corpus.upsample_sources(corpus, {"b": 3})["train"]["text"]) == texts  # fixed order
    with pytest.raises(ValueError, match="does not hold"):
        pretraining_corpus.upsample_sources(corpus, {"movie_reviews": 2})
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="whole number"):
            pretraining_corpus.upsample_sources(corpus, {"a": bad})


def test_movie_reviews_are_opt_in_and_the_default_corpus_key_is_unchanged(tmp_path):
    assert "movie_reviews" in pretraining_corpus.SOURCE_NAMES
    assert "movie_reviews" not in pretraining_corpus.DEFAULT_SOURCES
    assert pretraining_corpus.corpus_path(tmp_path) == pretraining_corpus.corpus_path(
        tmp_path, pretraining_corpus.DEFAULT_SOURCES
    )
    # The key of the corpus every run before the reviews were added was trained on.
    assert pretraining_corpus.corpus_path(tmp_path).name == "v2-cfc6906f3d"


def test_review_sentences_are_written_back_as_ordinary_text():
    from hf_variants.data.corpora import _detokenize_review_sentence

    tokenized = (
        "films adapted from comic books have had plenty of success , whether they're about superheroes ( batman ) . "
    )
    assert (
        _detokenize_review_sentence(tokenized)
        == "Films adapted from comic books have had plenty of success, whether they're about superheroes (batman)."
    )
    assert (
        _detokenize_review_sentence("i think i'm right , and it is 100 % fun !")
        == "I think I'm right, and it is 100% fun!"
    )


def test_movie_reviews_share_no_long_ngram_with_the_sentiment_evaluation():
    from hf_variants.data.corpora import CONTAMINATION_NGRAM, movie_review_documents, word_ngrams
    from hf_variants.data.labelled import load_rt_polarity

    documents = movie_review_documents()
    assert len(documents) == 1_500
    words = sum(len(paragraph.split()) for document in documents for paragraph in document.paragraphs)
    assert 900_000 <= words <= 1_150_000  # 1.12 M tokens before detokenizing
    evaluation = {
        gram
        for split in load_rt_polarity().values()
        for sentence in split["sentence"]
        for gram in word_ngrams(sentence, CONTAMINATION_NGRAM)
    }
    review_grams = set().union(
        *(word_ngrams(paragraph, CONTAMINATION_NGRAM) for document in documents for paragraph in document.paragraphs)
    )
    # Sentences are checked one by one, so only an n-gram spanning two joined sentences could remain.
    leftovers = review_grams & evaluation
    assert len(leftovers) <= 5, sorted(leftovers)[:5]


# ----------------------------------------------------------------------------- pinned versions
# A fresh machine rebuilds the corpus from the Debian archive, which ships security revisions as
# they come (linux-doc-6.12 6.12.117 -> 6.12.118 changed 16 words and every zoo tokenizer): each
# package is read at the version docs/corpus.md lists.


def test_every_documentation_package_is_pinned_to_the_version_docs_corpus_lists():
    import re

    from hf_variants.data.doc_sources import DOC_SOURCES
    from tests.common.paths import REPO_ROOT

    table = (REPO_ROOT / "docs" / "corpus.md").read_text(encoding="utf-8")
    listed = {m[1]: (m[2], m[3]) for m in re.finditer(r"^\| ([a-z0-9.-]+) \| ([a-z0-9.+-]+) \(([^)]+)\)", table, re.M)}
    assert {source.name: (source.package, source.version) for source in DOC_SOURCES} == listed


def test_a_pinned_deb_is_downloaded_and_named_at_its_version(tmp_path):
    from hf_variants.data.fetch import PackageSource, deb_archive_prefix

    pinned = PackageSource(name="g", package="git-doc", version="1:2.39.5-0+deb12u3", kind="deb", members=())
    assert pinned.download_command(tmp_path) == ["apt-get", "download", "git-doc=1:2.39.5-0+deb12u3"]
    assert deb_archive_prefix("git-doc", "1:2.39.5-0+deb12u3") == "git-doc_1%3a2.39.5-0+deb12u3_"  # as apt-get names it
    assert PackageSource("g", "git-doc", "", "deb", ()).download_command(tmp_path) == ["apt-get", "download", "git-doc"]


def _build_deb(folder, package: str, version: str, text: str):
    """A real (tiny) .deb, as apt-get download leaves it: <package>_<version>_all.deb."""
    from hf_variants.data.fetch import deb_archive_prefix

    tree = folder / f"{package}-{version}"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text(
        f"Package: {package}\nVersion: {version}\nArchitecture: all\nMaintainer: t <t@t>\nDescription: t\n"
    )
    (tree / "usr/share/doc" / package).mkdir(parents=True)
    (tree / "usr/share/doc" / package / "page.html").write_text(text)
    archive = folder / f"{deb_archive_prefix(package, version)}all.deb"
    subprocess.run(
        ["dpkg-deb", "--build", "--root-owner-group", str(tree), str(archive)], check=True, capture_output=True
    )
    shutil.rmtree(tree)
    return archive


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb to build a .deb")
def test_a_tree_unpacked_from_another_revision_is_fetched_again_at_the_pinned_one(tmp_path):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    _build_deb(downloads, "pkg", "1.0-1", "<p>the old revision</p>")
    _build_deb(downloads, "pkg", "1.0-2", "<p>the new revision</p>")
    page = "usr/share/doc/pkg/page.html"
    newer = fetch_debian_package("pkg", tmp_path, "1.0-2")
    assert (newer / ".unpacked").read_text().strip() == "pkg_1.0-2_all.deb"
    assert "new revision" in (newer / page).read_text()
    pinned = fetch_debian_package("pkg", tmp_path, "1.0-1")  # the cache holds 1.0-2: not reused
    assert (pinned / ".unpacked").read_text().strip() == "pkg_1.0-1_all.deb"
    assert "old revision" in (pinned / page).read_text()
    assert fetch_debian_package("pkg", tmp_path, "1.0-1") == pinned  # now reused


def test_a_saved_build_is_reused_only_if_it_read_every_package_at_its_pin(tmp_path):
    from hf_variants.data.doc_sources import DOC_SOURCES

    source = DOC_SOURCES[0]  # linux-doc
    build = tmp_path / "build"
    build.mkdir()

    def saved(packages):
        stats = {"version": pretraining_corpus.CORPUS_VERSION, "sources": [source.name]}
        if packages is not None:
            stats["packages"] = packages
        (build / "corpus_stats.json").write_text(json.dumps(stats))
        return pretraining_corpus._built_from_pinned_versions(build, [source.name])

    pinned = f"{source.package}_{source.version}_all.deb"
    assert saved({source.package: pinned})
    assert not saved({source.package: f"{source.package}_999.0-1_all.deb"})  # another revision
    assert not saved(None)  # built before the pins: which revision it read is unknown
    assert not saved({})
    assert pretraining_corpus._built_from_pinned_versions(build, ["lee"])  # no package to pin
