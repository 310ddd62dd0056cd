"""Typos the lexical side corrected, for fusion to count and the semantic side to embed.

The lexical engine matches a word no note holds to vocabulary words one or two edits away,
and a Chinese bigram no note holds to bigrams that sound alike (`search.recall`), and says
so on each match (`fuzzy`). Merged search used to ignore that
twice over: the corrected word did not count toward the lexical side's coverage, so a
typo halved its weight, and the embedding model was given the typo ("emebd youtube
vidoe"), which it reads as other words. Judged on three vaults
(`benchmarks/fusion_lovo.py`), reading the correction raised misspelt queries by 0.005 to
0.14 nDCG@10 and lowered no kind.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from rapidfuzz import fuzz
from rapidfuzz.distance import OSA

from langchain_vaultsearch.documents import lexical_matches
from langchain_vaultsearch.text.han_forms import fold_han
from langchain_vaultsearch.text.homophones import is_sound_alike_slip
from langchain_vaultsearch.text.tokenize import contains_cjk

__all__ = ["corrected_query", "covers"]

TYPO_SIMILARITY = 85.0
"""How alike (rapidfuzz ratio, 0-100) a typed word and its correction must be: the engine
takes any word no note holds for a typo, but "touching" is not a slip for "teaching"."""
MIN_TYPO_LENGTH = 5
"""Shorter words are never corrected: "rush", one letter from "rust", is a word."""
CORRECTION_HITS = 3
"""Lexical results whose matches are read for corrections (as for coverage)."""
_WORD = re.compile(r"\w+")


def covers(match: dict[str, Any], term: str) -> bool:
    """Whether a lexical match accounts for a query term.

    It does when it is the term itself or a longer word the term starts, or the word a
    typo of the term was corrected to.
    """
    found = str(match.get("query", ""))
    if found.startswith(term):
        return True
    return bool(match.get("fuzzy")) and _is_correction(term, found)


def corrected_query(query: str, lexical: Sequence[Document]) -> str:
    """The query with each typo the best lexical results corrected spelt as corrected.

    A word matched exactly (or as the start of a longer word) stays as typed, as do short
    words and other endings of one word ("extraverts" is not corrected to "extraverted");
    a query with nothing corrected comes back unchanged (the same string).
    """
    exact: set[str] = set()
    found: dict[str, None] = {}  # in the order of the results that matched them
    for doc in lexical[:CORRECTION_HITS]:
        for match in lexical_matches(doc):
            term = str(match.get("query", ""))
            if match.get("fuzzy"):
                found[term] = None
            else:
                exact.add(term)
    corrections = [term for term in found if term not in exact]
    if not corrections:
        return query

    def corrected(found: re.Match[str]) -> str:
        word = found.group(0)
        if contains_cjk(word):
            return _corrected_run(word, exact, corrections)
        lowered = word.lower()
        if any(term.startswith(lowered) for term in exact):
            return word
        best = max(corrections, key=lambda term: fuzz.ratio(lowered, term))
        return best if _is_correction(lowered, best) else word

    return _WORD.sub(corrected, query)


_ENDINGS = ("ing", "ed", "es", "s")
"""English endings: a word that differs from its "correction" only by one is no typo."""


def _corrected_run(run: str, exact: set[str], corrections: list[str]) -> str:
    """A CJK run with each bigram that was corrected by sound spelt as corrected.

    The run is indexed as its bigrams (`如睡` of `睡眠质量如睡`), and a correction
    (`入睡`) names one of them: the first bigram it is a slip of takes its characters.
    Where two corrections fit one bigram (`乐致` of `娱乐致死`: `乐至` and `乐之`), the
    one the better result matched wins.
    """
    chars = list(run)
    for start in range(len(chars) - 1):
        typed = fold_han("".join(chars[start : start + 2]))  # as the index spells it
        if typed in exact:
            continue
        for word in corrections:
            if is_sound_alike_slip(typed, word):
                chars[start : start + 2] = word
                break
    return "".join(chars)


def _is_correction(typed: str, word: str) -> bool:
    if contains_cjk(typed):
        return is_sound_alike_slip(typed, word)
    if len(typed) < MIN_TYPO_LENGTH:
        return False
    if fuzz.ratio(typed, word) < TYPO_SIMILARITY and not _swapped(typed, word):
        return False
    return _stem(typed) != _stem(word)  # "extraverts" is not a slip for "extraverted"


def _swapped(typed: str, word: str) -> bool:
    """Whether the two differ by two neighbouring letters typed in the wrong order.

    The commonest slip ("mokcs", "serach"), and one `fuzz.ratio` scores as two edits: a
    five-letter word with one swap is only 80% alike.
    """
    # Same letters, one OSA edit: a swap, not a substitution.
    return sorted(typed) == sorted(word) and OSA.distance(typed, word) == 1


def _stem(word: str) -> str:
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= MIN_TYPO_LENGTH - 1:
            return word[: -len(ending)]
    return word
