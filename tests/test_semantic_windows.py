"""Embedding windows: long chunks are read whole, in overlapping windows."""

from __future__ import annotations

import pytest

from langchain_vaultsearch.semantic.windows import embedding_windows
from langchain_vaultsearch.text.chunking import Chunk, chunk_header


def chunk(body: str, heading: str = "Setup") -> Chunk:
    return Chunk("Note.md#0", "Note.md", 0, chunk_header("Note") + body, heading, "Note")


def test_a_short_chunk_is_one_window_with_its_heading_and_no_title() -> None:
    assert embedding_windows(chunk("Install the tools.")) == ["Setup\n\nInstall the tools."]


def test_a_long_chunk_is_covered_by_overlapping_windows_ending_between_words() -> None:
    words = [f"w{i}" for i in range(1500)]
    windows = embedding_windows(chunk(" ".join(words)), window_chars=1000, overlap=200)
    assert len(windows) >= 8
    bodies = [w.removeprefix("Setup\n\n") for w in windows]
    assert all(len(b) <= 1000 for b in bodies)
    seen = {word for body in bodies for word in body.split()}
    assert set(words) <= seen  # every word is whole in some window (ends cut between words)
    assert all(body.split()[-1] in words for body in bodies)
    assert set(bodies[0].split()) & set(bodies[1].split())  # consecutive windows overlap


def test_an_empty_chunk_is_found_by_its_heading_or_title() -> None:
    assert embedding_windows(chunk("", heading="Ideas")) == ["Ideas"]
    assert embedding_windows(chunk("", heading="")) == ["Note"]


@pytest.mark.parametrize(("size", "overlap"), [(99, 0), (1000, 500), (1000, -1)])
def test_window_options_are_checked(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="window_chars"):
        embedding_windows(chunk("x"), window_chars=size, overlap=overlap)
