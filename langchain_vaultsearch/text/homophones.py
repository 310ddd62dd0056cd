"""Chinese characters that sound alike: the slips of a pinyin input method.

Chinese is typed by sound: the user types `qing duan shi` and picks characters from a
list, so a slip is a character that sounds like the one meant (`清断食` for `轻断食`,
`如睡` for `入睡`), not one a key away. Edit distance cannot tell such a slip from a
different word (one character of two is half the word), but the sound can. Tones are
ignored, as input methods mostly do.

Readings come from pypinyin's table of every character's Mandarin readings, commonest
first. The user types the reading of the character meant, which is almost always its
first, and picks from a list that puts each character under its common readings. So a
typed `长` (zhang, chang) is a slip for `常` (chang), but a typed `需` (xu; archaic nuo,
ru, ruan) is no slip for `如` (ru) or `肉` (rou): taking every reading let archaic ones join
unrelated words, and `增肌需要` was "corrected" to `增肌肉要`, then to `增肌如要`.
"""

from __future__ import annotations

import importlib.util
import json
import re
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from functools import cache
from pathlib import Path

_HAN = range(0x4E00, 0xA000)
"""The CJK unified ideographs, where everyday text is written: the extension blocks hold
rare characters an input method never offers first, and would only lengthen the lists."""
_KANA = re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")
TYPED_READINGS = 2
"""Readings of a typed character an input method offers it under: its two commonest (`长`:
zhang, chang; `差`: cha, chai, not its rare cuo)."""
_TONE_MARKS = frozenset("\u0304\u0301\u030c\u0300")
"""Macron, acute, caron and grave: the four tones (the diaeresis of ü is no tone)."""


@cache
def _readings() -> dict[str, tuple[str, ...]]:
    """Each character's toneless readings, commonest first; loaded at the first slip.

    Read from pypinyin's data file rather than through `import pypinyin`, whose package
    also loads its phrase table: 57 MB more for a server that only needs this one.
    """
    spec = importlib.util.find_spec("pypinyin")
    folders = [] if spec is None else list(spec.submodule_search_locations or ())
    if not folders:
        msg = "pypinyin is not installed: pip install pypinyin"
        raise ModuleNotFoundError(msg)
    table = json.loads((Path(folders[0]) / "pinyin_dict.json").read_text(encoding="utf-8"))
    readings: dict[str, tuple[str, ...]] = {}
    for code_point, spelled in table.items():
        if int(code_point) in _HAN:
            toneless = (_toneless(reading) for reading in spelled.split(","))
            readings[chr(int(code_point))] = tuple(dict.fromkeys(toneless))
    return readings


@cache
def _by_first_reading() -> dict[str, tuple[str, ...]]:
    """The characters whose commonest reading is each syllable, in code point order."""
    characters: defaultdict[str, list[str]] = defaultdict(list)
    for character, readings in _readings().items():
        characters[readings[0]].append(character)
    return {syllable: tuple(sorted(chars)) for syllable, chars in characters.items()}


def _toneless(syllable: str) -> str:
    decomposed = unicodedata.normalize("NFD", syllable)
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if ch not in _TONE_MARKS))


def has_reading(character: str) -> bool:
    """Whether a character is a Chinese one with a Mandarin reading (kana, hangul: no).

    Asked of any CJK character, it loads the readings only for Chinese ones.
    """
    return ord(character) in _HAN and character in _readings()


MAX_SLIP_BIGRAMS = 40
"""Chinese bigrams a query may have and still be looked at for slips: more is a pasted
passage, not a typed question (a question runs to 10-30), and each bigram no note holds
costs about a millisecond to look up (a 900-character paste took 0.8 s more)."""


def looks_for_slips(terms: Sequence[str]) -> bool:
    """Whether a query's terms are searched for Chinese slips by sound at all.

    Not when they hold kana: Japanese writes with kanji and kana, and its slips follow
    Japanese readings, not Mandarin ones. Not for a passage (`MAX_SLIP_BIGRAMS`).
    """
    bigrams = sum(1 for term in terms if len(term) == 2 and _CJK.search(term) is not None)
    return bigrams <= MAX_SLIP_BIGRAMS and not any(_KANA.search(term) for term in terms)


def sound_alikes(typed: str) -> tuple[str, ...]:
    """The characters a typed character may be a slip for (none if it is not Chinese).

    Those whose commonest reading is one of the typed character's common ones
    (`TYPED_READINGS`).
    """
    characters = _by_first_reading()
    alike = {
        other
        for reading in _readings().get(typed, ())[:TYPED_READINGS]
        for other in characters.get(reading, ())
        if other != typed
    }
    return tuple(sorted(alike))


def is_sound_alike_slip(typed: str, word: str) -> bool:
    """Whether `typed` is `word` with one character swapped for one that sounds alike."""
    if len(typed) != len(word) or typed == word:
        return False
    differing = [(a, b) for a, b in zip(typed, word, strict=True) if a != b]
    if len(differing) != 1:
        return False
    typed_char, meant = differing[0]
    meant_readings = _readings().get(meant)
    typed_readings = _readings().get(typed_char, ())[:TYPED_READINGS]
    return meant_readings is not None and meant_readings[0] in typed_readings
