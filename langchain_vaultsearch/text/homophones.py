"""Chinese characters that sound alike: the slips of a pinyin input method.

Chinese is typed by sound: the user types `qing duan shi` and picks characters from a
list, so a slip is a character that sounds like the one meant (`清断食` for `轻断食`,
`如睡` for `入睡`), not one a key away. Edit distance cannot tell such a slip from a
different word (one character of two is half the word), but the sound can. Tones are
ignored, as input methods mostly do. Readings come from pypinyin's table of every
character's Mandarin readings; a character with several (`长`: zhang, chang) sounds like
the characters of each.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from functools import cache

_HAN = range(0x4E00, 0xA000)
"""The CJK unified ideographs, where everyday text is written: the extension blocks hold
rare characters an input method never offers first, and would only lengthen the lists."""


@cache
def _syllables() -> dict[str, frozenset[str]]:
    """Each character's toneless readings (`轻`: {"qing"}); loaded at the first slip."""
    from pypinyin.pinyin_dict import pinyin_dict

    readings: dict[str, frozenset[str]] = {}
    for code_point, spelled in pinyin_dict.items():
        if code_point in _HAN:
            readings[chr(code_point)] = frozenset(map(_toneless, spelled.split(",")))
    return readings


@cache
def _characters() -> dict[str, tuple[str, ...]]:
    """The characters of each toneless syllable, in code point order."""
    by_syllable: defaultdict[str, list[str]] = defaultdict(list)
    for character, syllables in _syllables().items():
        for syllable in syllables:
            by_syllable[syllable].append(character)
    return {syllable: tuple(sorted(chars)) for syllable, chars in by_syllable.items()}


_TONE_MARKS = frozenset("\u0304\u0301\u030c\u0300")
"""Macron, acute, caron and grave: the four tones (the diaeresis of ü is no tone)."""


def _toneless(syllable: str) -> str:
    decomposed = unicodedata.normalize("NFD", syllable)
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if ch not in _TONE_MARKS))


def sound_alikes(character: str) -> tuple[str, ...]:
    """The other characters that share a reading with `character` (none if not Chinese)."""
    syllables = _syllables().get(character)
    if not syllables:
        return ()
    characters = _characters()
    alike = {other for syllable in syllables for other in characters[syllable]}
    alike.discard(character)
    return tuple(sorted(alike))


def is_sound_alike_slip(typed: str, word: str) -> bool:
    """Whether `typed` is `word` with one character swapped for one that sounds alike."""
    if len(typed) != len(word) or typed == word:
        return False
    differing = [(a, b) for a, b in zip(typed, word, strict=True) if a != b]
    if len(differing) != 1:
        return False
    typed_char, word_char = differing[0]
    readings = _syllables()
    return bool(readings.get(typed_char, frozenset()) & readings.get(word_char, frozenset()))
