"""Chunking: the worked outputs of the reference (§4), the ChunkManager cases (§22.3), chunk ids."""

from __future__ import annotations

import re

import pytest

from langchain_vaultsearch.text.chunking import (
    CHUNK_SIZE,
    MARKDOWN_SEPARATORS,
    Chunk,
    chunk_header,
    chunk_index_from_chunk_id,
    chunk_note,
    note_path_from_chunk_id,
    split_text,
)
from langchain_vaultsearch.vault.markdown import Heading

_ATX = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*$", re.MULTILINE)


def headings_of(text: str) -> list[Heading]:
    """ATX headings with their offsets; the test notes have no `#` lines inside fences."""
    return [Heading(len(m[1]), m[2], m.start()) for m in _ATX.finditer(text)]


def chunks_of(path: str, text: str, max_chars: int, body_start: int = 0) -> list[Chunk]:
    return chunk_note(path, text, headings_of(text), body_start, max_chars)


def bodies(chunks: list[Chunk]) -> list[str]:
    return [c.content.removeprefix(chunk_header(c.title)) for c in chunks]


MEDIUM = (
    "# Introduction\n\nThis is a medium-length note.\n\n## Section 1\n\nSome content here with "
    "multiple paragraphs to test chunking.\n\n## Section 2\n\nMore content in this section that "
    "should be chunked appropriately."
)
LONG = (
    "# Large Document\n\nThis is a very long document that will need chunking.\n\n## Chapter 1: "
    "Introduction\n\nLorem ipsum dolor sit amet, consectetur adipiscing elit. Sed do eiusmod "
    "tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
    "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor "
    "in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur "
    "sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est "
    "laborum.\n\n## Chapter 2: Main Content\n\nSed ut perspiciatis unde omnis iste natus error "
    "sit voluptatem accusantium doloremque laudantium, totam rem aperiam, eaque ipsa quae ab "
    "illo inventore veritatis et quasi architecto beatae vitae dicta sunt explicabo. Nemo enim "
    "ipsam voluptatem quia voluptas sit aspernatur aut odit aut fugit, sed quia consequuntur "
    "magni dolores eos qui ratione voluptatem sequi nesciunt.\n\n### Subsection 2.1\n\nAt vero "
    "eos et accusamus et iusto odio dignissimos ducimus qui blanditiis praesentibus voluptatum "
    "deleniti atque corrupti quos dolores et quas molestias excepturi sint occaecati cupiditate "
    "non provident, similique sunt in culpa qui officia deserunt mollitia animi, id est laborum "
    "et dolorum fuga.\n\n## Chapter 3: Conclusion\n\nEt harum quidem rerum facilis est et "
    "expedita distinctio. Nam libero tempore, cum soluta nobis est eligendi optio cumque nihil "
    "impedit quo minus id quod maxime placeat facere possimus, omnis voluptas assumenda est, "
    "omnis dolor repellendus."
)
JS_BLOCK = (
    "```javascript\nfunction example() {\n  console.log('This code block should not be split');\n"
    "  return 'value';\n}\n```"
)
PY_BLOCK = (
    "```python\ndef another_function():\n    print('Another code block')\n    return True\n```"
)
CODE = (
    f"# Code Examples\n\n{JS_BLOCK}\n\n## Another Section\n\nSome text after the code block.\n\n"
    f"{PY_BLOCK}\n\nMore content here."
)
FRONTMATTER = "---\ntitle: Test Document\nauthor: John Doe\ntags: [test, chunk]\n---\n"
FRONTMATTER_NOTE = (
    f"{FRONTMATTER}\n# Document with Frontmatter\n\nThis document has YAML frontmatter that "
    "should be excluded from chunks.\n\n## Content Section\n\nThe actual content starts here and "
    "should be chunked properly."
)
CHINESE = (
    "# 中文文档测试\n\n这是一个用于测试中文字符分块的文档。中文文本应该能够正确处理。\n\n"
    "## 第一部分\n\n"
    "中文内容包含各种字符，包括标点符号和数字123。"
    "这些内容应该被正确地分块处理。\n\n## 第二部分\n\n"
    "更多的中文内容用于测试分块功能的正确性。系统应该能够处理中文、日文和韩文字符。"
)
SENTENCE = (
    "This sentence is intentionally long so the second chunk is close to the configured "
    "chunk limit."
)


