"""Ranking quality of ``TieredLexicalRetriever`` against the LangChain BM25 baseline.

Runs every query of a judged query file against a vault with both systems and compares their
top 10 distinct notes with nDCG@10 (graded gains ``2^grade - 1``, ideal ranking from all judged
notes) and recall@10 (share of notes with grade >= 1 found), per query kind and overall.

Both systems return chunks, while judges grade notes, so each ranking is reduced to distinct
note paths in rank order: ours from ``k=30`` chunks, the baseline from 100 chunks (it tends to
return many chunks of the same note).

Usage (from the repository root)::

    python benchmarks/quality.py --queries benchmarks/queries/NAME.json --vault PATH
    python benchmarks/quality.py --queries ... --vault ... --show-misses --json out.json

``--vault`` is the vault root, already including the query file's ``subdir``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.retrievers import BaseRetriever

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    DEFAULT_RETRIEVER,
    format_table,
    iter_note_paths,
    load_retriever_class,
    normalize_note_path,
    rel_posix,
)
from benchmarks.metrics import distinct, ndcg_at_k, recall_at_k

CUTOFF = 10
OURS_K = 30
BASELINE_FETCH_K = 100


@dataclass(frozen=True)
class JudgedQuery:
    """One judged query.

    Attributes:
        id: Stable identifier from the file, e.g. ``kw-01``.
        kind: Query kind used for grouping, e.g. ``keyword``.
        query: The query text.
        relevant: Grade per vault-relative note path (normalised).
    """

    id: str
    kind: str
    query: str
    relevant: dict[str, int]


@dataclass
class QueryResult:
    """Both systems' rankings and scores for one query.

    Attributes:
        query: The judged query.
        ours: Our top distinct note paths.
        baseline: The baseline's top distinct note paths.
        ours_ndcg: Our nDCG at the cut-off.
        baseline_ndcg: The baseline's nDCG at the cut-off.
        ours_recall: Our recall at the cut-off.
        baseline_recall: The baseline's recall at the cut-off.
    """

    query: JudgedQuery
    ours: list[str]
    baseline: list[str]
    ours_ndcg: float
    baseline_ndcg: float
    ours_recall: float
    baseline_recall: float


def load_judged_queries(path: Path) -> tuple[dict[str, Any], list[JudgedQuery]]:
    """Read and validate a judged query file.

    Validation is strict because a silently skipped query or a mistyped grade would change
    the headline numbers without anyone noticing.

    Args:
        path: The JSON file (see ``benchmarks/queries/README.md`` for the format).

    Returns:
        The file's metadata (everything but ``queries``) and its queries.

    Raises:
        ValueError: If the file does not match the format.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("queries"), list):
        raise ValueError(f"{path}: expected an object with a 'queries' list")
    queries: list[JudgedQuery] = []
    seen: set[str] = set()
    for i, item in enumerate(data["queries"]):
        where = f"{path}: queries[{i}]"
        if not isinstance(item, dict):
            raise ValueError(f"{where}: expected an object")
        qid, kind, text, relevant = (item.get(key) for key in ("id", "kind", "query", "relevant"))
        if not isinstance(qid, str) or not isinstance(text, str) or not text.strip():
            raise ValueError(f"{where}: 'id' and 'query' must be non-empty strings")
        if qid in seen:
            raise ValueError(f"{where}: duplicate id {qid!r}")
        seen.add(qid)
        if not isinstance(relevant, dict) or not all(
            isinstance(g, int) and not isinstance(g, bool) for g in relevant.values()
        ):
            raise ValueError(f"{where}: 'relevant' must map note paths to integer grades")
        grades: dict[str, int] = {}
        for note, grade in relevant.items():
            key = normalize_note_path(str(note))
            grades[key] = max(grade, grades.get(key, grade))
        queries.append(JudgedQuery(qid, str(kind or "unknown"), text, grades))
    meta = {key: value for key, value in data.items() if key != "queries"}
    return meta, queries


def evaluate(
    queries: list[JudgedQuery],
    ours: Callable[[str], list[str]],
    baseline: Callable[[str], list[str]],
    k: int = CUTOFF,
) -> list[QueryResult]:
    """Score both systems on every query.

    Args:
        queries: Judged queries.
        ours: Returns our ranked distinct note paths for a query.
        baseline: Returns the baseline's ranked distinct note paths for a query.
        k: Cut-off rank for both metrics.

    Returns:
        One result per query, in file order.
    """
    results: list[QueryResult] = []
    for q in queries:
        ours_top = distinct(ours(q.query), k)
        base_top = distinct(baseline(q.query), k)
        results.append(
            QueryResult(
                query=q,
                ours=ours_top,
                baseline=base_top,
                ours_ndcg=ndcg_at_k(ours_top, q.relevant, k),
                baseline_ndcg=ndcg_at_k(base_top, q.relevant, k),
                ours_recall=recall_at_k(ours_top, q.relevant, k),
                baseline_recall=recall_at_k(base_top, q.relevant, k),
            )
        )
    return results


