r"""What the semantic side embeds: window text with or without the note's title, and window size.

Each variant gets its own vector index of every judged vault (kept in
`benchmarks/.cache/windows/<variant>/`, so only the first run embeds) and the judged queries
run through semantic search and the default path (`RetrieverFactory`) over it; the table
gives nDCG@10 per vault and kind. Variants:

- `heading` (what ships, the index `semantic_quality.py` keeps): each window is the chunk's
  heading, then its part of the body;
- `title`: the note's title first, then the heading (a rename re-embeds the note);
- `600/150`: shorter windows (600 characters, 150 of overlap) with the heading.

Usage (as `fusion_lovo.py`)::

    python -m benchmarks.window_study --set QUERIES.json=VAULT ... [--variant title]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import format_table
from benchmarks.fusion_lovo import ndcg
from benchmarks.judged_runs import judged_sets
from benchmarks.semantic_quality import CACHE, OURS_K, default_embeddings, vault_cache, vault_labels
from langchain_vaultsearch.semantic import vector_writer as writer_module
from langchain_vaultsearch.semantic.windows import embedding_windows
from langchain_vaultsearch.text.chunking import Chunk

VARIANTS: dict[str, dict[str, Any]] = {
    "heading": {},
    "title": {"title": True},
    "600/150": {"window_chars": 600, "window_overlap": 150},
}


def _titled(chunk: Chunk, window_chars: int, overlap: int) -> list[str]:
    return [f"{chunk.title}\n{text}" for text in embedding_windows(chunk, window_chars, overlap)]


@contextlib.contextmanager
def variant_windows(options: dict[str, Any]) -> Iterator[None]:
    """The index embeds windows with the note's title first, while the variant asks for it."""
    if not options.get("title"):
        yield
        return
    with mock.patch.object(writer_module, "embedding_windows", _titled):
        yield


def run_variant(name: str, sets: Sequence[tuple[Path, Path]], embeddings: str) -> list[Any]:
    """(vault, kind, semantic nDCG, default nDCG) per judged query."""
    from langchain_vaultsearch import RetrieverFactory, TieredLexicalRetriever, VaultIndex

    options = VARIANTS[name]
    sizes = {k: v for k, v in options.items() if k.startswith("window")}
    rows = []
    by_vault: dict[Path, list[Path]] = {}
    for queries_file, vault in sets:
        by_vault.setdefault(vault.resolve(), []).append(queries_file)
    labels = vault_labels(list(by_vault))
    with variant_windows(options):
        for vault, files in by_vault.items():
            label = labels[vault]
            # What ships is the index every other benchmark keeps: embedded once for all.
            variant = (
                CACHE if name == "heading" else CACHE.parent / "windows" / name.replace("/", "-")
            )
            home = vault_cache(variant, vault)
            index = VaultIndex(
                vault_path=vault, embeddings=embeddings, persist_directory=home, **sizes
            )
            report = index.refresh()
            print(f"  {name} {label}: {report.texts_embedded:,} texts embedded", file=sys.stderr)
            semantic = index.as_retriever(k=OURS_K, refresh=False)
            lexical = TieredLexicalRetriever(vault=index.vault)
            default = RetrieverFactory(semantic_index=index, k=OURS_K, lexical_side=lexical)
            for queries, _ in judged_sets([f"{f}={vault}" for f in files]):
                for judged in queries:
                    rows.append(
                        (
                            label,
                            judged.kind,
                            ndcg(judged, semantic.invoke(judged.query)),
                            ndcg(judged, default.invoke(judged.query)),
                        )
                    )
            index.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print semantic and default nDCG@10 per vault and kind for each variant."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, metavar="QUERIES.json=VAULT")
    parser.add_argument("--variant", action="append", choices=list(VARIANTS), default=None)
    parser.add_argument("--embeddings", default=None)
    args = parser.parse_args(argv)
    embeddings = args.embeddings or default_embeddings()
    sets = [(Path(a), Path(b)) for a, _, b in (v.partition("=") for v in args.set)]
    names = args.variant or list(VARIANTS)
    results = {name: run_variant(name, sets, embeddings) for name in names}
    cells = list(dict.fromkeys((r[0], r[1]) for r in results[names[0]]))
    vaults = list(dict.fromkeys(v for v, _ in cells))
    headers = ["vault", "kind", "n"]
    headers += [f"{n} sem" for n in names] + [f"{n} default" for n in names]
    rows = []
    for vault, kind in [*cells, *((v, "overall") for v in vaults)]:
        chosen = {
            n: [r for r in results[n] if r[0] == vault and kind in (r[1], "overall")] for n in names
        }
        rows.append(
            [
                vault,
                kind,
                str(len(chosen[names[0]])),
                *[f"{statistics.fmean(r[2] for r in chosen[n]):.3f}" for n in names],
                *[f"{statistics.fmean(r[3] for r in chosen[n]):.3f}" for n in names],
            ]
        )
    print(format_table(headers, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