# --- constants and header ---------------------------------------------------------------


def test_constants_are_the_js_markdown_list_and_the_original_size() -> None:
    assert CHUNK_SIZE == 6000
    assert MARKDOWN_SEPARATORS == (
        "\n## ",
        "\n### ",
        "\n#### ",
        "\n##### ",
        "\n###### ",
        "```\n\n",
        "\n\n***\n\n",
        "\n\n---\n\n",
        "\n\n___\n\n",
        "\n\n",
        "\n",
        " ",
        "",
    )


def test_chunk_header_text_and_length() -> None:
    assert chunk_header("short") == "\n\nNOTE TITLE: [[short]]\n\nNOTE BLOCK CONTENT:\n\n"
    assert len(chunk_header("")) == 41
    assert len(chunk_header("中文")) == 43


# --- worked chunk outputs (§4) ----------------------------------------------------------


def test_short_note_is_one_chunk_without_heading() -> None:
    text = "This is a short note with minimal content."
    assert chunks_of("short.md", text, 2000) == [
        Chunk(
            id="short.md#0",
            note_path="short.md",
            chunk_index=0,
            content=chunk_header("short") + text,
            heading="",
            title="short",
        )
    ]


def test_note_that_fits_is_not_split_by_headings_and_takes_the_first_heading() -> None:
    text = "# Title\n\nPara one is here.\n\n## Sub\n\nPara two is here."
    chunks = chunks_of("A.md", text, 2000)
    assert [(c.id, c.heading, c.content) for c in chunks] == [
        ("A.md#0", "Title", chunk_header("A") + text)
    ]


def test_heading_first_split_at_90() -> None:
    text = "# Title\n\nPara one is here.\n\n## Sub\n\nPara two is here and it is a little longer."
    chunks = chunks_of("A.md", text, 90)
    assert [(c.id, c.heading, c.content) for c in chunks] == [
        ("A.md#0", "Title", chunk_header("A") + "# Title\n\nPara one is here.\n\n"),
        (
            "A.md#1",
            "Sub",
            chunk_header("A") + "## Sub\n\nPara two is here and it is a little longer.",
        ),
    ]
    # Section 1 plus the header is 93 > 90, so it went through the splitter, which returned it
    # whole (51 <= 90): split pieces may exceed max_chars by up to the header length.
    assert len(chunks[1].content) == 93


def test_size_limits_include_the_header_and_are_inclusive() -> None:
    text = "# Title\n\nPara one is here.\n\n## Sub\n\nPara two is here."
    assert len(chunk_header("A") + text) == 95
    assert bodies(chunks_of("A.md", text, 95)) == [text]
    # One less and the note is split by headings; section 0 (+ header) is exactly 70.
    assert bodies(chunks_of("A.md", text, 94)) == [
        "# Title\n\nPara one is here.\n\n",
        "## Sub\n\nPara two is here.",
    ]
    assert bodies(chunks_of("A.md", text, 70))[0] == "# Title\n\nPara one is here.\n\n"
    # At 69 section 0 goes through the splitter, which drops the empty tail.
    assert bodies(chunks_of("A.md", text, 69))[0] == "# Title\n\nPara one is here."


def test_preamble_joins_section_zero_and_frontmatter_is_gone() -> None:
    fm = "---\ntitle: f\n---\n"
    text = fm + "Intro text.\n\n# H1\n\nBody one.\n\n# H2\n\nBody two."
    chunks = chunks_of("F.md", text, 70, body_start=len(fm))
    # The reference table shows a trailing blank line on #0; the JS splitter (checked against
    # @langchain/textsplitters) drops it: section 0 + header is 72 > 70, so it is split on
    # "\n\n" and re-joined without the empty tail.
    assert [(c.id, c.heading, c.content) for c in chunks] == [
        ("F.md#0", "H1", chunk_header("F") + "Intro text.\n\n# H1\n\nBody one."),
        ("F.md#1", "H2", chunk_header("F") + "# H2\n\nBody two."),
    ]


