"""`tokenize_mixed`, `fold_accents`, `contains_cjk`: the reference's §3 table where we agree.

Our tokenizer deliberately differs from the original (DESIGN decision 1): Unicode words are
kept and accent-folded, a tag never eats the start of a longer tag, tags glued to a word
(`issue#123`, `C#`) are not tags, joined compounds (`next.js`) also give the joined word, and
Chinese characters are folded to their simplified forms (`學習` gives `学习`).
"""

from __future__ import annotations

import unicodedata
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_vaultsearch.text import tokenize as tokenize_module
from langchain_vaultsearch.text.tokenize import (
    contains_cjk,
    fold_accents,
    set_run_cache_size,
    symbol_terms,
    term_occurrences,
    tokenize_mixed,
)
from langchain_vaultsearch.vault.markdown import parse_note
from langchain_vaultsearch.vault.markdown_syntax import TAG_PATTERN

# --------------------------------------------------------------------------- reference §3 table


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("Hello World TypeScript", ["hello", "world", "typescript"], id="ascii-words"),
        pytest.param("test_123 var_name", ["test_123", "var_name"], id="underscores"),
        pytest.param("中文编程", ["中文", "文编", "编程"], id="cjk-bigrams"),
        pytest.param(
            "TypeScript 和 JavaScript 编程",
            ["typescript", "和", "javascript", "编程"],
            id="mixed-latin-cjk",
        ),
        pytest.param("中 文", ["中", "文"], id="single-cjk-chars"),
        pytest.param(
            "Working on #Project/Alpha and #deepWork",
            [
                "#project/alpha",
                "project/alpha",
                "project",
                "#project",
                "alpha",
                "#deepwork",
                "deepwork",
                "working",
                "on",
                "and",
            ],
            id="tag-hierarchy",
        ),
        pytest.param(
            "#copilot-conversation updates",
            ["#copilot-conversation", "copilot-conversation", "updates"],
            id="hyphenated-tag-stays-whole",
        ),
        pytest.param("한국어 검색", ["한국", "국어", "검색"], id="hangul-bigrams"),
        pytest.param(
            "#项目/测试 笔记",
            ["#项目/测试", "项目/测试", "项目", "#项目", "测试", "笔记"],
            id="cjk-tag",
        ),
        pytest.param("", [], id="empty"),
    ],
)
def test_reference_table_where_we_agree(text: str, expected: list[str]) -> None:
    assert tokenize_mixed(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "café naïve résumé",
            ["café", "cafe", "naïve", "naive", "résumé", "resume"],
            id="accented-words-kept-and-folded",
        ),
        pytest.param("Привет мир", ["привет", "мир"], id="cyrillic-words"),
        pytest.param("Ελλάδα", ["ελλάδα", "ελλαδα"], id="greek-word-folded"),
        pytest.param("#a and #ab", ["#a", "a", "#ab", "ab", "and"], id="no-tag-prefix-quirk"),
        pytest.param(
            "issue#123 C# c++", ["c#", "c++", "issue", "123", "c"], id="glued-hash-is-not-a-tag"
        ),
        pytest.param(
            "Version 2.0 e-mail user@example.com",
            [
                "version",
                "2",
                "0",
                "20",
                "e",
                "mail",
                "email",
                "user",
                "example",
                "com",
                "examplecom",
            ],
            id="compounds-also-joined",
        ),
        pytest.param("學習筆記", ["学习", "习笔", "笔记"], id="traditional-chinese-simplified"),
        pytest.param(
            # Japanese kanji that are also traditional Chinese fold alike, in a question
            # typed without kana (`日本語`) as in a note's sentence, so each finds the other.
            "日本語のテキスト",
            ["日本", "本语", "语の", "のテ", "テキ", "キス", "スト"],
            id="japanese-bigrams-kanji-folded",
        ),
    ],
)
def test_reference_table_where_we_deliberately_differ(text: str, expected: list[str]) -> None:
    assert tokenize_mixed(text) == expected


