"""The seed's three boosts: exact match, form number, quoted ("defined") term.

Each is read from the query once (`QueryBoosts`) and then decided per candidate chunk.
They depart from the seed where it misfired: the seed tested `form_number in query` as
a substring, so form `1040` was boosted for a query about `1040-ES` and a form numbered
`1` for any query holding the digit; here a form-number-like token of the query must
equal the chunk's form number. The seed boosted a defined term only when the whole query
was one quoted phrase; here every "quoted" (or “curly-quoted”) term of the query counts.
A phrase (the query, or a quoted term) matches a chunk that holds all its terms and has
it in its text, case and spacing aside: `tax` is not found in `taxes`, and the index can
rule out a chunk without reading it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from langchain_vaultsearch.chunk_store.profile import RetrievalProfile

_QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”')
# A token holding a digit, with letters, digits and inner hyphens: 1040-ES, W-2, SF-86.
_FORM_TOKEN = re.compile(r"(?<![\w-])(?=[\w-]*\d)\w+(?:-\w+)*(?![\w-])")
_FORM_PREFIX = re.compile(r"^(?:form|formulaire|formular)\s+", re.IGNORECASE)


def normalized(text: str) -> str:
    """Case-folded, NFKC, with every run of whitespace one space: how texts are compared."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return " ".join(text.casefold().split())


def form_key(value: object) -> str | None:
    """A form number as compared (`Form 1040-ES` is `1040-es`); None when not a form number."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return _FORM_PREFIX.sub("", normalized(str(value))) or None


@dataclass(frozen=True)
class QueryBoosts:
    """What of a query the boosts look for.

    Attributes:
        phrase: the query as compared for an exact match (quotes removed).
        form_numbers: its form-number-like tokens, as `form_key` spells them.
        quoted_terms: its quoted terms, normalised.
    """

    phrase: str
    form_numbers: frozenset[str]
    quoted_terms: tuple[str, ...]

    @classmethod
    def of(cls, query: str) -> QueryBoosts:
        """Read a query once."""
        quoted = tuple(
            term
            for match in _QUOTED.finditer(query)
            if (term := normalized(match.group(1) or match.group(2)))
        )
        phrase = normalized(query.replace('"', " ").replace("“", " ").replace("”", " "))
        forms = frozenset(
            key for token in _FORM_TOKEN.findall(query) if (key := form_key(token)) is not None
        )
        return cls(phrase=phrase, form_numbers=forms, quoted_terms=quoted)

    def may_match_line(self, raw: bytes, *, phrase: bool, quoted: bool) -> bool:
        """Whether a chunk's JSON line could hold the phrase or a quoted term (no parse).

        A cheap test on the bytes, for the many candidates the index cannot rule out: in
        an ASCII line an ASCII phrase is searched case-blind with any run of spaces or
        JSON whitespace escapes between its words, which is what `normalized` makes of
        the text. Anything else may match and is parsed.
        """
        wanted = ([self.phrase] if phrase else []) + (list(self.quoted_terms) if quoted else [])
        if not raw.isascii():
            return bool(wanted)
        return any(_line_pattern(term).search(raw) for term in wanted)

    def text_factors(
        self, text: str, *, phrase_possible: bool, quoted_possible: bool, profile: RetrievalProfile
    ) -> dict[str, float]:
        """The boosts a chunk's text earns (`exactMatch`, `definedTerm`).

        Args:
            text: the chunk's text.
            phrase_possible: the chunk holds every term of the query.
            quoted_possible: the chunk holds every term of some quoted term.
            profile: the boost sizes.
        """
        earned: dict[str, float] = {}
        if not (phrase_possible or quoted_possible):
            return earned
        compared = normalized(text)
        if phrase_possible and self.phrase and _phrase_pattern(self.phrase).search(compared):
            earned["exactMatch"] = profile.doc_boost_exact_match
        if quoted_possible and any(
            _phrase_pattern(term).search(compared) for term in self.quoted_terms
        ):
            earned["definedTerm"] = profile.doc_boost_defined_term
        return earned


_JSON_SPACE = rb"(?:\s|\\[nrt])+"


@functools.lru_cache(maxsize=256)
def _line_pattern(term: str) -> re.Pattern[bytes]:
    """A term as found in an ASCII JSON line (a non-ASCII term matches any line)."""
    if not term.isascii():
        return re.compile(b"")
    words = [re.escape(word.encode()) for word in term.split()]
    return re.compile(_JSON_SPACE.join(words), re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    """A normalised phrase as whole words of a normalised text (`tax` is not in `taxes`)."""
    return re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)")
