"""Query terms: what to recall with and what to rank with.

Seed 001 separates the two: alternative phrasings and related terms only widen recall,
while ranking uses the salient terms of the original query. Without an LLM the salient
terms come from `fallback_expansion`, which, unlike the original's fallback, drops stop
words and search verbs and keeps CJK words (as bigrams), so "查找我的学习笔记" still
yields terms. An LLM `QueryExpander` plugs in through the `QueryExpanderLike` protocol.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from langchain_vaultsearch.text.han_forms import fold_han
from langchain_vaultsearch.text.tokenize import CJK_RUN, contains_cjk, symbol_terms
from langchain_vaultsearch.vault.markdown import extract_tags_from_query
from langchain_vaultsearch.vault.markdown_syntax import (
    TAG_PATTERN,
    WIKILINK_PATTERN,
)

ExpansionSource = Literal["fallback", "llm", "pre-expanded", "empty"]

MIN_TERM_LENGTH = 2

# English function words, question words and search verbs ("find", "show"), plus the
# commonest ones of a few other languages users write queries in.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would
    you your yours yourself yourselves also any anything everything something there's
    i'm i've what's let's please thanks need want wanted would could should may might
    must shall find search get show look lookup tell give list display fetch retrieve
    locate bring help explain describe summarize summarise know remember recall el la
    los las un una unos unas de del y o que en por para con sin mi mis tu tus su sus buscar
    encontrar mostrar le les des du et ou une est dans pour avec sans mon ma mes ton ta
    tes son sa ses chercher trouver montrer der die das den dem des ein eine einer und
    oder ist im mit ohne mein meine dein deine suchen finden zeigen
    qué cómo cuál cuáles cuándo dónde quién quiénes cuánto cuántos como cual cuando donde
    quien son está están ser se lo al nos este esta estos estas ese esa eso entre muy más
    pero
    il lo gli della dello delle degli nel nella nei nelle sul sulla dalla alla alle agli
    da per tra fra che cosa quando perché perche quale quali qual è sono sia hanno anche
    più questo questa questi quello quella
    um das é são ao aos não quais onde porque meu minha
    quel quelle quels quelles où quand pourquoi sont au sur qui quoi ce cette elle elles
    ils nous vous
    wie wer wo wann warum welche welcher welches sind auf für von zu zum zur nicht auch
    ich wir sie bei nach über aus wird werden kann
    """.split()
)
"""Not the function words that are also words of English notes: Spanish `es`, `hay` and
`uno`, Italian `di`, `ci`, `vi`, `ai`, `si`, `dal`, `dei`, `chi`, `dove`, `come`, `non`
and `ho`, Portuguese `os`, `em`, `dos`, `na` and `nas`, French `aux`, `par`, `ces` and
`comment`, German `man` (ES modules, hay fever, Arduino Uno, dependency injection,
continuous integration, the editor, AI, SI units, lentil dal, DEI, tai chi, a dove,
"come up with", non-profit, Ho Chi Minh City, operating systems, the CSS unit, denial of
service, NA values, network storage, an aux input, par value, CES, code comments, manual
pages)."""

# CJK words that carry no topic: pronouns, particles and the search verbs.
CJK_STOP_WORDS = frozenset(
    """
    查找 搜索 寻找 找到 检索 显示 查看 查询 如何 怎么 怎样 什么 哪些 哪个 需要
    一下 有关 关于 我们 你们 他们 这个 那个 这些 那些 可以 应该 是否
    为什么 検索 探す 表示 どう 何か どこ これ それ あれ ください 찾기 검색 보여
    """.split()
)
CJK_STOP_CHARS = frozenset(
    "的了是我你他她它们在和与或及吗呢吧啊のはをにがでとももへやかなねよ을를이가은는에의"
)

_WORD = re.compile(r"[^\W_](?:[\w.'’\-]*[^\W_])?")


