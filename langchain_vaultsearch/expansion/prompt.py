"""The query-expansion prompt, and a lenient reader of the model's answer.

Both are pure text functions so that `QueryExpander` (the LangChain side) stays a thin
shell around a chat model and every parsing rule is tested without one. Seed 001 asks the
model for three things: `<salient>` terms copied from the query (they rank), `<queries>`
alternative phrasings and `<expanded>` related terms (both only widen recall).

Models do not always answer as asked, so the reader takes what it can: sections in any
order or case, a missing closing tag, code fences and prose around the XML, duplicates.
It keeps only terms that look like terms (the original's rule: letters, digits, `_`, `-`,
or a whole tag, at least `min_term_length` long; we also allow inner dots, `next.js`),
drops stop words and search verbs, and holds the model to "salient terms come from the
query": a salient term the query does not contain, or one that only occurs inside one of
the query's tags, is moved to the recall-only terms instead of steering the ranking.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from langchain_vaultsearch.expansion.terms import (
    CJK_STOP_CHARS,
    CJK_STOP_WORDS,
    STOP_WORDS,
    ExpandedQuery,
    extract_salient_terms,
    strip_tags,
)
from langchain_vaultsearch.text.han_forms import fold_han
from langchain_vaultsearch.text.tokenize import fold_accents
from langchain_vaultsearch.vault.markdown import extract_tags_from_query
from langchain_vaultsearch.vault.markdown_syntax import COMBINING_MARKS

MAX_VARIANTS_RANGE = (0, 10)
# Related terms asked for and kept; more mostly adds recall noise.
MAX_EXPANDED_TERMS = 5

_SECTIONS = ("salient", "queries", "expanded")
_NEXT_SECTION = "|".join(_SECTIONS)
_TERM = re.compile(r"<term\s*>(.*?)</term\s*>", re.IGNORECASE | re.DOTALL)
_QUERY = re.compile(r"<query\s*>(.*?)</query\s*>", re.IGNORECASE | re.DOTALL)
_W = rf"\w{COMBINING_MARKS}"
# The original's term shape (word characters and hyphens), plus inner dots: "next.js".
_VALID_WORD = re.compile(f"[{_W}-]+(?:\\.[{_W}-]+)*")
_WORD_CHARS = re.compile(f"[{_W}]+")
# Separators a model puts between several terms in one element: "piano, notes".
_TERM_SEPARATORS = re.compile(r"[\s,;、，；]+")
_QUOTES = "\"'`“”‘’«»"
_EDGE_PUNCTUATION = _QUOTES + "()[]{}.,;:!?*"

_PROMPT = """\
You help search a personal collection of markdown notes. Read the query and answer with XML only.

1. <salient>: the words of the query that say what to look for, copied from the query: nouns, \
names, technical terms and domain concepts. Copy tags such as #project/alpha exactly as typed. \
Leave out action verbs (find, search, get, show, 查找, buscar), pronouns (my, your), articles, \
prepositions and conjunctions. One word per <term>, in the language of the query.
2. <queries>: {queries_rule}
3. <expanded>: up to {max_terms} related words that are not in the query (synonyms, closely \
related concepts), one word per <term>.

Example query: "find my piano notes"
<salient><term>piano</term><term>notes</term></salient>
<queries><query>piano lesson notes</query><query>piano practice sheets</query></queries>
<expanded><term>music</term><term>sheet</term><term>practice</term><term>lesson</term></expanded>

Example query: "查找我的学习笔记"
<salient><term>学习</term><term>笔记</term></salient>
<queries><query>个人笔记文档</query></queries>
<expanded><term>复习</term><term>课程</term></expanded>