def summarize(results: list[QueryResult]) -> list[dict[str, Any]]:
    """Average the metrics per query kind (in order of first appearance) and overall.

    Args:
        results: Per-query results.

    Returns:
        One row per kind plus a final ``overall`` row, each with ``kind``, ``n`` and the four
        mean metrics.
    """
    groups: dict[str, list[QueryResult]] = {}
    for r in results:
        groups.setdefault(r.query.kind, []).append(r)
    if results:
        groups["overall"] = results

    rows = []
    for kind, items in groups.items():
        rows.append(
            {
                "kind": kind,
                "n": len(items),
                "ours_ndcg": statistics.fmean(r.ours_ndcg for r in items),
                "baseline_ndcg": statistics.fmean(r.baseline_ndcg for r in items),
                "ours_recall": statistics.fmean(r.ours_recall for r in items),
                "baseline_recall": statistics.fmean(r.baseline_recall for r in items),
            }
        )
    return rows


def render_summary(rows: list[dict[str, Any]], k: int = CUTOFF) -> str:
    """Format the per-kind summary as a plain-text table.

    Args:
        rows: Output of :func:`summarize`.
        k: The cut-off, for the column titles.

    Returns:
        The table text.
    """
    headers = [
        "kind",
        "n",
        f"ours nDCG@{k}",
        f"baseline nDCG@{k}",
        f"ours R@{k}",
        f"baseline R@{k}",
    ]
    body = [
        [
            row["kind"],
            str(row["n"]),
            f"{row['ours_ndcg']:.3f}",
            f"{row['baseline_ndcg']:.3f}",
            f"{row['ours_recall']:.3f}",
            f"{row['baseline_recall']:.3f}",
        ]
        for row in rows
    ]
    return format_table(headers, body)


def render_misses(results: list[QueryResult], k: int = CUTOFF) -> str:
    """List, per query, our top ``k`` and the relevant notes we left out of it.

    Each miss says where the baseline ranked that note, because a note the baseline finds
    and we do not points at a concrete ranking bug, while a note both miss may just be a
    hard judgement.

    Args:
        results: Per-query results.
        k: The cut-off used.

    Returns:
        A readable listing; unjudged notes in our top ``k`` show grade ``-``.
    """
    lines: list[str] = []
    for r in results:
        q = r.query
        lines.append(f"{q.id} [{q.kind}] {q.query!r}")
        lines.append(f"  ours     nDCG@{k} {r.ours_ndcg:.3f}  R@{k} {r.ours_recall:.2f}")
        lines.append(f"  baseline nDCG@{k} {r.baseline_ndcg:.3f}  R@{k} {r.baseline_recall:.2f}")
        lines.append(f"  ours top {k}:")
        for rank, path in enumerate(r.ours[:k], 1):
            grade = q.relevant.get(path)
            lines.append(f"    {rank:2d}. ({'-' if grade is None else grade}) {path}")
        found = set(r.ours[:k])
        base_rank = {path: rank for rank, path in enumerate(r.baseline[:k], 1)}
        missed = sorted(
            ((g, p) for p, g in q.relevant.items() if g >= 1 and p not in found),
            key=lambda gp: (-gp[0], base_rank.get(gp[1], k + 1), gp[1]),
        )
        lines.append(f"  missed by ours ({len(missed)}):" if missed else "  missed by ours: none")
        for grade, path in missed:
            where = f"baseline #{base_rank[path]}" if path in base_rank else "baseline missed too"
            lines.append(f"    ({grade}) {path}  [{where}]")
    return "\n".join(lines)


def _warn_unjudged(queries: list[JudgedQuery]) -> None:
    no_relevant = [q.id for q in queries if not any(g >= 1 for g in q.relevant.values())]
    if no_relevant:
        print(f"warning: queries with no relevant note score 0: {no_relevant}", file=sys.stderr)


def _build_ours(retriever: str, vault: Path, *, scan_only: bool) -> BaseRetriever:
    """Our retriever with its index built, or with `scan_only` one that keeps scanning.

    Scan-only measures the searches a large never-indexed vault gets while its index builds.
    """
    if not scan_only:
        ours = load_retriever_class(retriever)(vault_path=str(vault), k=OURS_K)
        # The index, not a mix: a search made while a large vault's first index builds scans.
        wait_for_index = getattr(ours, "wait_for_index", None)
        if callable(wait_for_index):
            wait_for_index()
        return ours
    from langchain_vaultsearch.search.lexical_index import IndexPolicy

    scanning = IndexPolicy(persist=False, background_build_notes=1, build_in_background=False)
    return load_retriever_class(retriever)(
        vault_path=str(vault), k=OURS_K, persist_index=False, index_policy=scanning
    )