def test_heading_only_chunk_stays_alone_when_a_merge_would_exceed_max() -> None:
    text = "\n\n".join(["# Heading", "", SENTENCE, SENTENCE, SENTENCE])
    chunks = chunks_of("heading-only-no-merge.md", text, 90)
    head = SENTENCE.removesuffix(" limit.")
    assert bodies(chunks) == ["# Heading", head, "limit.", head, "limit.", head, "limit."]
    assert {c.heading for c in chunks} == {"Heading"}
    assert SENTENCE[:34] not in chunks[0].content


# --- ChunkManager cases (§22.3) ---------------------------------------------------------


def test_long_note_at_500_ids_in_order_and_the_true_size_bound() -> None:
    chunks = chunks_of("long.md", LONG, 500)
    assert [c.id for c in chunks] == [f"long.md#{i}" for i in range(5)]
    assert [c.chunk_index for c in chunks] == list(range(5))
    assert [c.heading for c in chunks] == [
        "Large Document",
        "Chapter 1: Introduction",
        "Chapter 2: Main Content",
        "Subsection 2.1",
        "Chapter 3: Conclusion",
    ]
    # The reference's "every chunk <= 500" only held with its fake heading offsets: a split
    # piece is <= max_chars WITHOUT the header, so the bound is max_chars + len(header).
    assert [len(c.content) for c in chunks] == [118, 518, 445, 363, 310]
    assert max(len(c.content) for c in chunks) <= 500 + len(chunk_header("long"))


def test_long_note_at_300_keeps_heading_only_chunks_that_cannot_merge() -> None:
    chunks = chunks_of("long.md", LONG, 300)
    assert len(chunks) == 10
    assert bodies(chunks)[1] == "## Chapter 1: Introduction"
    assert bodies(chunks)[7] == "### Subsection 2.1"
    assert chunks[7].heading == "Subsection 2.1"
    assert bodies(chunks)[8].startswith("At vero eos")


def test_medium_note_at_200_labels_each_section() -> None:
    chunks = chunks_of("medium.md", MEDIUM, 200)
    assert [(c.heading, b) for c, b in zip(chunks, bodies(chunks), strict=True)] == [
        ("Introduction", "# Introduction\n\nThis is a medium-length note.\n\n"),
        (
            "Section 1",
            "## Section 1\n\nSome content here with multiple paragraphs to test chunking.\n\n",
        ),
        (
            "Section 2",
            "## Section 2\n\nMore content in this section that should be chunked appropriately.",
        ),
    ]


def test_code_blocks_stay_intact_when_the_note_fits() -> None:
    chunks = chunks_of("code.md", CODE, 4000)
    assert [c.content for c in chunks] == [chunk_header("code") + CODE]
    assert JS_BLOCK in chunks[0].content
    assert PY_BLOCK in chunks[0].content


def test_split_section_loses_the_closing_fence_like_the_original() -> None:
    # "```\n\n" is a separator and keepSeparator is false, so a cut there drops the closing
    # backticks: faithful to the original, and why large code sections index without them.
    chunks = chunks_of("code.md", CODE, 150)
    assert bodies(chunks) == [
        "# Code Examples\n\n" + JS_BLOCK.removesuffix("```"),
        "## Another Section\n\nSome text after the code block.\n\n" + PY_BLOCK.removesuffix("```"),
        "More content here.",
    ]
    assert [c.heading for c in chunks] == ["Code Examples", "Another Section", "Another Section"]


def test_frontmatter_is_excluded() -> None:
    chunks = chunks_of("frontmatter.md", FRONTMATTER_NOTE, 4000, body_start=len(FRONTMATTER))
    # The blank line after the fence is dropped (leading whitespace of the body).
    assert [c.content for c in chunks] == [
        chunk_header("frontmatter") + FRONTMATTER_NOTE[len(FRONTMATTER) + 1 :]
    ]
    for fragment in ("title: Test Document", "author: John Doe", "tags: [test, chunk]", "---"):
        assert fragment not in chunks[0].content
    assert chunks[0].heading == "Document with Frontmatter"


