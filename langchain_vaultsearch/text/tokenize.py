"""`tokenize_mixed`: one tokenizer for indexing and querying, across scripts.

The original tokenizer kept only `[a-z0-9_]` runs, so `café` became `caf` and Cyrillic,
Greek or Arabic notes produced no tokens at all (docs/design.md, decision 1). Here a word is any
run of Unicode word characters; CJK runs, which have no spaces between words, become
overlapping bigrams (of Chinese in its simplified form: `han_forms`); tags stay whole and
also yield their hierarchy so `#project` finds notes tagged `#project/alpha`.
"""

from __future__ import annotations

import itertools
import re
import sys
import unicodedata

from langchain_vaultsearch.text.han_forms import fold_han
from langchain_vaultsearch.vault.markdown_syntax import TAG_PATTERN, WORD_CHARS

# Han (with Extension A, B+ and compatibility ideographs), kana, Hangul, and the Southeast
# Asian scripts Thai, Lao, Khmer and Myanmar: scripts written without spaces between words,
# where character bigrams are the standard lexical unit. Without them a Thai or Khmer
# sentence was one token and a query for any word in it found nothing.
_CJK_CHARS = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u19e0-\u19ff"  # Khmer symbols
    "\u3040-\u309f"  # hiragana
    "\u30a0-\u30ff"  # katakana
    "\u31f0-\u31ff"  # katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width katakana
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\uac00-\ud7af"  # Hangul syllables
    "\U00020000-\U0002fa1f"  # CJK Extensions B-F and compatibility supplement
)
CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")
_CJK_SPLIT = re.compile(f"([{_CJK_CHARS}]+)")


_W = WORD_CHARS
_WORD = re.compile(f"[{_W}]+")
# Word runs that may be joined by '.', '-' or an apostrophe ("next.js", "e-mail").
_JOINED_RUN = re.compile(f"[{_W}.'’\\-]+")
# The ASCII characters that end a joined run, as spaces; every other byte (the UTF-8 of a
# non-ASCII character too) kept. Split on them, a text's UTF-8 falls at C speed into runs
# that `_split_byte_run` splits further only when they hold non-ASCII characters, once per
# distinct run: finding joined runs with the pattern took 40% of tokenizing the 34-language
# help vault, whose notes are mostly not pure ASCII (`_RunTerms`).
_BYTE_SEPARATORS = bytes(
    32 if c < 128 and not (chr(c).isalnum() or chr(c) in "_.'-") else c for c in range(256)
)


# A letter followed by `#` or `++` (C#, F#, C++, G++): the language, not the letter. Kept as
# a term of its own beside the letter, so "C#" ranks a C# note above a C++ note. The mark
# is searched for and the letter before it checked: a pattern starting with the letter
# (and a look-behind) tried every position of every note with a heading (7% of indexing).
_LANGUAGE_MARK = re.compile(r"(?:#|\+\+)(?![\w#+])")
_GLUED = re.compile(r"[\w#+]")
# Emoji and pictographs: not word characters, yet what a note about "🚀 launches" is
# found by. Each is a term of its own.
_EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\u2300-\u23ff\u3030\u303d]")
# A run between ASCII separators in the order of the text: its joined runs and emoji.
_JOINED_RUN_OR_EMOJI = re.compile(f"{_JOINED_RUN.pattern}|{_EMOJI.pattern}")


def symbol_terms(lowered: str) -> list[str]:
    """Language names (`c#`, `c++`) and emoji, which the word splitting drops."""
    terms = _language_terms(lowered)
    if not lowered.isascii():
        terms.extend(_EMOJI.findall(lowered))
    return terms


def _language_terms(lowered: str) -> list[str]:
    """Language names: `c#`, `c++`."""
    terms: list[str] = []
    if "#" in lowered or "+" in lowered:
        for match in _LANGUAGE_MARK.finditer(lowered):
            at = match.start()
            letter = lowered[at - 1] if at else ""
            if "a" <= letter <= "z" and (at < 2 or not _GLUED.match(lowered, at - 2)):
                terms.append(letter + match.group())
    return terms