@dataclass(frozen=True)
class ExpandedQuery:
    """The terms one query searches with.

    Attributes:
        original_query: the query as asked.
        queries: the original query, then the alternative phrasings (recall).
        salient_terms: terms of the original query that rank results.
        expanded_queries: alternative phrasings only (recall).
        expanded_terms: related terms (recall only).
        source: which path produced it: `llm`, `fallback`, `pre-expanded` or `empty`.
    """

    original_query: str
    queries: tuple[str, ...]
    salient_terms: tuple[str, ...]
    expanded_queries: tuple[str, ...] = ()
    expanded_terms: tuple[str, ...] = ()
    source: ExpansionSource = "fallback"

    def recall_terms(self) -> list[str]:
        """Queries, related terms and salient terms, lowercased and deduplicated."""
        terms = [*self.queries, *self.expanded_terms, *self.salient_terms]
        return list(dict.fromkeys(t.strip().lower() for t in terms if t.strip()))

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly form for `last_query_expansion` consumers and `--explain`."""
        return {
            "originalQuery": self.original_query,
            "queries": list(self.queries),
            "salientTerms": list(self.salient_terms),
            "expandedQueries": list(self.expanded_queries),
            "expandedTerms": list(self.expanded_terms),
            "recallTerms": self.recall_terms(),
            "source": self.source,
        }


EMPTY_EXPANSION = ExpandedQuery("", (), (), source="empty")


@runtime_checkable
class QueryExpanderLike(Protocol):
    """Anything that turns a query into an `ExpandedQuery` (the LLM expander's seam)."""

    def expand(self, query: str) -> ExpandedQuery:
        """Expand one query; must not raise (fall back instead)."""
        ...


@runtime_checkable
class AsyncQueryExpanderLike(QueryExpanderLike, Protocol):
    """An expander with an async twin, so `ainvoke` waits on the LLM without a thread."""

    async def aexpand(self, query: str) -> ExpandedQuery:
        """Expand one query without blocking the event loop; must not raise."""
        ...


def extract_salient_terms(query: str, min_length: int = MIN_TERM_LENGTH) -> list[str]:
    """Topic terms of a query without an LLM.

    Tags are kept whole as typed (lowercased), words lose stop words and search verbs,
    hyphenated words keep their parts too, and CJK runs yield bigrams that contain no
    particle or pronoun.

    Args:
        query: the user's query.
        min_length: shortest word kept; CJK bigrams and single CJK characters are words
            in their own right and are kept whatever it says.

    Returns:
        Distinct terms in query order.
    """
    tags = extract_tags_from_query(query)
    text = WIKILINK_PATTERN.sub(
        lambda m: " " + m.group(1).replace("|", " ").replace("#", " ") + " ", query
    )
    text = strip_tags(text, tags)
    # C#, C++ and emoji are terms the word splitting below cannot see.
    terms: list[str] = symbol_terms(text.lower())
    for match in _WORD.finditer(text.lower()):
        word = match.group(0)
        if contains_cjk(word):
            terms.extend(_cjk_terms(word, min_length))
            continue
        terms.extend(_word_terms(word, min_length))
    return list(dict.fromkeys([*terms, *tags]))


def strip_tags(text: str, tags: Collection[str]) -> str:
    """Blank the spans of the given (lowercased) tags, leaving their words elsewhere.

    A tag's words are not terms of the query unless they also stand alone: "#project/alpha"
    asks for the tag, not for every note that says "alpha". Only whole tag spans go, so
    "#pro" does not eat "#project".
    """
    wanted = set(tags)
    return TAG_PATTERN.sub(
        lambda m: " " if m.group(0).rstrip("/").lower() in wanted else m.group(0), text
    )


def _word_terms(word: str, min_length: int) -> list[str]:
    if word in STOP_WORDS or len(word) < min_length:
        return []
    terms = [word]
    if "-" in word:
        terms.extend(p for p in word.split("-") if len(p) >= min_length and p not in STOP_WORDS)
    return terms


def _cjk_terms(word: str, min_length: int) -> list[str]:
    terms: list[str] = []
    for piece in re.split(CJK_RUN, word):
        terms.extend(_word_terms(piece, min_length) if piece else [])
    for run in CJK_RUN.findall(word):
        # Kept as typed; the stop lists are simplified (`們` is `们`).
        folded = fold_han(run)
        if len(run) == 1:
            if folded not in CJK_STOP_CHARS:
                terms.append(run)
            continue
        for i in range(len(run) - 1):
            bigram = folded[i : i + 2]
            if bigram in CJK_STOP_WORDS or any(ch in CJK_STOP_CHARS for ch in bigram):
                continue
            terms.append(run[i : i + 2])
    return terms


def fallback_expansion(query: str, min_length: int = MIN_TERM_LENGTH) -> ExpandedQuery:
    """The no-LLM expansion: the query itself for recall, its salient terms for ranking.

    Args:
        query: the user's query.
        min_length: shortest word kept as a salient term (see `extract_salient_terms`).

    Returns:
        The expansion, `source="fallback"`; `EMPTY_EXPANSION` for a blank query.
    """
    cleaned = query.strip()
    if not cleaned:
        return EMPTY_EXPANSION
    return ExpandedQuery(
        original_query=cleaned,
        queries=(cleaned,),
        salient_terms=tuple(extract_salient_terms(cleaned, min_length)),
        source="fallback",
    )
