r"""The terms the two keyword scorers count, in the package's tokenizer or the seed's.

Seed 004 splits BM25 text with `text.lower().split()` (so `tax.` and `tax` differ and
Chinese is one token per sentence) and lets scikit-learn's default analyzer cut TF-IDF
terms (`\b\w\w+\b`, English stop words, unigrams and bigrams). `"unicode"` (the default)
uses the package's tokenizer for both: Unicode words, CJK bigrams, accent-folded variants,
tags with their hierarchy. `"whitespace"` is the seed's, kept for parity.

Both modes drop the package's English stop words (`expansion.terms.STOP_WORDS`) from the
TF-IDF terms, not scikit-learn's list, so keyword search needs no scikit-learn; the parity
tests give scikit-learn the same list.
"""

from __future__ import annotations

import itertools
import re
from typing import Literal

from langchain_vaultsearch.expansion.terms import STOP_WORDS
from langchain_vaultsearch.text.tokenize import term_occurrences

Tokenizer = Literal["unicode", "whitespace"]
TOKENIZERS: tuple[Tokenizer, ...] = ("unicode", "whitespace")

# scikit-learn's default `token_pattern`: words of two or more word characters.
_SEED_TFIDF_WORD = re.compile(r"(?u)\b\w\w+\b")


def bm25_terms(text: str, tokenizer: Tokenizer) -> list[str]:
    """The BM25 terms of a text, each occurrence (term frequency counts).

    Args:
        text: a chunk or a query.
        tokenizer: `"unicode"` or the seed's `"whitespace"`.
    """
    if tokenizer == "whitespace":
        return text.lower().split()
    return term_occurrences(text)


def tfidf_words(text: str, tokenizer: Tokenizer) -> list[str]:
    """The TF-IDF unigrams of a text, in order, stop words removed.

    Args:
        text: a chunk or a query.
        tokenizer: `"unicode"` or the seed's `"whitespace"`.
    """
    if tokenizer == "whitespace":
        words = _SEED_TFIDF_WORD.findall(text.lower())
    else:
        words = term_occurrences(text)
    return [word for word in words if word not in STOP_WORDS]


def tfidf_terms(text: str, tokenizer: Tokenizer) -> list[str]:
    """The TF-IDF features of a text: its unigrams, then the bigrams of adjacent ones.

    As scikit-learn's `TfidfVectorizer(ngram_range=(1, 2), stop_words=...)` does, the
    bigrams join words that are adjacent once stop words are gone.

    Args:
        text: a chunk or a query.
        tokenizer: `"unicode"` or the seed's `"whitespace"`.
    """
    kept = tfidf_words(text, tokenizer)
    return kept + [f"{a} {b}" for a, b in itertools.pairwise(kept)]


def check_tokenizer(tokenizer: str) -> Tokenizer:
    """The tokenizer name, or a `ValueError` naming the accepted ones."""
    if tokenizer == "unicode":
        return "unicode"
    if tokenizer == "whitespace":
        return "whitespace"
    msg = f"tokenizer must be one of {', '.join(TOKENIZERS)}, not {tokenizer!r}"
    raise ValueError(msg)