def tokenize_mixed(text: str) -> list[str]:
    """Split text into lowercase index terms, each term once, in order of appearance.

    Terms are unique because the lexical index scores presence, not frequency (the
    original's MiniSearch setup did the same): a note that repeats a word forty times is
    not forty times as relevant.

    Args:
        text: any text: a note chunk, a title, a path or a query.

    Returns:
        Language names (`c#`, `c++`), tag terms (`#a/b`, `a/b`, `#a`, `a`, `b`), then,
        in the order of the text, word terms, CJK bigrams, accent-folded variants (`café`
        also gives `cafe`) and emoji (a pictograph in a tag is the tag's).
    """
    if not text:
        return []
    symbols, runs = _symbols_and_runs(text)
    tokens = dict.fromkeys(symbols)
    unique_runs = dict.fromkeys(runs)
    tokens.update(
        dict.fromkeys(itertools.chain.from_iterable(map(_RUN_TERMS.__getitem__, unique_runs)))
    )
    # Interned, so the recall postings and every cached chunk share one copy of each term.
    return list(map(sys.intern, tokens))


def term_occurrences(text: str) -> list[str]:
    """Every term occurrence of the text: `tokenize_mixed`'s order, with repeats kept.

    For scorers that count (BM25 Okapi and TF-IDF over a chunk store, seed 004): the
    same words, bigrams and tag terms as the lexical index, each as often as it occurs;
    the words and emoji in the order of the text, which TF-IDF's word pairs follow.

    Args:
        text: the text to split.
    """
    if not text:
        return []
    terms, runs = _symbols_and_runs(text)
    terms.extend(itertools.chain.from_iterable(map(_RUN_TERMS.__getitem__, runs)))
    return terms


def _symbols_and_runs(text: str) -> tuple[list[str], list[bytes]]:
    """What `tokenize_mixed` and `term_occurrences` split alike.

    Returns:
        The language names and each tag's terms, in order, then the lowercased text
        without its tags as UTF-8 split where an ASCII character ends a joined run (a
        lone surrogate, from a file name decoded with `surrogateescape`, is kept as its
        bytes, so a query holding one is split rather than refused).
    """
    lowered = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).lower()
    symbols = _language_terms(lowered)
    remainder = lowered
    if "#" in lowered:
        for match in TAG_PATTERN.finditer(lowered):
            tag_terms: dict[str, None] = {}
            _add_tag_terms(match.group(0).rstrip("/-"), tag_terms)
            symbols.extend(tag_terms)
        remainder = TAG_PATTERN.sub(" ", lowered)
    runs = remainder.encode("utf-8", "surrogatepass").translate(_BYTE_SEPARATORS).split()
    return symbols, runs


class _RunTerms(dict[bytes, tuple[str, ...]]):
    """The terms of each run between ASCII separators seen, split on first sight.

    Words recur across a vault (Zipf), and splitting a run that holds punctuation, CJK or
    accents costs ~10 Python operations; caching the split made indexing a 6,280-note,
    34-language vault 2x faster. A dict, so a run seen before costs one lookup at C speed
    (`map(terms.__getitem__, runs)`). Emptied when it reaches `limit` runs, so a vault of
    unique words cannot grow it; the limit is what it may cost: 65,536 runs held 25 MB of
    keys, tuples and terms, a sixth of a 6,280-note vault's search process, where the
    index build's worker processes want more runs for their tens of thousands of notes. A
    run counts once per `RUN_WEIGHT_BYTES` it holds: Chinese, Japanese or Thai text runs
    from one ASCII separator to the next through its own punctuation (a paragraph may be
    one run, with a bigram per character), so counted as one each, such runs would make
    the cache's bytes grow far past what its count of runs says.
    """

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.used = 0

    def __missing__(self, run: bytes) -> tuple[str, ...]:
        terms = _split_byte_run(run)
        weight = 1 + len(run) // RUN_WEIGHT_BYTES
        if self.used + weight > self.limit:
            self.clear()
        self[run] = terms
        self.used += weight
        return terms

    def clear(self) -> None:
        """Forget every run."""
        super().clear()
        self.used = 0


RUN_WEIGHT_BYTES = 64
"""What a cached run may hold per unit of the cache's limit."""


SEARCH_RUN_CACHE = 1 << 14
"""Runs the tokenizer keeps split in a searching process (~6 MB)."""
BUILD_RUN_CACHE = 1 << 20
"""Runs the worker processes of an index build keep between them (`set_run_cache_size`
in each: its share, ~200 MB for each of two, half that or less for more workers). A
4,000-note shard of the 34-language help vault holds ~178,000 distinct runs; with room
for 131,072 a worker split a fifth of them again in every shard (help x16's build,
shards alone: 63.7 -> 55.5 s; its 16 copies share one vocabulary, so a vault of distinct
notes gains less)."""