def test_whitespace_heavy_single_h1_note_coalesces_the_heading_forward() -> None:
    def paragraph(i: int) -> str:
        sentence = (
            " Pick a problem you find exciting, learn enough to reach the frontier, notice the "
            "gaps others ignore, and keep going when it is hard."
        )
        return f" Step {i}:{sentence * 7}   "

    intro = (
        " If you collected lists of techniques for doing great work in a lot of different "
        "fields, what would the intersection look like?   "
    )
    lines = ["# 218 How to Do Great Work", "", "", "  ", " ", " July 2023   ", "  ", intro]
    for i in range(1, 9):
        lines += ["  ", paragraph(i)]
    text = "\n".join(lines) + "\n\n* * *\n\n[^1]: A footnote about great work."
    heading = [Heading(1, "218 How to Do Great Work", 0)]

    # Without coalescing, the splitter leaves the H1 alone in the first piece.
    assert split_text(text, 6000)[0] == "# 218 How to Do Great Work"

    chunks = chunk_note("How to Do Great Work.md", text, heading, 0, 6000)
    header = chunk_header("How to Do Great Work")
    # Piece 1 is the lines up to Step 6 and the following "  " line, spaces trimmed (the
    # trailing "\n" stays); the merge strips its leading whitespace and joins with "\n\n".
    first_piece = "\n".join(lines[5:21]).strip(" ")
    assert lines[19:21] == [paragraph(6), "  "]
    assert chunks[0].content == header + "# 218 How to Do Great Work\n\n" + first_piece
    assert "If you collected lists of techniques for doing great work" in chunks[0].content
    assert len(chunks[0].content) == 5912
    assert bodies(chunks)[1:] == [
        "\n  \n".join([paragraph(7), paragraph(8)]).strip(" "),
        "* * *\n\n[^1]: A footnote about great work.",
    ]
    assert {c.heading for c in chunks} == {"218 How to Do Great Work"}


def test_chinese_note_every_chunk_has_cjk() -> None:
    whole = chunks_of("chinese.md", CHINESE, 2000)
    assert [c.content for c in whole] == [chunk_header("chinese") + CHINESE]
    split = chunks_of("chinese.md", CHINESE, 80)
    assert [c.heading for c in split] == ["中文文档测试", "第一部分", "第二部分"]
    assert all(re.search("[\u4e00-\u9fff]", b) for b in bodies(split))


def test_ids_are_not_zero_padded() -> None:
    paragraph = (
        "This is a substantial paragraph with enough content to create multiple chunks when "
        "split by the chunking algorithm. "
    ) * 20
    chunks = chunk_note("test.md", "\n\n".join([paragraph] * 10), [], 0, 1000)
    assert [c.id for c in chunks] == [f"test.md#{i}" for i in range(30)]
    assert chunks[10].id == "test.md#10"
    assert {c.heading for c in chunks} == {""}


def test_fifteen_sections_at_800() -> None:
    text = "\n\n".join(f"# Section {i}\n" + "Content " * 200 for i in range(15))
    chunks = chunks_of("multi-chunk.md", text, 800)
    # Each section: its heading alone (52 + 11 + 2 + 799 > 800 forbids the merge), then
    # 100 words, then 100 words.
    assert len(chunks) == 45
    assert [chunks[i].id for i in (0, 5, 10)] == [
        "multi-chunk.md#0",
        "multi-chunk.md#5",
        "multi-chunk.md#10",
    ]
    hundred_words = " ".join(["Content"] * 100)
    assert bodies(chunks)[:3] == ["# Section 0", hundred_words, hundred_words]
    assert chunks[5].heading == "Section 1"
    assert chunks[44].heading == "Section 14"


