"""The seed's three boosts: exact match, form number, quoted ("defined") term.

Each is decided once per query (`QueryBoosts`) and then per candidate chunk. They depart
from the seed where it misfired: the seed tested `form_number in query` as a substring,
so form `1040` was boosted for a query about `1040-ES` and a form numbered `1` for any
query holding the digit; here a form-number-like token of the query must equal the
chunk's form number. The seed boosted a defined term only when the whole query was one
quoted phrase; here every "quoted" (or “curly-quoted”) term of the query counts.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_vaultsearch.chunk_store.profile import RetrievalProfile

_QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”')
# A token holding a digit, with letters, digits and inner hyphens: 1040-ES, W-2, SF-86.
_FORM_TOKEN = re.compile(r"(?<![\w-])(?=[\w-]*\d)\w+(?:-\w+)*(?![\w-])")
_SPACES = re.compile(r"\s+")
_FORM_PREFIX = re.compile(r"^(?:form|formulaire|formular)\s+", re.IGNORECASE)


def normalized(text: str) -> str:
    """Case-folded, NFKC, with every run of whitespace one space: how texts are compared."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def form_key(value: str) -> str:
    """A form number as compared: `Form 1040-ES` and `1040-es` are the same form."""
    return _FORM_PREFIX.sub("", normalized(value))


@dataclass(frozen=True)
class QueryBoosts:
    """What of a query the boosts look for.

    Attributes:
        phrase: the query as compared for an exact match (quotes removed).
        form_numbers: its form-number-like tokens.
        quoted_terms: its quoted terms.
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
        forms = frozenset(form_key(token) for token in _FORM_TOKEN.findall(query))
        return cls(phrase=phrase, form_numbers=forms, quoted_terms=quoted)

    def factors(
        self, text: str, metadata: Mapping[str, Any], profile: RetrievalProfile
    ) -> dict[str, float]:
        """The boosts one chunk earns, by name (`exactMatch`, `formNumber`, `definedTerm`).

        Args:
            text: the chunk's text.
            metadata: the chunk's metadata (`form_number`).
            profile: the boost sizes.
        """
        earned: dict[str, float] = {}
        compared = normalized(text)
        if self.phrase and self.phrase in compared:
            earned["exactMatch"] = profile.doc_boost_exact_match
        form = metadata.get("form_number")
        is_form = isinstance(form, (str, int)) and not isinstance(form, bool)
        if is_form and form_key(str(form)) in self.form_numbers:
            earned["formNumber"] = profile.doc_boost_form_number
        matched = [term for term in self.quoted_terms if term in compared]
        if matched:
            earned["definedTerm"] = profile.doc_boost_defined_term
        return earned