# --------------------------------------------------------------------------- words and compounds


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("next.js", ["next", "js", "nextjs"]),
        ("e-mail-address", ["e", "mail", "address", "emailaddress"]),
        ("rock'n'roll", ["rock", "n", "roll", "rocknroll"]),
        ("x.y.z", ["x", "y", "z", "xyz"]),
        ("CAFÉ-bar", ["café", "cafe", "bar", "cafébar"]),
    ],
)
def test_joined_compounds_give_parts_and_joined_word(text: str, expected: list[str]) -> None:
    assert tokenize_mixed(text) == expected


def test_cjk_compound_is_not_joined() -> None:
    assert tokenize_mixed("中文-编程") == ["中文", "编程"]


def test_terms_are_unique_and_in_order_of_first_appearance() -> None:
    assert tokenize_mixed("word Word WORD other word") == ["word", "other"]


def test_nfkc_normalises_ligatures_and_full_width_forms() -> None:
    assert tokenize_mixed("ﬁle ＡＢＣ") == ["file", "abc"]


def test_cjk_run_adjacent_to_latin_splits_into_scripts() -> None:
    assert tokenize_mixed("中文abc日本") == ["中文", "abc", "日本"]


def test_cjk_extension_a_makes_bigrams() -> None:
    assert tokenize_mixed("㐀㐁㐂") == ["㐀㐁", "㐁㐂"]


def test_long_cjk_run_gives_n_minus_one_bigrams_and_no_unigrams() -> None:
    tokens = tokenize_mixed("プログラミング学習")
    assert tokens == ["プロ", "ログ", "グラ", "ラミ", "ミン", "ング", "グ学", "学习"]
    assert "学" not in tokens


# --------------------------------------------------------------------------- tags


def test_nested_tag_gives_every_prefix_with_and_without_hash() -> None:
    assert tokenize_mixed("#Project/Alpha/Beta") == [
        "#project/alpha/beta",
        "project/alpha/beta",
        "project",
        "#project",
        "project/alpha",
        "#project/alpha",
        "alpha",
        "beta",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "#1990s #123", ["#1990s", "1990s", "123"], id="digits-only-is-an-issue-number"
        ),
        pytest.param("#12-3", ["12", "3", "123"], id="digits-and-hyphen-not-a-tag"),
        pytest.param("#tag/", ["#tag", "tag"], id="trailing-slash-stripped"),
        pytest.param("#a-", ["#a", "a"], id="trailing-hyphen-stripped"),
        pytest.param("page#anchor", ["page", "anchor"], id="anchor-not-a-tag"),
        pytest.param("&#39;", ["39"], id="html-entity-not-a-tag"),
        pytest.param("##x", ["x"], id="double-hash-not-a-tag"),
        pytest.param("foo#bar #baz", ["#baz", "baz", "foo", "bar"], id="glued-and-real"),
    ],
)
def test_what_counts_as_a_tag(text: str, expected: list[str]) -> None:
    assert tokenize_mixed(text) == expected


def test_tag_words_are_not_repeated_as_plain_words_but_plain_words_stay() -> None:
    # The tag's own segments come first; the standalone "alpha" later adds nothing new.
    assert tokenize_mixed("#project/alpha alpha beta") == [
        "#project/alpha",
        "project/alpha",
        "project",
        "#project",
        "alpha",
        "beta",
    ]


def test_lone_combining_mark_gives_no_empty_term() -> None:
    # NFKC turns the spacing acute U+00B4 into a space and a combining acute, which folds to "".
    assert tokenize_mixed("where \\\u00b4 character") == ["where", "\u0301", "character"]


# --------------------------------------------------------------------- fold_accents, contains_cjk


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("naïve", "naive"),
        ("Ångström", "Angstrom"),
        ("abc", "abc"),
        ("中", "中"),
        ("ελλάδα", "ελλαδα"),
        ("", ""),
    ],
)
def test_fold_accents(word: str, expected: str) -> None:
    assert fold_accents(word) == expected


