"""Frontmatter built to explode (YAML alias bombs, deep nesting) is dropped, never walked.

Each case runs the public surface (a search, `vaultsearch index`) in a subprocess under a
time and memory limit, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import logging
import re
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from langchain_vaultsearch import TieredLexicalRetriever
from langchain_vaultsearch.vault.markdown import parse_frontmatter, parse_note

HOSTILE = Path(__file__).resolve().parent / "hostile"
LIMIT_S = 60
LIMIT_BYTES = 2_500_000_000


def billion_laughs() -> str:
    """380 bytes of YAML that stand for 9^9 values."""
    text = '---\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for name, previous in zip("bcdefghi", "abcdefgh", strict=True):
        text += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
    return text + "---\nThe bomb note mentions quasar in its body.\n"


def deep_nesting(depth: int = 900) -> str:
    return "---\na: " + "[" * depth + "1" + "]" * depth + "\n---\nDeep note about pulsar.\n"


def mapping_aliases() -> str:
    text = "---\nbase: &b {x: [1, 2, 3, 4, 5, 6, 7, 8, 9]}\n"
    for level in range(1, 8):
        text += (
            f"l{level}: &l{level} ["
            + ", ".join([f"*{'b' if level == 1 else f'l{level - 1}'}"] * 9)
            + "]\n"
        )
    return text + "---\nMapping note about nebula.\n"


def test_the_hostile_corpus_is_what_the_cases_build() -> None:
    assert (HOSTILE / "billion-laughs.md").read_text(encoding="utf-8") == billion_laughs()
    assert (HOSTILE / "deep-nesting.md").read_text(encoding="utf-8") == deep_nesting()
    assert (HOSTILE / "mapping-aliases.md").read_text(encoding="utf-8") == mapping_aliases()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (billion_laughs(), "over 10,000 values once aliases expand"),
        (deep_nesting(), "nested deeper than 32 levels"),
        (mapping_aliases(), "over 10,000 values once aliases expand"),
        ("---\nnote: " + "x" * 300_000 + "\n---\nbody\n", "characters of values"),
    ],
)
def test_exploding_frontmatter_is_dropped_with_the_reason(text: str, reason: str) -> None:
    frontmatter, body_start, error = parse_frontmatter(text)
    assert frontmatter == {}
    assert error is not None
    assert reason in error
    assert text[body_start:].strip()  # the body is still the note's
    assert parse_note(text).frontmatter_error == error


def test_a_hostile_note_stays_searchable_by_its_body_and_is_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for source in HOSTILE.glob("*.md"):
        (vault / source.name).write_bytes(source.read_bytes())
    with caplog.at_level(logging.WARNING):
        docs = TieredLexicalRetriever(vault_path=str(vault), k=3).invoke("quasar")
    assert [d.metadata["path"] for d in docs] == ["billion-laughs.md"]
    assert docs[0].metadata["engine"] == "fulltext"
    assert "billion-laughs.md" in caplog.text
    assert "deep-nesting.md" in caplog.text


_SEARCH_600 = textwrap.dedent(
    """
    import sys
    from langchain_vaultsearch.cli import main
    vault = sys.argv[1]
    sys.exit(main(["index", "--vault", vault]) or main(["search", "--vault", vault, "topic3"]))
    """
)


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


@pytest.mark.parametrize("name", ["billion-laughs.md", "deep-nesting.md", "mapping-aliases.md"])
def test_index_and_search_of_a_600_note_vault_with_a_bomb_finish_in_bounds(
    tmp_path: Path, name: str
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(600):
        (vault / f"n{i}.md").write_text(f"note {i} topic{i % 20}\n", encoding="utf-8")
    (vault / name).write_bytes((HOSTILE / name).read_bytes())
    done = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", _SEARCH_600, str(vault)],
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        preexec_fn=_limited,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Indexed 601 notes" in done.stdout
    found = re.findall(r"\bn(\d+)\.md\b", done.stdout)
    assert len(found) == 10
    assert all(int(number) % 20 == 3 for number in found)  # the notes that say topic3
    assert "Traceback" not in done.stderr