def test_same_input_gives_identical_chunks() -> None:
    first = chunks_of("long.md", LONG, 300)
    assert chunks_of("long.md", LONG, 300) == first
    assert [c.chunk_index for c in first] == list(range(len(first)))


# --- whitespace, offsets and edge cases -------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\t\n  \u3000\n"])
def test_blank_note_has_no_chunks(text: str) -> None:
    assert chunk_note("blank.md", text, [], 0) == []


def test_frontmatter_only_note_has_no_chunks() -> None:
    # The original would emit one header-only chunk; an empty body is not indexed here.
    text = "---\ntitle: x\n---\n\n"
    assert chunk_note("fm.md", text, [], len("---\ntitle: x\n---\n")) == []


def test_outer_whitespace_is_trimmed_without_shifting_heading_offsets() -> None:
    # Header 42 + the trimmed note 46 = 88 > 80 forces the heading split; both sections fit.
    text = "\n \n# A\n\nalpha alpha alpha alpha alpha \n\n# B\n\nbeta\n\n  \n"
    chunks = chunk_note("w.md", text, headings_of(text), 0, 80)
    assert [(c.heading, b) for c, b in zip(chunks, bodies(chunks), strict=True)] == [
        ("A", "# A\n\nalpha alpha alpha alpha alpha \n\n"),
        ("B", "# B\n\nbeta"),
    ]


def test_unsorted_headings_are_ordered_by_offset() -> None:
    text = "# One\n\n" + "x " * 10 + "\n\n# Two\n\ny"
    ordered = headings_of(text)
    assert chunk_note("u.md", text, ordered[::-1], 0, 75) == chunk_note(
        "u.md", text, ordered, 0, 75
    )
    assert [c.heading for c in chunk_note("u.md", text, ordered[::-1], 0, 75)] == ["One", "Two"]


def test_whole_heading_only_section_is_not_coalesced() -> None:
    # Coalescing only applies to the pieces of one split section, as in the original.
    text = "# Empty\n\n## Full\n\n" + "word " * 30
    chunks = chunks_of("e.md", text, 80)
    assert bodies(chunks)[0] == "# Empty\n\n"
    assert chunks[1].heading == "Full"


def test_trailing_heading_only_piece_merges_backwards() -> None:
    # No headings given, so "# End" is plain text of one section and becomes the last piece.
    text = "word " * 30 + "\n\n# End"
    chunks = chunk_note("t.md", text, [], 0, 100)
    assert bodies(chunks) == [" ".join(["word"] * 20), " ".join(["word"] * 10) + "\n\n# End"]


def test_coalescing_budget_counts_the_header() -> None:
    line = " ".join(["word"] * 12)
    text = "# Head\n\n" + line + "\n" + "y " * 60
    chunks = chunk_note("t.md", text, [], 0, 100)
    # 42 + len("# Head") + 2 + 59 = 109 > 100: the heading stays alone.
    assert bodies(chunks) == ["# Head", line, " ".join(["y"] * 50), " ".join(["y"] * 10)]


def test_heading_line_followed_by_text_is_not_tiny() -> None:
    text = "# Head\nline two\n\nshort\n" + "y " * 60
    chunks = chunk_note("t.md", text, [], 0, 100)
    assert bodies(chunks) == [
        "# Head\nline two",
        "short",
        " ".join(["y"] * 50),
        " ".join(["y"] * 10),
    ]


def test_blank_piece_is_merged_into_the_next_one() -> None:
    # The splitter keeps "  \n  " as "\n" (only spaces are trimmed); coalescing removes it.
    text = "w " * 60 + "\n\n  \n  \n\nshort\n" + "v " * 60
    assert split_text(text, 100)[2] == "\n"
    chunks = chunk_note("t.md", text, [], 0, 100)
    assert bodies(chunks) == [
        " ".join(["w"] * 50),
        " ".join(["w"] * 10),
        "short",
        " ".join(["v"] * 50),
        " ".join(["v"] * 10),
    ]