def test_fold_accents_returns_ascii_input_unchanged_object() -> None:
    word = "plain"
    assert fold_accents(word) is word


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("abc", False),
        ("", False),
        ("Привет", False),
        ("café", False),
        ("a中", True),
        ("한", True),
        ("カ", True),
        ("ｶ", True),
        ("の", True),
        ("㐀", True),
        ("\U00020000", True),
    ],
)
def test_contains_cjk(text: str, expected: bool) -> None:
    assert contains_cjk(text) is expected


# --------------------------------------------------------------------------- known bug


@pytest.mark.parametrize(
    ("text", "expected_term"),
    [
        pytest.param("हिन्दी भाषा", "हिन्दी", id="devanagari-word"),
        pytest.param("مُحَمَّد", "محمد", id="arabic-harakat-folded"),
        pytest.param("#हिन्दी", "#हिन्दी", id="devanagari-tag"),
    ],
)
def test_words_with_combining_marks_stay_whole(text: str, expected_term: str) -> None:
    assert expected_term in tokenize_mixed(text)


def test_devanagari_tag_is_whole_in_markdown_parser() -> None:
    # The reference point for the xfail above: the note parser keeps the whole tag.
    assert parse_note("#हिन्दी").tags == ("#हिन्दी",)


@pytest.mark.parametrize(
    ("sentence", "word"),
    [
        ("การซิงค์โน้ตระหว่างอุปกรณ์", "โน้ต"),  # Thai: "syncing notes between devices"
        ("ការធ្វើសមកាលកម្មកំណត់ចំណាំ", "ចំណាំ"),  # Khmer: "syncing notes"
        ("ການຊິງໂນ້ດ", "ໂນ້ດ"),  # Lao
        ("မှတ်စုများကိုထပ်တူပြုခြင်း", "မှတ်စု"),  # Myanmar: "syncing notes"
    ],
)
def test_unspaced_southeast_asian_scripts_make_bigrams(sentence: str, word: str) -> None:
    # A sentence with no spaces used to be one token, so no query word could match it.
    sentence_terms = set(tokenize_mixed(sentence))
    word_terms = tokenize_mixed(word)
    assert sentence not in sentence_terms
    assert word_terms
    assert all(len(term) == 2 for term in word_terms)
    assert set(word_terms) <= sentence_terms


@pytest.mark.parametrize(
    "text",
    [
        "escaped \\#notatag here",
        "a path/#anchor inside",
        "C# and issue#12 and page#top and &#39;",
        "real #tag and #nested/tag/ and #1990s but not #123",
        "##double and #café and #हिन्दी",
    ],
)
def test_lexical_search_and_the_note_parser_agree_on_tags(text: str) -> None:
    # The tokenizer's tag terms are exactly the note parser's tags and their prefixes.
    parsed = {tag.lower().rstrip("/") for tag in parse_note(text).tags}
    tokens = {t for t in tokenize_mixed(text) if t.startswith("#")}
    expected: set[str] = set()
    for tag in parsed:
        parts = tag[1:].split("/")
        expected.update("#" + "/".join(parts[: i + 1]) for i in range(len(parts)))
    assert tokens == expected


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("c# and c++ in F#, g++;", ["c#", "c++", "f#", "g++"]),
        ("abc# xc++ _c# 1c# é# c+++ c## c#+ a#b", []),
        ("# Heading\n## c#\n-c# .c++ (c#)", ["c#", "c#", "c++", "c#"]),
    ],
)
def test_language_names_are_a_letter_alone_before_its_mark(text: str, names: list[str]) -> None:
    """`c#`, `c++`: the letter may not be glued to a word, and nothing word-like may follow."""
    assert symbol_terms(text.lower()) == names


