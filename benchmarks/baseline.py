"""The LangChain baseline a user would build for a vault before reaching for this package.

It is deliberately the obvious recipe from the LangChain docs: walk ``**/*.md`` (skipping
dot-folders), split each note with ``MarkdownHeaderTextSplitter`` on ``#``/``##``/``###``
keeping the headers in the text, and index the chunks with ``BM25Retriever`` and its default
whitespace tokenizer. Beating a tuned baseline would say more, but beating the one people
actually write is the claim the README makes.
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.documents import Document
from langchain_text_splitters import MarkdownHeaderTextSplitter

from benchmarks.common import iter_note_paths, read_note, rel_posix
from benchmarks.metrics import distinct

with warnings.catch_warnings():
    # langchain-community warns on import that it is being sunset; the baseline still
    # needs its BM25Retriever, and the warning would only clutter benchmark output.
    warnings.filterwarnings("ignore", message=".*langchain-community.*", category=Warning)
    from langchain_community.retrievers import BM25Retriever

HEADERS_TO_SPLIT_ON = [("#", "h1"), ("##", "h2"), ("###", "h3")]
"""Header levels the baseline splits on: the three levels most vault notes use."""

DEFAULT_FETCH_K = 100
"""Chunks fetched before deduplicating by note, so ten distinct notes are nearly always found."""


@dataclass(frozen=True)
class BuildTimes:
    """Wall-clock seconds of each baseline build stage, to show where its build time goes.

    Attributes:
        load: Walking the vault and reading every note.
        split: Splitting notes into header chunks.
        index: Building the BM25 index.
        chunks: Number of chunks indexed.
    """

    load: float
    split: float
    index: float
    chunks: int

    @property
    def total(self) -> float:
        """Seconds from nothing to a queryable retriever."""
        return self.load + self.split + self.index


def load_notes(vault: Path) -> list[tuple[str, str]]:
    """Read every note of a vault.

    Args:
        vault: The vault root.

    Returns:
        ``(vault-relative posix path, text)`` pairs in path order.
    """
    return [(rel_posix(p, vault), read_note(p)) for p in iter_note_paths(vault)]


def split_notes(notes: list[tuple[str, str]]) -> list[Document]:
    """Split notes on headers and tag every chunk with its note's path.

    Args:
        notes: ``(path, text)`` pairs from :func:`load_notes`.

    Returns:
        Chunks whose metadata holds the splitter's header keys plus ``path``.
    """
    splitter = MarkdownHeaderTextSplitter(
        headers_to_split_on=HEADERS_TO_SPLIT_ON, strip_headers=False
    )
    chunks: list[Document] = []
    for path, text in notes:
        for chunk in splitter.split_text(text):
            # A fresh dict per chunk: the splitter may share metadata objects between chunks.
            chunks.append(
                Document(page_content=chunk.page_content, metadata={**chunk.metadata, "path": path})
            )
    return chunks


def build_baseline_timed(vault: Path, k: int) -> tuple[BM25Retriever, BuildTimes]:
    """Build the baseline and time each stage, for the speed benchmark's breakdown.

    Args:
        vault: The vault root.
        k: Chunks the retriever returns per query.

    Returns:
        The retriever and its stage timings.

    Raises:
        ValueError: If the vault has no non-empty note (BM25 cannot index nothing).
    """
    t0 = time.perf_counter()
    notes = load_notes(vault)
    t1 = time.perf_counter()
    chunks = split_notes(notes)
    t2 = time.perf_counter()
    if not chunks:
        raise ValueError(f"{vault}: no markdown content to index")
    retriever = BM25Retriever.from_documents(chunks, k=k)
    t3 = time.perf_counter()
    return retriever, BuildTimes(load=t1 - t0, split=t2 - t1, index=t3 - t2, chunks=len(chunks))


def build_baseline(vault: Path, k: int) -> BM25Retriever:
    """Build the baseline retriever for a vault.

    Args:
        vault: The vault root.
        k: Chunks the retriever returns per query.

    Returns:
        A ``BM25Retriever`` over the vault's header chunks.
    """
    return build_baseline_timed(vault, k)[0]


def baseline_top_paths(
    retriever: BM25Retriever, query: str, n: int = 10, fetch_k: int = DEFAULT_FETCH_K
) -> list[str]:
    """Return the baseline's top ``n`` distinct notes for a query.

    The baseline ranks chunks, and several chunks of one note often rank together, so we
    fetch ``fetch_k`` chunks and keep each note's best rank; judging notes needs that.

    Args:
        retriever: A retriever from :func:`build_baseline`.
        query: The query text.
        n: Distinct notes wanted.
        fetch_k: Chunks to fetch before deduplicating (at least the retriever's own ``k``).

    Returns:
        Up to ``n`` vault-relative note paths, best first.
    """
    if retriever.k < fetch_k:
        # A shallow copy shares the index; only ``k`` differs.
        retriever = retriever.model_copy(update={"k": fetch_k})
    docs = retriever.invoke(query)
    return distinct((str(d.metadata["path"]) for d in docs), n)
