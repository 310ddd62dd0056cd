"""Warm query latency on an unchanged vault: watchfiles, inotify and no watcher, in one run.

Every query first brings the vault up to date (``Vault.refresh``). With a watcher that costs
next to nothing on an unchanged vault; without one it stats every note. This measures a
``TieredLexicalRetriever`` query (``k=30``, the ``SYNTHETIC_QUERIES``) on a synthetic vault
three ways, each through its own ``Vault``:

- *watchfiles*: the backend macOS and Windows run (``VAULTSEARCH_WATCHER=watchfiles``), here
  through Linux inotify inside watchfiles, with its sync cookie on every refresh;
- *inotify*: the ctypes inotify backend, Linux's default (``VAULTSEARCH_WATCHER=inotify``);
- *no watcher*: ``Vault(path, watch=False)``, what every system had before.

The three retrievers are built first (the first builds and saves the index, the others load
it), then timed query by query in turn, the order rotating, so the shared machine's noise
falls on all three alike. It also times ``Vault.refresh`` alone, the part that differs.

Usage (from the repository root)::

    python -m benchmarks.watch_speed                      # 10,000 notes
    python -m benchmarks.watch_speed --notes 100000 --repeats 3
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import format_table, warm_page_cache
from benchmarks.speed import DEFAULT_CACHE, K, synthetic_vault_path
from benchmarks.synthetic_vault import SYNTHETIC_QUERIES
from langchain_vaultsearch import TieredLexicalRetriever, Vault
from langchain_vaultsearch.vault.watcher import BACKEND_VARIABLE

MODES = ("watchfiles", "inotify", "no watcher")
BAR_SLOWER = 0.05
"""Watchfiles may be at most this much slower than inotify (warm p50) to replace it on Linux;
otherwise inotify stays Linux's default and watchfiles serves the other systems."""


def _percentiles(samples: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples, n=20, method="inclusive")
    return statistics.median(samples), cuts[-1]


def _open(root: Path, mode: str) -> tuple[Vault, TieredLexicalRetriever]:
    """A vault watched as `mode` says, and a retriever over it with its index ready."""
    if mode != "no watcher":
        os.environ[BACKEND_VARIABLE] = mode
    vault = Vault(root, watch=mode != "no watcher")
    retriever = TieredLexicalRetriever(vault=vault, k=K)
    retriever.invoke(SYNTHETIC_QUERIES[0])
    retriever.wait_for_index()
    backend = type(vault.watcher).__name__ if vault.watching else "-"
    if mode != "no watcher" and not backend.lower().startswith(mode):
        sys.exit(f"{mode} is unavailable here (got {backend}): nothing to compare")
    return vault, retriever


def _timed_ms(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000.0


def main(argv: list[str] | None = None) -> None:
    """Print the table for one synthetic vault."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--notes", type=int, default=10_000, help="synthetic vault size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5, help="timed passes over the queries")
    parser.add_argument("--refreshes", type=int, default=300, help="timed refreshes per mode")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args(argv)
    logging.getLogger("langchain_vaultsearch").setLevel(logging.ERROR)
    started = time.perf_counter()
    root = synthetic_vault_path(args.cache_dir, args.notes, args.seed)
    warm_page_cache(root)
    opened: dict[str, tuple[Vault, TieredLexicalRetriever]] = {}
    for mode in MODES:
        setup = time.perf_counter()
        opened[mode] = _open(root, mode)
        print(f"{mode}: ready in {time.perf_counter() - setup:.1f} s", flush=True)
    queries = list(SYNTHETIC_QUERIES)
    for _vault, retriever in opened.values():  # one untimed pass: caches warm for all
        for query in queries:
            retriever.invoke(query)
    latencies: dict[str, list[float]] = {mode: [] for mode in MODES}
    turn = 0
    for _ in range(args.repeats):
        for query in queries:
            for mode in MODES[turn % 3 :] + MODES[: turn % 3]:
                latencies[mode].append(_timed_ms(partial(opened[mode][1].invoke, query)))
            turn += 1
    refreshes: dict[str, list[float]] = {mode: [] for mode in MODES}
    for n in range(args.refreshes):
        for mode in MODES[n % 3 :] + MODES[: n % 3]:
            refreshes[mode].append(_timed_ms(opened[mode][0].refresh))
    rows = []
    for mode in MODES:
        vault = opened[mode][0]
        backend = type(vault.watcher).__name__ if vault.watching else "-"
        query_p50, query_p95 = _percentiles(latencies[mode])
        refresh_p50, refresh_p95 = _percentiles(refreshes[mode])
        rows.append(
            [
                mode,
                backend,
                f"{query_p50:.1f}",
                f"{query_p95:.1f}",
                f"{refresh_p50:.3f}",
                f"{refresh_p95:.3f}",
            ]
        )
    runs = len(latencies[MODES[0]])
    print(
        f"\n{root.name}: {args.notes:,} notes; {runs} warm queries and {args.refreshes} "
        f"refreshes per mode, unchanged vault, ms"
    )
    headers = ["mode", "watcher", "query p50", "query p95", "refresh p50", "refresh p95"]
    print(format_table(headers, rows))
    new = statistics.median(latencies["watchfiles"])
    old = statistics.median(latencies["inotify"])
    slower = new / old - 1
    print(
        f"watchfiles warm p50 {new:.1f} ms is {100 * slower:+.1f}% of inotify's {old:.1f} ms"
        f" (bar: at most +{100 * BAR_SLOWER:.0f}%, or inotify stays Linux's default): "
        + ("PASS" if slower <= BAR_SLOWER else "inotify stays Linux's default")
    )
    print(f"total {time.perf_counter() - started:.0f} s")
    for vault, _retriever in opened.values():
        vault.close()


if __name__ == "__main__":
    main()