def test_the_run_cache_stays_within_its_limit_and_changes_no_terms() -> None:
    text = " ".join(f"e-mail{n} café{n} 東京{n}" for n in range(300))
    expected = tokenize_mixed(text)
    set_run_cache_size(64)
    try:
        assert tokenize_mixed(text) == expected
        assert len(tokenize_module._RUN_TERMS) <= 64
    finally:
        set_run_cache_size(tokenize_module.SEARCH_RUN_CACHE)


def _terms_found_by_the_pattern(text: str) -> list[str]:
    """Every term occurrence as found before runs were split at the byte level: the
    joined-run pattern over the whole text, and emoji apart. One difference is meant: a
    pictograph that is also a word character (`❶`) inside a tag is the tag's only."""
    lowered = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).lower()
    terms = tokenize_module._language_terms(lowered)
    remainder = lowered
    if "#" in lowered:
        for match in TAG_PATTERN.finditer(lowered):
            tag_terms: dict[str, None] = {}
            tokenize_module._add_tag_terms(match.group(0).rstrip("/-"), tag_terms)
            terms.extend(tag_terms)
        remainder = TAG_PATTERN.sub(" ", lowered)
    terms.extend(tokenize_module._EMOJI.findall(remainder))
    for run in tokenize_module._JOINED_RUN.findall(remainder):
        terms.extend(tokenize_module._split_run(run))
    return terms


_MIXED_TEXT = st.text(
    st.one_of(
        st.sampled_from(list(" \n\t.,;:!?()[]<>'\"’-_#+/@«»—。、，　\u00a0\u0301")),
        st.sampled_from(list("aZé9ßİ東京学校한국어ไทยКириллица🚀✅")),
        st.characters(codec="utf-8"),
    ),
    max_size=40,
)


@settings(max_examples=600, deadline=None)
@given(_MIXED_TEXT)
def test_runs_split_at_the_byte_level_give_the_terms_the_pattern_gives(text: str) -> None:
    # ASCII separators split the UTF-8 at C speed; what stays glued (non-ASCII
    # punctuation, emoji, CJK, a combining accent) is split by the pattern, once per run.
    expected = _terms_found_by_the_pattern(text)
    assert Counter(term_occurrences(text)) == Counter(expected)
    assert sorted(tokenize_mixed(text)) == sorted(dict.fromkeys(expected))


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("ship it 🚀 now", ["ship", "it", "🚀", "now"]),
        ("done✅ «next» step", ["done", "✅", "next", "step"]),
        ("#todo ❶ first", ["#todo", "todo", "❶", "❶", "first"]),
        ("C# — 大阪 🚀", ["c#", "c", "大阪", "🚀"]),
    ],
)
def test_term_occurrences_keep_the_order_of_the_text(text: str, terms: list[str]) -> None:
    # TF-IDF's word pairs are made of neighbouring terms: an emoji stays where it is.
    assert term_occurrences(text) == terms


def test_a_long_run_counts_for_its_length_in_the_run_cache() -> None:
    # A paragraph of Chinese is one run between ASCII separators: it is kept, but takes
    # the room of as many short runs as its bytes would fill.
    paragraph = "今天我们在会议上讨论了新的项目计划，并且决定下周开始。" * 3
    weight = 1 + len(paragraph.encode()) // tokenize_module.RUN_WEIGHT_BYTES
    set_run_cache_size(weight + 1)
    tokenize_module._RUN_TERMS.clear()  # runs earlier tests left would count too
    try:
        assert "会议" in tokenize_mixed(paragraph)
        assert tokenize_module._RUN_TERMS.used == weight
        assert tokenize_mixed("大阪 ok") == ["大阪", "ok"]  # two more: over the limit
        assert paragraph.encode() not in tokenize_module._RUN_TERMS
        assert tokenize_module._RUN_TERMS.used <= weight + 1
    finally:
        set_run_cache_size(tokenize_module.SEARCH_RUN_CACHE)


def test_a_lone_surrogate_is_split_not_refused() -> None:
    # What `surrogateescape` makes of a file name that is not UTF-8.
    assert tokenize_mixed("caf\udce9 menu") == ["caf", "menu"]
