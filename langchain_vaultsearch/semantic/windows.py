"""Embedding windows: a chunk cut to what the embedding model actually reads.

Lexical chunks go up to 6,000 characters, while small embedding models read a few hundred
word pieces (all-MiniLM-L6-v2: 256, about 1,000 characters of English) and silently
ignore the rest. A long chunk is therefore embedded as overlapping windows and scored by
its best window, so its second half can still be found. Each window starts with the
chunk's heading: a window from the middle of a section is otherwise a paragraph with no
subject. The note's title is left out on purpose: renaming or moving a note must not
re-embed it, and titles are what lexical search (title field weight 5) matches best.
"""

from __future__ import annotations

from langchain_vaultsearch.text.chunking import Chunk, chunk_header

WINDOW_CHARS = 1000
WINDOW_OVERLAP = 200


def check_window_options(window_chars: int, overlap: int) -> None:
    """Raise `ValueError` unless windows are >= 100 characters and overlap < half of one."""
    if window_chars < 100 or not 0 <= overlap < window_chars // 2:
        msg = (
            "window_chars must be >= 100 and window_overlap in [0, window_chars / 2), "
            f"got {window_chars} and {overlap}"
        )
        raise ValueError(msg)


def embedding_windows(
    chunk: Chunk, window_chars: int = WINDOW_CHARS, overlap: int = WINDOW_OVERLAP
) -> list[str]:
    r"""The texts to embed for one chunk: at least one, each at most `window_chars` of body.

    Args:
        chunk: the chunk (its content starts with the synthetic title header).
        window_chars: body characters per window.
        overlap: characters each window repeats from the previous one, so a sentence cut
            at a window's end is whole in the next.

    Returns:
        `"<heading>\n\n<body part>"` per window; a chunk with no body gives its heading,
        or else its title, so an empty note is still found by what it is called.
    """
    check_window_options(window_chars, overlap)
    body = chunk.content.removeprefix(chunk_header(chunk.title)).strip()
    prefix = chunk.heading
    parts = []
    start = 0
    while start < len(body):
        end = min(len(body), start + window_chars)
        if end < len(body):
            # Cut at a space in the window's last half rather than inside a word.
            space = body.rfind(" ", start + window_chars // 2, end)
            end = space if space > 0 else end
        parts.append(body[start:end].strip())
        if end >= len(body):
            break
        start = max(end - overlap, start + 1)
    texts = [f"{prefix}\n\n{part}" if prefix else part for part in parts if part]
    return texts or [prefix or chunk.title]