_RUN_TERMS = _RunTerms(SEARCH_RUN_CACHE)


def set_run_cache_size(runs: int) -> None:
    """Keep up to `runs` runs split (an index build process keeps more; see `_RunTerms`)."""
    _RUN_TERMS.limit = runs
    if _RUN_TERMS.used > runs:
        _RUN_TERMS.clear()


def _split_byte_run(run: bytes) -> tuple[str, ...]:
    """Terms of a run between ASCII separators, each time one of its joined runs has it.

    Repeats are kept for `term_occurrences`; emoji and non-ASCII punctuation (`«»`, `—`,
    `。`) are not separators at the byte level, so a run holding any is split again here.
    """
    text = run.decode("utf-8", "surrogatepass")
    if text.isascii():
        return _split_run(text)
    terms: list[str] = []
    for part in _JOINED_RUN_OR_EMOJI.findall(text):
        if _JOINED_RUN.fullmatch(part) is None:
            terms.append(sys.intern(part))  # an emoji
        else:
            terms.extend(_split_run(part))
            # A few pictographs are word characters too (`❶`, a number): also emoji.
            terms.extend(map(sys.intern, _EMOJI.findall(part)))
    return tuple(terms)


def _split_run(run: str) -> tuple[str, ...]:
    """Terms of one joined run: itself when a plain ASCII word, else its parts."""
    if run.isalnum() and run.isascii():
        return (sys.intern(run),)
    terms: dict[str, None] = {}
    words = _WORD.findall(run)
    for word in words:
        if word.isascii():
            terms[word] = None
        else:
            _add_unicode_run(word, terms)
    if len(words) > 1 and not CJK_RUN.search(run):
        terms["".join(words)] = None
    return tuple(map(sys.intern, terms))


def _add_tag_terms(tag: str, tokens: dict[str, None]) -> None:
    """Add a tag whole, its body, and every prefix of its hierarchy with and without `#`.

    A tag is matched as written (`#學習` is not `#学习`), but its words, which the plain
    word `學習` or `学习` matches, also in their folded form (`han_forms`).
    """
    body = tag.lstrip("#")
    if not body:
        return
    tokens["#" + body] = None
    _add_words(body, tokens)
    prefix = ""
    for segment in (part for part in body.split("/") if part):
        prefix = f"{prefix}/{segment}" if prefix else segment
        _add_words(prefix, tokens)
        tokens["#" + prefix] = None
        _add_words(segment, tokens)


def _add_words(words: str, tokens: dict[str, None]) -> None:
    """A tag's words as a term: as written, and folded when that differs."""
    tokens[words] = None
    folded = fold_han(words)
    if folded is not words:
        tokens[folded] = None


def _add_unicode_run(run: str, tokens: dict[str, None]) -> None:
    """Add a non-ASCII word run: CJK parts as bigrams, other parts as words."""
    for part in _CJK_SPLIT.split(run):
        if not part:
            continue
        if CJK_RUN.fullmatch(part):
            folded = fold_han(part)  # `學習` and `学习` are one word
            if len(folded) == 1:
                tokens[folded] = None
            else:
                for i in range(len(folded) - 1):
                    tokens[folded[i : i + 2]] = None
            continue
        tokens[part] = None
        folded = fold_accents(part)
        if folded and folded != part:  # a lone combining mark (U+00B4 after NFKC) folds to ""
            tokens[folded] = None


# Scripts whose diacritics users commonly omit when typing: Latin, Greek, Cyrillic, Arabic
# harakat. Elsewhere (Devanagari viramas, Thai vowels) marks are part of the spelling.
_FOLDABLE = re.compile("^[\u0000-\u052f\u0600-\u06ff\u1e00-\u1fff]+$")


def fold_accents(word: str) -> str:
    """Remove combining marks, so a query typed without accents still finds `café`."""
    if word.isascii() or not _FOLDABLE.match(word):
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def contains_cjk(text: str) -> bool:
    """Tell whether text has characters written without spaces between words."""
    return CJK_RUN.search(text) is not None