def main(argv: list[str] | None = None) -> int:
    """Run the quality benchmark.

    Args:
        argv: Arguments (defaults to ``sys.argv[1:]``).

    Returns:
        Process exit code.
    """
    parser = argparse.ArgumentParser(
        description="nDCG@10 and recall@10 of TieredLexicalRetriever vs the BM25 baseline.",
    )
    parser.add_argument("--queries", type=Path, required=True, help="judged query file (JSON)")
    parser.add_argument(
        "--vault", type=Path, required=True, help="vault root, including the file's subdir"
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write all results here")
    parser.add_argument(
        "--show-misses", action="store_true", help="list missed relevant notes per query"
    )
    parser.add_argument(
        "--retriever",
        default=DEFAULT_RETRIEVER,
        metavar="MODULE:CLASS",
        help=f"system under test (default {DEFAULT_RETRIEVER})",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit with status 1 unless ours beats the baseline's nDCG on every kind",
    )
    parser.add_argument(
        "--scan-only",
        action="store_true",
        help="measure the searches a never-indexed vault gets before its index is ready "
        "(scan recall, no graph boost), whatever the vault's size",
    )
    args = parser.parse_args(argv)
    vault: Path = args.vault.expanduser()
    if not vault.is_dir():
        raise SystemExit(f"error: --vault {vault} is not a directory")
    meta, queries = load_judged_queries(args.queries)
    if not queries:
        raise SystemExit(f"error: {args.queries} has no queries")

    notes = {rel_posix(p, vault) for p in iter_note_paths(vault)}
    judged = {p for q in queries for p in q.relevant}
    unknown = sorted(judged - notes)
    if unknown:
        print(
            f"warning: {len(unknown)} of {len(judged)} judged notes are not in {vault} "
            f"(wrong --vault or subdir?), e.g. {unknown[:3]}",
            file=sys.stderr,
        )
    _warn_unjudged(queries)

    from benchmarks.baseline import baseline_top_paths, build_baseline

    timings: dict[str, float] = {}
    start = time.perf_counter()
    ours_retriever = _build_ours(args.retriever, vault, scan_only=args.scan_only)
    timings["ours_build_s"] = time.perf_counter() - start
    start = time.perf_counter()
    baseline_retriever = build_baseline(vault, k=BASELINE_FETCH_K)
    timings["baseline_build_s"] = time.perf_counter() - start

    def ours(query: str) -> list[str]:
        docs = ours_retriever.invoke(query)
        return [normalize_note_path(str(d.metadata["path"])) for d in docs]

    def baseline(query: str) -> list[str]:
        return baseline_top_paths(baseline_retriever, query, n=CUTOFF, fetch_k=BASELINE_FETCH_K)

    start = time.perf_counter()
    results = evaluate(queries, ours, baseline, CUTOFF)
    timings["evaluate_s"] = time.perf_counter() - start
    summary = summarize(results)

    print(
        f"vault {meta.get('vault', '?')} @ {str(meta.get('commit', '?'))[:12]}: {len(notes)} notes;"
        f" {len(queries)} queries from {args.queries}"
    )
    print(
        f"ours: {args.retriever} (k={OURS_K}); baseline: BM25Retriever (fetch k={BASELINE_FETCH_K})"
    )
    print(render_summary(summary))
    if args.show_misses:
        print()
        print(render_misses(results))

    if args.json is not None:
        report = {
            "meta": {
                **meta,
                "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "queries_file": str(args.queries),
                "vault_path": str(vault),
                "notes": len(notes),
                "retriever": args.retriever,
                "ours_k": OURS_K,
                "baseline_fetch_k": BASELINE_FETCH_K,
                "cutoff": CUTOFF,
                **timings,
            },
            "summary": summary,
            "queries": [
                {
                    **asdict(r.query),
                    "ours": r.ours,
                    "baseline": r.baseline,
                    "ours_ndcg": r.ours_ndcg,
                    "baseline_ndcg": r.baseline_ndcg,
                    "ours_recall": r.ours_recall,
                    "baseline_recall": r.baseline_recall,
                }
                for r in results
            ],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        print(f"\nwrote {args.json}")
    if args.check and any(row["ours_ndcg"] <= row["baseline_ndcg"] for row in summary):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
