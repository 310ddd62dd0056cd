"""Cost of ``Vault.refresh`` per query, with and without the inotify watcher, in one run.

Every query starts with a refresh, so its cost is paid on every warm query. Three cases per
vault, each the median and p95 of many refreshes, for ``Vault(watch=True)`` and
``Vault(watch=False)``:

- *unchanged*: nothing changed since the last refresh (the common case);
- *one note touched*: one note's mtime moved since the last refresh;
- *a note added or deleted*: a note appeared in (or, every other time, left) a folder.

The vault given is only read: the two edit cases run on a copy of its notes in a temporary
folder.

Usage (from the repository root)::

    python -m benchmarks.refresh                              # the bundled sample vault
    python -m benchmarks.refresh --vault /path/to/vault --repeats 200
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import REPO_ROOT, format_table, iter_note_paths
from langchain_vaultsearch import Vault

SAMPLE_VAULT = REPO_ROOT / "examples" / "sample-vault"


def _time_ms(vault: Vault, before: Callable[[], object], repeats: int) -> list[float]:
    """Refresh `repeats` times, calling `before` (untimed) ahead of each refresh."""
    samples = []
    for _ in range(repeats):
        before()
        start = time.perf_counter()
        vault.refresh()
        samples.append((time.perf_counter() - start) * 1000.0)
    return samples


def _cell(samples: list[float]) -> str:
    p95 = statistics.quantiles(samples, n=20)[-1] if len(samples) > 1 else samples[0]
    return f"{statistics.median(samples):.3f} / {p95:.3f}"


def _measure(root: Path, case: str, repeats: int) -> dict[bool, list[float]]:
    notes = iter_note_paths(root)
    note = notes[len(notes) // 2]
    added = note.with_name("benchmark-added-note.md")
    bump = [note.stat().st_mtime_ns]

    def touch() -> None:
        bump[0] += 1_000_000_000
        os.utime(note, ns=(bump[0], bump[0]))

    def add_or_remove() -> None:
        if added.exists():
            added.unlink()
        else:
            added.write_text("a note added by the refresh benchmark\n", encoding="utf-8")

    before: Callable[[], object] = {
        "unchanged": lambda: None,
        "one note touched": touch,
        "a note added or deleted": add_or_remove,
    }[case]
    results = {}
    for watch in (True, False):
        with Vault(root, watch=watch) as vault:
            vault.refresh()
            if watch and not vault.watching:
                sys.exit("inotify is unavailable here: nothing to compare")
            results[watch] = _time_ms(vault, before, repeats)
    if added.exists():
        added.unlink()
    return results


def _not_notes(folder: str, names: list[str]) -> list[str]:
    """What the copy leaves out: hidden entries and files that are not notes."""
    return [
        name
        for name in names
        if name.startswith(".")
        or (not name.lower().endswith(".md") and not os.path.isdir(os.path.join(folder, name)))
    ]


def main(argv: list[str] | None = None) -> None:
    """Print the refresh costs for one vault."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--vault", type=Path, default=SAMPLE_VAULT)
    parser.add_argument("--repeats", type=int, default=100)
    args = parser.parse_args(argv)
    # The vault's own complaints (bad frontmatter) would repeat on every load: not our subject.
    logging.getLogger("langchain_vaultsearch").setLevel(logging.ERROR)
    vault = args.vault.expanduser().resolve()
    note_count = len(iter_note_paths(vault))
    folder_count = sum(1 for _ in os.walk(vault))
    print(f"{vault.name}: {note_count:,} notes; {args.repeats} refreshes per cell, ms")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / vault.name
        for case in ("unchanged", "one note touched", "a note added or deleted"):
            if case != "unchanged" and not copy.exists():
                shutil.copytree(vault, copy, symlinks=True, ignore=_not_notes)
            results = _measure(vault if case == "unchanged" else copy, case, args.repeats)
            rows.append([case, _cell(results[True]), _cell(results[False])])
    print(format_table(["refresh", "watch=True p50 / p95", "watch=False p50 / p95"], rows))
    print(f"({folder_count:,} folders, hidden ones included, under the vault)")


if __name__ == "__main__":
    main()