def test_title_is_the_basename_without_md() -> None:
    chunks = chunk_note("folder/sub/My Note.md", "Hello", [], 0)
    assert [(c.id, c.note_path, c.title, c.content) for c in chunks] == [
        (
            "folder/sub/My Note.md#0",
            "folder/sub/My Note.md",
            "My Note",
            chunk_header("My Note") + "Hello",
        )
    ]


# --- split_text -------------------------------------------------------------------------


def test_split_separator_priority_and_separator_is_dropped() -> None:
    assert split_text("intro\n\npara\n## Sub\n\nbody", 15) == ["intro\n\npara", "Sub\n\nbody"]
    assert split_text("```js\nx\n```\n\nafter text here", 10) == [
        "```js\nx\n",
        "after text",
        "here",
    ]


def test_split_merge_rule_counts_separators_inclusively() -> None:
    assert split_text("aa bb cc dd", 5) == ["aa bb", "cc dd"]
    assert split_text("aa bb cc", 8) == ["aa bb cc"]
    assert split_text("aa bb cc", 7) == ["aa bb", "cc"]


def test_split_drops_empty_and_blank_pieces() -> None:
    assert split_text("a\n\n\n\n\n\nb", 2) == ["a", "b"]
    assert split_text("a\n\n   \n\nb", 3) == ["a", "b"]
    assert split_text("", 10) == []


def test_split_trim_removes_spaces_but_not_line_breaks_or_tabs() -> None:
    assert split_text("alpha\n\n\n beta gamma", 13) == ["alpha", "\n beta gamma"]
    assert split_text("x\n\n\u3000beta\u00a0\t", 8) == ["x", "beta\u00a0\t"]


def test_split_over_long_word() -> None:
    # With no separator left the word is emitted as is...
    assert split_text("x" * 50, 10, ("\n\n", "\n", " ")) == ["x" * 50]
    # ...while the markdown list ends with "" and cuts it into windows.
    assert split_text("ab " + "x" * 25, 10) == ["ab", "x" * 10, "x" * 10, "x" * 5]
    assert split_text("中" * 25, 10) == ["中" * 10, "中" * 10, "中" * 5]


def test_split_piece_of_exactly_chunk_size_is_split_again() -> None:
    # Only pieces strictly shorter than chunk_size are merged as they are.
    assert split_text("a  b\n\nc", 4) == ["a b", "c"]
    assert split_text("a  b\n\nc", 5) == ["a  b", "c"]


def test_split_with_an_exhausted_custom_list_cuts_between_characters() -> None:
    # JS throws here (it recurses with no separator); this port cuts like "".
    assert split_text("ab " + "x" * 25, 10, ("\n", " ")) == ["ab", "x" * 10, "x" * 10, "x" * 5]


def test_split_rejects_non_positive_size() -> None:
    with pytest.raises(ValueError, match="chunk_size must be at least 1, got 0"):
        split_text("abc", 0)


# --- chunk ids (§22.1, §22.3) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("chunk_id", "path"),
    [
        ("note.md#0", "note.md"),
        ("note.md#12", "note.md"),
        ("a/b/c/note.md#3", "a/b/c/note.md"),
        ("folder/note.md", "folder/note.md"),
        ("", ""),
        ("C#.md#0", "C#.md"),
        ("C#.md", "C#.md"),
        ("file.md#notanumber", "file.md#notanumber"),
        ("note.md#", "note.md#"),
        ("test.md#1000", "test.md"),
    ],
)
def test_note_path_from_chunk_id(chunk_id: str, path: str) -> None:
    assert note_path_from_chunk_id(chunk_id) == path


@pytest.mark.parametrize(
    ("chunk_id", "index"),
    [
        ("note.md#0", 0),
        ("a/b/c/note.md#3", 3),
        ("test.md#1000", 1000),
        ("C#.md#7", 7),
        ("malformed-id", None),
        ("file.md#notanumber", None),
        ("non-existent.md#", None),
        ("note.md#-1", None),
        ("note.md#²", None),
        ("", None),
    ],
)
def test_chunk_index_from_chunk_id(chunk_id: str, index: int | None) -> None:
    assert chunk_index_from_chunk_id(chunk_id) == index