Query: "{query}"
"""


def build_expansion_prompt(query: str, max_variants: int) -> str:
    """The prompt for one query.

    Args:
        query: the user's query, trimmed.
        max_variants: how many alternative phrasings to ask for (0 asks for none).

    Returns:
        The prompt text (a single user message).
    """
    if max_variants > 0:
        queries_rule = (
            f"up to {max_variants} other ways to phrase the query that would find the same notes."
        )
    else:
        queries_rule = "leave empty."
    return _PROMPT.format(
        queries_rule=queries_rule, max_terms=MAX_EXPANDED_TERMS, query=query.replace("\n", " ")
    )


def parse_expansion_response(
    query: str, response: str, *, max_variants: int, min_term_length: int
) -> ExpandedQuery | None:
    """Read the model's answer into an expansion, leniently.

    Args:
        query: the query the model was asked about, trimmed.
        response: the model's text.
        max_variants: alternative phrasings kept at most.
        min_term_length: shortest term kept.

    Returns:
        The expansion (`source="llm"`), or None when the answer holds no usable salient
        term, phrasing or related term, so the caller falls back. When the model gave
        phrasings but no usable salient term, the salient terms are the query's own
        (`extract_salient_terms`); the query's tags are always salient.
    """
    query_tags = extract_tags_from_query(query)
    salient: list[str] = []
    demoted: list[str] = []
    salient_section = _section(response, "salient")
    if salient_section is not None:
        in_query = _squash(strip_tags(query, query_tags))
        for term in _valid_terms(_TERM.findall(salient_section), min_term_length):
            from_query = term in query_tags if term.startswith("#") else _squash(term) in in_query
            (salient if from_query else demoted).append(term)
    expanded_section = _section(response, "expanded")
    related = (
        _valid_terms(_TERM.findall(expanded_section), min_term_length)
        if expanded_section is not None
        else []
    )
    variants = _variants(query, response, max_variants)
    if not (salient or demoted or related or variants):
        return None
    salient_terms = (
        _dedupe([*salient, *query_tags])
        if salient
        else extract_salient_terms(query, min_term_length)
    )
    expanded_terms = [
        term
        for term in _dedupe([*related[:MAX_EXPANDED_TERMS], *demoted[:MAX_EXPANDED_TERMS]])
        if term not in salient_terms
    ]
    return ExpandedQuery(
        original_query=query,
        queries=(query, *variants),
        salient_terms=tuple(salient_terms),
        expanded_queries=tuple(variants),
        expanded_terms=tuple(expanded_terms),
        source="llm",
    )


def is_valid_term(term: str, min_length: int) -> bool:
    """Whether a model's term is a term: a whole tag, or one word of at least `min_length`.

    Args:
        term: a lowercased, trimmed term.
        min_length: shortest term accepted.

    Returns:
        True for `#project/alpha`, `piano`, `学习`, `machine-learning`, `next.js`; False
        for `!`, `a` (with the default length 2), `c++`, `#123` or `project/alpha`.
    """
    if len(term) < min_length:
        return False
    if term.startswith("#"):
        return extract_tags_from_query(term) == [term]
    return _VALID_WORD.fullmatch(term) is not None and any(ch.isalnum() for ch in term)


def _section(response: str, name: str) -> str | None:
    """The text of the first `<name>` section, closed by its tag, the next section or the end."""
    match = re.search(
        rf"<{name}\s*>(.*?)(?:</{name}\s*>|(?=<(?:{_NEXT_SECTION})\s*>)|\Z)",
        response,
        re.IGNORECASE | re.DOTALL,
    )
    return match.group(1) if match else None


def _valid_terms(items: Iterable[str], min_length: int) -> list[str]:
    terms: list[str] = []
    for item in items:
        for piece in _TERM_SEPARATORS.split(unicodedata.normalize("NFKC", item).lower()):
            term = piece.strip(_EDGE_PUNCTUATION).rstrip("/")
            if is_valid_term(term, min_length) and not _is_stop_word(term):
                terms.append(term)
    return _dedupe(terms)


def _is_stop_word(term: str) -> bool:
    folded = fold_han(term)  # the CJK stop lists are simplified
    return (
        term in STOP_WORDS or folded in CJK_STOP_WORDS or all(ch in CJK_STOP_CHARS for ch in folded)
    )


def _variants(query: str, response: str, max_variants: int) -> list[str]:
    """Alternative phrasings: from `<queries>`, or anywhere when the section is missing."""
    section = _section(response, "queries")
    found = _QUERY.findall(response if section is None else section)
    seen = {query.casefold()}
    variants: list[str] = []
    for item in found:
        variant = " ".join(item.split()).strip(_QUOTES).strip()
        if not variant or variant.casefold() in seen:
            continue
        seen.add(variant.casefold())
        variants.append(variant)
    return variants[:max_variants]


def _squash(text: str) -> str:
    """Words only, lowercased and accent-folded: "Next.js app" -> "nextjsapp"."""
    lowered = unicodedata.normalize("NFKC", text).lower()
    return "".join(fold_accents(word) for word in _WORD_CHARS.findall(lowered))


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
