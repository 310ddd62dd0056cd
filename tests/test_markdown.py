"""Behaviour of the Obsidian markdown rules in `langchain_vaultsearch.vault.markdown`."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest

from langchain_vaultsearch.vault.markdown import (
    Heading,
    Link,
    ParsedNote,
    extract_headings,
    extract_inline_tags,
    extract_links,
    extract_tags_from_query,
    frontmatter_aliases,
    frontmatter_tags,
    normalize_tag,
    parse_frontmatter,
    parse_note,
    property_values,
    tag_hierarchy,
)
from langchain_vaultsearch.vault.markdown_syntax import TAG_PATTERN

# --------------------------------------------------------------------------- frontmatter


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("---\ntitle: Hi\n---\nbody", ({"title": "Hi"}, 18, None), id="lf"),
        pytest.param("---\r\ntitle: Hi\r\n---\r\nbody", ({"title": "Hi"}, 21, None), id="crlf"),
        pytest.param("\ufeff---\ntitle: Hi\n---\nbody", ({"title": "Hi"}, 19, None), id="bom"),
        pytest.param("---\na: 1\n...\nbody", ({"a": 1}, 13, None), id="dots-close"),
        pytest.param("---\na: 1\n---", ({"a": 1}, 12, None), id="close-at-end-of-text"),
        pytest.param("---\n---\nbody", ({}, 8, None), id="empty-block"),
        pytest.param("---\n\n  \n---\nbody", ({}, 12, None), id="blank-block"),
        pytest.param("---\n# just a comment\n---\n", ({}, 25, None), id="comment-only"),
        pytest.param("---\na: 1\nbody without close", ({}, 0, None), id="no-closing-fence"),
        pytest.param("---\na: 1\n----\n", ({}, 0, None), id="four-dashes-do-not-close"),
        pytest.param("---\na: 1\n--- x\n", ({}, 0, None), id="fence-with-text-does-not-close"),
        pytest.param("text\n---\na: 1\n---\n", ({}, 0, None), id="not-at-start"),
        pytest.param(" ---\na: 1\n---\n", ({}, 0, None), id="indented-open"),
        pytest.param("---a\nb: 1\n---\n", ({}, 0, None), id="open-with-text"),
        pytest.param("", ({}, 0, None), id="empty-text"),
    ],
)
def test_parse_frontmatter_fences(text: str, expected: tuple[dict[str, Any], int, None]) -> None:
    assert parse_frontmatter(text) == expected


def test_parse_frontmatter_keeps_yaml_types() -> None:
    text = "---\ndate: 2024-05-01\ncount: 3\ndone: true\nlist: [a, 1]\n---\n"
    assert parse_frontmatter(text) == (
        {"date": dt.date(2024, 5, 1), "count": 3, "done": True, "list": ["a", 1]},
        len(text),
        None,
    )


def test_parse_frontmatter_turns_keys_into_strings() -> None:
    assert parse_frontmatter("---\n1: a\n2024-01-02: b\n---\n")[0] == {
        "1": "a",
        "2024-01-02": "b",
    }


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        pytest.param("a: b: c", "invalid YAML at line 2: mapping values are not allowed here"),
        pytest.param(
            "key: @value",
            "invalid YAML at line 2: found character '@' that cannot start any token",
        ),
        pytest.param("title: x\ndate: {{date}}", "invalid YAML at line 3: found unhashable key"),
        pytest.param(
            "a: [1, 2", "invalid YAML at line 3: expected ',' or ']', but got '<stream end>'"
        ),
        pytest.param("a: *missing", "invalid YAML at line 2: found undefined alias 'missing'"),
        pytest.param("d: 2024-13-45", "invalid YAML: month must be in 1..12", id="bad-date"),
        pytest.param(
            "a: !!python/object/apply:os.system [ls]",
            "invalid YAML at line 2: could not determine a constructor for the tag "
            "'tag:yaml.org,2002:python/object/apply:os.system'",
            id="unsafe-tag",
        ),
        pytest.param("- a\n- b", "frontmatter is list, not a mapping"),
        pytest.param("just a string", "frontmatter is str, not a mapping"),
        pytest.param("42", "frontmatter is int, not a mapping"),
        pytest.param("~", "frontmatter is null, not a mapping"),
    ],
)
def test_parse_frontmatter_reports_unusable_yaml(block: str, reason: str) -> None:
    text = f"---\n{block}\n---\nbody #tag"
    assert parse_frontmatter(text) == ({}, len(text) - len("body #tag"), reason)


@pytest.mark.parametrize(
    "block",
    [
        pytest.param("[" * 500, id="unclosed"),
        # libyaml overflows the C stack (a crash, not an exception) at this depth.
        pytest.param("[" * 30_000 + "]" * 30_000, id="balanced-beyond-libyaml"),
        pytest.param("{a: " * 50_000, id="mappings"),
    ],
)
def test_parse_frontmatter_survives_deep_nesting(block: str) -> None:
    text = f"---\na: {block}\n---\n"
    mapping, body_start, error = parse_frontmatter(text)
    assert (mapping, body_start) == ({}, len(text))
    assert error is not None
    assert error.startswith("invalid YAML")


# --------------------------------------------------------------------------- headings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("# Title", [Heading(1, "Title", 0)], id="h1"),
        pytest.param(
            "intro\n## Two\n###### Six\n####### Seven",
            [Heading(2, "Two", 6), Heading(6, "Six", 13)],
            id="levels",
        ),
        pytest.param("#tag\n#\n# \n#\ttabbed", [Heading(1, "tabbed", 10)], id="not-headings"),
        pytest.param("   # three spaces\n    # four", [Heading(1, "three spaces", 0)], id="indent"),
        pytest.param("## Closed ##  \n# C#", [Heading(2, "Closed", 0), Heading(1, "C#", 15)]),
        pytest.param("# Only hashes ###\n# ###", [Heading(1, "Only hashes", 0)], id="only-closing"),
        pytest.param("## Plan #project", [Heading(2, "Plan #project", 0)], id="tag-in-heading"),
        pytest.param("# Use `#x` here", [Heading(1, "Use `#x` here", 0)], id="inline-code-kept"),
        pytest.param(
            "# A\r\n## B ##\r\ntext\r\n",
            [Heading(1, "A", 0), Heading(2, "B", 5)],
            id="crlf",
        ),
        pytest.param("\ufeff# Title", [Heading(1, "Title", 0)], id="bom"),
    ],
)
def test_extract_headings(text: str, expected: list[Heading]) -> None:
    assert extract_headings(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "```python\n# comment\n```\n# Real",
            [Heading(1, "Real", 24)],
            id="backticks",
        ),
        pytest.param("~~~\n# comment\n~~~\n# Real", [Heading(1, "Real", 18)], id="tildes"),
        pytest.param(
            "````\n```\n# still code\n````\n# Real",
            [Heading(1, "Real", 27)],
            id="shorter-fence-does-not-close",
        ),
        pytest.param(
            "```\n# code\n~~~\n# code\n```\n# Real",
            [Heading(1, "Real", 26)],
            id="other-char-does-not-close",
        ),
        pytest.param("```\n# code\n# more", [], id="unclosed-fence-runs-to-end"),
        pytest.param(
            "``` not ` a fence\n# Real",
            [Heading(1, "Real", 18)],
            id="backtick-in-info-string",
        ),
        pytest.param(
            "- item\n    ```\n    # code\n    ```\n# Real",
            [Heading(1, "Real", 34)],
            id="indented-fence-in-list",
        ),
        pytest.param(
            "> [!note]\n> ```\n> # code\n> ```\n# Real",
            [Heading(1, "Real", 31)],
            id="fence-in-callout",
        ),
        pytest.param(
            "---\ntitle: x\n# yaml comment\n---\n# Real",
            [Heading(1, "Real", 32)],
            id="frontmatter-skipped",
        ),
        pytest.param(
            "---\na: b: c\n# broken yaml\n---\n# Real",
            [Heading(1, "Real", 30)],
            id="broken-frontmatter-skipped",
        ),
    ],
)
def test_extract_headings_skips_code_and_frontmatter(text: str, expected: list[Heading]) -> None:
    assert extract_headings(text) == expected


# --------------------------------------------------------------------------- inline tags


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("#start of text", ["#start"], id="very-start"),
        pytest.param("a #tag b", ["#tag"], id="simple"),
        pytest.param("(#a), #b. #c, [#d]! '#e'", ["#a", "#b", "#c", "#d", "#e"], id="punct"),
        pytest.param("#tag-name #tag_name #v2", ["#tag-name", "#tag_name", "#v2"], id="chars"),
        pytest.param("#project/alpha/beta", ["#project/alpha/beta"], id="nested"),
        pytest.param("#project/ and #a//", ["#project", "#a"], id="trailing-slash"),
        pytest.param("#123 #2024 #12-34 #1/2 #1990s", ["#1990s"], id="numeric"),
        pytest.param("#2024/q1", ["#2024/q1"], id="numeric-parent"),
        pytest.param("issue#123 C# page#anchor a_#x x1#y", [], id="glued-to-word"),
        pytest.param("&#39; &#x27; \\#escaped ##double", [], id="entity-escape-double-hash"),
        pytest.param("# Title\n## Plan #project", ["#project"], id="heading-marks"),
        pytest.param("#Title-as-tag\n", ["#Title-as-tag"], id="hash-line-is-tag"),
        pytest.param("#Tag #tag #TAG #other", ["#Tag", "#other"], id="dedupe-first-spelling"),
        pytest.param(
            "#café #日本語 #项目/测试 #Привет",
            ["#café", "#日本語", "#项目/测试", "#Привет"],
            id="unicode",
        ),
        pytest.param("#cafe\u0301 #हिन्दी", ["#cafe\u0301", "#हिन्दी"], id="combining-marks"),
        pytest.param("end with #tag.", ["#tag"], id="sentence-end"),
        pytest.param("# not a tag\n#", [], id="lonely-hashes"),
    ],
)
def test_extract_inline_tags(text: str, expected: list[str]) -> None:
    assert extract_inline_tags(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("```\n#fenced\n```\n#after", ["#after"], id="fenced"),
        pytest.param("~~~~\n#fenced\n~~~~\n#after", ["#after"], id="tilde-fenced"),
        pytest.param("```\n#never\nclosed", [], id="unclosed-fence"),
        pytest.param("use `#code` and #real", ["#real"], id="inline-code"),
        pytest.param("use ``a ` #code`` and #real", ["#real"], id="double-backtick-code"),
        pytest.param("`#a\n#b` #real", ["#real"], id="inline-code-over-two-lines"),
        pytest.param("`#a\n\n#b` x", ["#a", "#b"], id="blank-line-ends-inline-code"),
        pytest.param("a stray ` then #real", ["#real"], id="unmatched-backtick"),
        pytest.param("---\ntags: [x]\n# c #yaml\n---\n#body", ["#body"], id="frontmatter"),
        pytest.param(
            "[[Note#Heading]] [[#Local]] ![[img.png#x]] #real", ["#real"], id="wikilink-targets"
        ),
        pytest.param("[#text](other.md#frag) [x](#anchor)", ["#text"], id="markdown-link-url"),
        pytest.param(
            "see https://example.com/#/route and <http://x.org/a#b> #real",
            ["#real"],
            id="bare-urls",
        ),
        pytest.param("a\r\n#crlf\r\n", ["#crlf"], id="crlf"),
    ],
)
def test_extract_inline_tags_skips_non_prose(text: str, expected: list[str]) -> None:
    assert extract_inline_tags(text) == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [("#tag", "#tag"), ("x #a/b-c_d", "#a/b-c_d"), ("C#", None), ("a#b", None), ("# x", None)],
)
def test_tag_pattern(text: str, match: str | None) -> None:
    found = TAG_PATTERN.search(text)
    assert (found.group() if found else None) == match


# --------------------------------------------------------------------------- frontmatter values


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        pytest.param(
            {"tags": ["a", "#b", " ##c ", 2024, 1.5]},
            ["#a", "#b", "#c", "#2024", "#1.5"],
            id="list",
        ),
        pytest.param({"tags": "a, #b  c,,d"}, ["#a", "#b", "#c", "#d"], id="string"),
        pytest.param({"tag": "single"}, ["#single"], id="singular-key"),
        pytest.param({"Tags": ["Upper"], "TAG": "x"}, ["#Upper", "#x"], id="key-case"),
        pytest.param({"tags": ["A", "a", "#A"], "tag": "a"}, ["#A"], id="dedupe"),
        pytest.param(
            {"tags": ["", "#", None, True, ["n"], {"d": 1}, "ok"]}, ["#ok"], id="skipped-items"
        ),
        pytest.param({"tags": None}, [], id="null"),
        pytest.param({"tags": True}, [], id="bool"),
        pytest.param({"tags": 7}, ["#7"], id="scalar-number"),
        pytest.param({"tags": ["project/alpha"]}, ["#project/alpha"], id="nested"),
        pytest.param({"title": "#not-a-tag"}, [], id="other-keys"),
    ],
)
def test_frontmatter_tags(frontmatter: dict[str, Any], expected: list[str]) -> None:
    assert frontmatter_tags(frontmatter) == expected


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        pytest.param({"aliases": [" One ", "Two", "", None, ["x"]]}, ["One", "Two"], id="list"),
        pytest.param({"aliases": "One, Two ,, Three"}, ["One", "Two", "Three"], id="string"),
        pytest.param({"alias": "Solo"}, ["Solo"], id="singular-key"),
        pytest.param({"Aliases": ["A"], "ALIAS": "B"}, ["A", "B"], id="key-case"),
        pytest.param({"aliases": ["AI", "ai", "Ai"]}, ["AI"], id="dedupe"),
        pytest.param({"aliases": [1984, True]}, ["1984"], id="number-kept-bool-skipped"),
        pytest.param({"aliases": None, "title": "x"}, [], id="none"),
    ],
)
def test_frontmatter_aliases(frontmatter: dict[str, Any], expected: list[str]) -> None:
    assert frontmatter_aliases(frontmatter) == expected


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        pytest.param({"title": "  Hello  ", "empty": "  "}, ["Hello"], id="strings"),
        pytest.param({"n": 3, "f": 1.5, "yes": True, "no": False}, ["3", "1.5", "true", "false"]),
        pytest.param(
            {"d": dt.date(2024, 5, 1), "t": dt.datetime(2024, 5, 1, 8, 30)},
            ["2024-05-01", "2024-05-01T08:30:00"],
            id="dates",
        ),
        pytest.param(
            {"l": ["a", 1, True, dt.date(2020, 1, 2), None, ["nested"], {"k": "v"}, " "]},
            ["a", "1", "true", "2020-01-02"],
            id="list-primitives",
        ),
        pytest.param(
            {"l": [str(i) for i in range(12)]},
            [str(i) for i in range(10)],
            id="first-ten-items",
        ),
        pytest.param(
            {"l": [["x"]] * 9 + ["tenth", "eleventh"]}, ["tenth"], id="ten-counted-before-filter"
        ),
        pytest.param({"meta": {"a": "b"}, "none": None, "x": "kept"}, ["kept"], id="dict-none"),
        pytest.param(
            {"tags": ["t"], "Tag": "t", "aliases": ["a"], "ALIAS": "a", "z": "z"},
            ["z"],
            id="indexed-elsewhere",
        ),
        pytest.param({"b": "2", "a": "1"}, ["2", "1"], id="order"),
    ],
)
def test_property_values(frontmatter: dict[str, Any], expected: list[str]) -> None:
    assert property_values(frontmatter) == expected


# --------------------------------------------------------------------------- links


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("[[Note]]", [Link("Note")], id="plain"),
        pytest.param("[[ Note | Shown ]]", [Link("Note", alias="Shown")], id="alias"),
        pytest.param("[[Note#Part two]]", [Link("Note", heading="Part two")], id="heading"),
        pytest.param("[[Note#^abc123]]", [Link("Note", heading="^abc123")], id="block"),
        pytest.param("[[Note#H|al]]", [Link("Note", heading="H", alias="al")], id="heading-alias"),
        pytest.param("![[pic.png]]", [Link("pic.png", embed=True)], id="embed"),
        pytest.param(
            "![[Note#H|x]]", [Link("Note", heading="H", alias="x", embed=True)], id="embed-full"
        ),
        pytest.param("[[dir/Note.md]]", [Link("dir/Note.md")], id="path"),
        pytest.param("| [[Note\\|alias]] |", [Link("Note", alias="alias")], id="table-escape"),
        pytest.param("[[#Local heading]] [[ ]] [[|x]]", [], id="empty-target"),
        pytest.param(
            "[[B]] then [[A]] and [[B]]", [Link("B"), Link("A"), Link("B")], id="order-dupes"
        ),
        pytest.param("[[Note]\n]", [], id="no-newline-inside"),
    ],
)
def test_extract_wikilinks(text: str, expected: list[Link]) -> None:
    assert extract_links(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("[see](other.md)", [Link("other.md", alias="see")], id="plain"),
        pytest.param(
            "[x](dir/my%20note.md#Some%20heading)",
            [Link("dir/my note.md", heading="Some heading", alias="x")],
            id="encoded-fragment",
        ),
        pytest.param("[](../up.MD)", [Link("../up.MD")], id="upper-ext-no-text"),
        pytest.param("[x](<my note.md>)", [Link("my note.md", alias="x")], id="angle"),
        pytest.param('[x](n.md "Title")', [Link("n.md", alias="x")], id="title"),
        pytest.param("![x](n.md)", [Link("n.md", alias="x", embed=True)], id="embed"),
        pytest.param(
            "[a](https://site.com/a.md) [b](obsidian://open?f=x.md) [c](mailto:a@b.md)",
            [],
            id="schemes",
        ),
        pytest.param("[a](pic.png) [b](notes.md.bak) [c](#anchor) [d]()", [], id="not-md"),
        pytest.param(
            "[[Wiki]] and [md](m.md)", [Link("Wiki"), Link("m.md", alias="md")], id="mixed-order"
        ),
    ],
)
def test_extract_markdown_links(text: str, expected: list[Link]) -> None:
    assert extract_links(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("---\nup: '[[Parent]]'\n---\n", id="frontmatter"),
        pytest.param("```\n[[InCode]] [x](c.md)\n```", id="fenced"),
        pytest.param("`[[InCode]]` and `[x](c.md)`", id="inline-code"),
    ],
)
def test_extract_links_skips_frontmatter_and_code(text: str) -> None:
    assert extract_links(text + "\n[[Real]]") == [Link("Real")]


# --------------------------------------------------------------------------- tag helpers


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("#Project/Alpha", "#project/alpha"),
        ("Project/Alpha", "#project/alpha"),
        ("##x", "#x"),
        ("  #Tag  ", "#tag"),
        ("# spaced", "#spaced"),
        ("#", ""),
        ("", ""),
    ],
)
def test_normalize_tag(tag: str, expected: str) -> None:
    assert normalize_tag(tag) == expected


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("#a/b/c", ["#a", "#a/b", "#a/b/c"]),
        ("A/B", ["#a", "#a/b"]),
        ("#a//b/", ["#a", "#a/b"]),
        ("#solo", ["#solo"]),
        ("#项目/测试", ["#项目", "#项目/测试"]),
        ("#", []),
        ("", []),
    ],
)
def test_tag_hierarchy(tag: str, expected: list[str]) -> None:
    assert tag_hierarchy(tag) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", []),
        ("   ", []),
        ("#Project #Second", ["#project", "#second"]),
        ("mix of #tag and #TAG and #tag", ["#tag"]),
        ("notes for #project/alpha and #Project/Beta", ["#project/alpha", "#project/beta"]),
        ("跟进 #项目/测试 #项目/測試", ["#项目/测试", "#项目/測試"]),
        ("check #tag-name and #tag_name", ["#tag-name", "#tag_name"]),
        ("broken # tag #?test #!oops", []),
        ("#a/b/ then #x", ["#a/b", "#x"]),
        ("learn C# for issue #42 and #1990s", ["#1990s"]),
    ],
)
def test_extract_tags_from_query(query: str, expected: list[str]) -> None:
    assert extract_tags_from_query(query) == expected


# --------------------------------------------------------------------------- parse_note


def test_parse_note_combines_everything() -> None:
    text = (
        "---\n"
        "tags: [Fm, inline]\n"
        "aliases: Other name\n"
        "created: 2024-05-01\n"
        "---\n"
        "# Title\n"
        "Body #Inline and [[Target#Part|shown]].\n"
        "```\n#code [[Code]]\n```\n"
    )
    assert parse_note(text) == ParsedNote(
        frontmatter={
            "tags": ["Fm", "inline"],
            "aliases": "Other name",
            "created": dt.date(2024, 5, 1),
        },
        frontmatter_error=None,
        body_start=67,
        tags=("#Inline", "#Fm"),
        aliases=("Other name",),
        links=(Link("Target", heading="Part", alias="shown"),),
        headings=(Heading(1, "Title", 67),),
        property_values=("2024-05-01",),
    )


def test_parse_note_with_broken_frontmatter_keeps_the_body() -> None:
    text = "---\ndate: {{date}}\ntags: [x]\n---\n## Log #daily\n[[Yesterday]]"
    assert parse_note(text) == ParsedNote(
        frontmatter={},
        frontmatter_error="invalid YAML at line 2: found unhashable key",
        body_start=33,
        tags=("#daily",),
        links=(Link("Yesterday"),),
        headings=(Heading(2, "Log #daily", 33),),
    )


def test_parse_note_without_frontmatter() -> None:
    assert parse_note("#only a tag") == ParsedNote(tags=("#only",))


def test_parse_note_on_crlf_normalised_text_matches_lf() -> None:
    crlf = "---\r\ntags: a\r\n---\r\n# H\r\n#t [[L]]\r\n"
    text = crlf.replace("\r\n", "\n").replace("\r", "\n")
    assert parse_note(text) == ParsedNote(
        frontmatter={"tags": "a"},
        body_start=16,
        tags=("#t", "#a"),
        links=(Link("L"),),
        headings=(Heading(1, "H", 16),),
    )


def test_parse_note_agrees_with_the_single_purpose_functions() -> None:
    text = "---\ntags: x\n---\n# A #b\n`#c` [[D#E]] [f](g.md) #h ```\n```\n#i\n```\n"
    note = parse_note(text)
    assert note.tags == (*extract_inline_tags(text), "#x")
    assert note.links == tuple(extract_links(text))
    assert note.headings == tuple(extract_headings(text))


_SPACES = " " * 20_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("[" * 20_000 + "(" + "[[" * 5_000, ParsedNote(), id="brackets"),
        pytest.param("[x](a" * 10_000, ParsedNote(), id="unclosed-markdown-links"),
        pytest.param("a." * 20_000, ParsedNote(), id="dotted-words"),
        pytest.param(
            f"# a{_SPACES}#x",
            ParsedNote(tags=("#x",), headings=(Heading(1, f"a{_SPACES}#x", 0),)),
            id="spaces-in-heading",
        ),
        pytest.param("`a " * 10_000 + "`#a", ParsedNote(tags=("#a",)), id="odd-backticks"),
    ],
)
def test_parse_note_is_not_quadratic_on_hostile_lines(text: str, expected: ParsedNote) -> None:
    # Quadratic scanning needs seconds to minutes on these lines; linear work, milliseconds.
    started = time.perf_counter()
    note = parse_note(text)
    assert time.perf_counter() - started < 1.0
    assert note == expected
