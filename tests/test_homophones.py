"""Chinese characters that sound alike (`text.homophones`), as a pinyin input method slips."""

from __future__ import annotations

import pytest

from langchain_vaultsearch.text.homophones import (
    has_reading,
    is_sound_alike_slip,
    looks_for_slips,
    sound_alikes,
)
from langchain_vaultsearch.text.tokenize import tokenize_mixed


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("清断食", "轻断食"),  # qing: the same syllable and tone
        ("如睡", "入睡"),  # ru: tones differ, as an input method ignores them
        ("却口", "缺口"),  # que
        ("修息", "休息"),  # xiu
        ("机酸", "肌酸"),  # ji
        ("长青", "常青"),  # 长 reads zhang and chang: each reading counts
    ],
)
def test_one_character_that_sounds_alike_is_a_slip(typed: str, meant: str) -> None:
    assert is_sound_alike_slip(typed, meant)


@pytest.mark.parametrize(
    ("typed", "word"),
    [
        ("开口", "缺口"),  # kai and que: another word, not a slip
        ("清清", "轻轻"),  # two characters changed
        ("轻断", "轻断"),  # the same bigram is no slip
        ("轻断", "轻断食"),  # another length
        ("吕布", "鲁布"),  # lü and lu: the diaeresis is part of the syllable, not a tone
        ("かな", "かに"),  # kana have no pinyin
        ("肌需", "肌肉"),  # 需 reads ru only rarely: 肉 (rou) is meant by no one typing 需
        ("需要", "如要"),  # nor 如 (ru)
        ("差有", "最有"),  # 差 reads cuo, rarely; 最 is zui
        ("index", "indey"),  # nor has Latin
    ],
)
def test_other_changes_are_not_slips_by_sound(typed: str, word: str) -> None:
    assert not is_sound_alike_slip(typed, word)


def test_a_character_sounds_like_others_of_its_readings_but_not_itself() -> None:
    alike = sound_alikes("轻")
    assert "清" in alike
    assert "青" in alike
    assert "轻" not in alike
    assert list(alike) == sorted(alike)
    assert {"长", "常"} <= {*sound_alikes("场"), *sound_alikes("掌")}  # chang and zhang
    assert sound_alikes("a") == ()
    assert sound_alikes("か") == ()
    assert sound_alikes("𠀀") == ()  # an extension-B character no input method offers first


def test_kana_mark_japanese_text_and_have_no_reading() -> None:
    assert has_reading("学")
    assert not has_reading("の")
    assert not has_reading("한")
    assert looks_for_slips(tokenize_mixed("增肌需要吃什么"))
    assert not looks_for_slips(tokenize_mixed("東京の天気"))


def test_a_pasted_passage_is_not_looked_at_for_slips() -> None:
    question = "减脂的时候每天的热量却口多少比较合适"
    assert looks_for_slips(tokenize_mixed(question))
    passage = "".join(chr(0x4E00 + 7 * index) for index in range(60))  # 59 bigrams
    assert not looks_for_slips(tokenize_mixed(passage))
