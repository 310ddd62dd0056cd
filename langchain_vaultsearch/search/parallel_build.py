"""A large vault's first index, built by one process per core and merged.

Reading, parsing and tokenizing is ~0.85 ms of Python per note: 100,000 notes took 130 s
in one process before this module (and ~1.2 ms a note). Here the note list is cut into
shards of a few thousand notes, worker processes index one shard at a time (each note
read once, its text never kept) and write the shard's postings, saved rows and links to a
file, and the parent merges the shards in note order: their terms numbered as the
shards come, postings by placing each shard's rows at their offsets in the merged rows
(no sort), saved rows by concatenation, and the links resolved once every note's name and
aliases are known, in a process beside the parent. Memory stays bounded by the shard size
in the workers and by the merged index in the parent.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import multiprocessing
import os
import shutil
import sys
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.safe_archive import (
    UNREADABLE,
    MappedArchive,
    Members,
    code_key,
    kept_folder,
    locked_folder,
    open_mapped,
    typed_array,
    write_atomically,
)
from langchain_vaultsearch.search import vault_documents
from langchain_vaultsearch.search.index_cache import (
    SHARD_FOLDER_PREFIX,
    format_key,
    postings_from,
    write_index,
)
from langchain_vaultsearch.search.recall import (
    RecallDocument,
    RecallIndex,
    RecallSnapshot,
    SortedTerms,
    TermNumbering,
)
from langchain_vaultsearch.search.vault_documents import note_document
from langchain_vaultsearch.text.tokenize import BUILD_RUN_CACHE, set_run_cache_size
from langchain_vaultsearch.vault.link_graph import LinkGraph, Rows
from langchain_vaultsearch.vault.note_records import Stamp
from langchain_vaultsearch.vault.saved_notes import SavedRow, encode_row, pack
from langchain_vaultsearch.vault.vault import Vault

logger = logging.getLogger(__name__)

SHARD_NOTES = 4000
"""Notes per shard: a worker holds one shard's postings (~25 MB at this size)."""

_Listed = tuple[str, tuple[str, Stamp]]
"""A note as the vault listed it: path, then its file and stamp."""

_FIELDS = ("body", "meta")


@dataclass(frozen=True)
class VaultSpec:
    """What a worker needs to open the vault as the build's caller does."""

    root: str
    include_hidden: bool
    max_note_bytes: int

    def open(self) -> Vault:
        """The vault, unwatched: a worker only reads."""
        return Vault(
            self.root,
            include_hidden=self.include_hidden,
            max_note_bytes=self.max_note_bytes,
            watch=False,
        )


def build_processes(requested: int | None) -> int:
    """How many worker processes to use: the machine's cores unless told otherwise."""
    if requested is not None:
        return max(1, requested)
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def build_vault_index(
    spec: VaultSpec,
    target: Path,
    processes: int | None = None,
    worker_setup: Callable[[], None] | None = None,
    resume_in: Path | None = None,
) -> bool:
    """Index every note of a vault across processes and write the index file.

    Args:
        spec: the vault and its reading rules.
        target: the index file to write.
        processes: worker processes; the machine's cores by default.
        worker_setup: run first in each worker process (where its logs go).
        resume_in: a folder to keep the shards in until the index is written, so that a
            build killed or stopped midway is taken up where it was: a shard of the
            same notes, unchanged, is not indexed again. None keeps them in a temporary
            folder, removed when done, as does a folder another build is using.

    Returns:
        True when written; False when the target's folder is refused (logged).
    """
    vault = spec.open()
    workers = build_processes(processes)
    cuts = _cut(sorted(vault.list_files().items()), workers)
    code = _shard_format()
    names = [_shard_name(code, spec, cut) for cut in cuts]
    shards = [[(path, file) for path, (file, _stamp) in cut] for cut in cuts]
    del cuts
    with _shard_folder(resume_in) as (folder, kept):
        files = [folder / name for name in names]
        if kept:
            _remove_all_but(folder, set(names))
        todo = [n for n, file in enumerate(files) if not (kept and _written(file, shards[n]))]
        if len(todo) < len(files):
            logger.info(
                "Taking up the index build of %s: %d shard(s) of %d to go",
                spec.root,
                len(todo),
                len(files),
            )
        runs = BUILD_RUN_CACHE // max(2, workers)
        jobs = [(spec, shards[n], str(files[n]), runs) for n in todo]
        try:
            written = _index_and_merge(
                vault,
                target,
                workers=workers,
                worker_setup=worker_setup,
                files=files,
                todo=todo,
                jobs=jobs,
            )
        except Exception:
            if kept and len(todo) < len(files):
                # A shard taken up may be what failed: the next build starts afresh.
                shutil.rmtree(folder, ignore_errors=True)
            raise
        if kept and written:
            shutil.rmtree(folder, ignore_errors=True)
        return written


def _cut(listed: list[_Listed], workers: int) -> list[list[_Listed]]:
    """The notes, in path order, cut into shards of about `SHARD_NOTES`.

    A large vault is cut where the paths say (a shard ends before a path whose hash is a
    multiple of a quarter of `SHARD_NOTES`, once it holds three quarters of it, and at one
    and a half times it at most), so that a note added or removed while a build was
    stopped changes its own shard's bounds, not those of every shard after it: the next
    build takes the others up (`resume_in`). A smaller vault is cut evenly, so each worker
    has its share.
    """
    if len(listed) < 2 * workers * SHARD_NOTES:
        count = max(min(workers, len(listed)), math.ceil(len(listed) / SHARD_NOTES), 1)
        return [
            listed[i * len(listed) // count : (i + 1) * len(listed) // count] for i in range(count)
        ]
    least, most, every = SHARD_NOTES * 3 // 4, SHARD_NOTES * 3 // 2, max(1, SHARD_NOTES // 4)
    cuts: list[list[_Listed]] = []
    start = 0
    for index, (path, _file) in enumerate(listed):
        size = index - start
        if size >= most or (
            size >= least and zlib.crc32(path.encode("utf-8", "surrogateescape")) % every == 0
        ):
            cuts.append(listed[start:index])
            start = index
    cuts.append(listed[start:])
    return cuts


def _index_and_merge(
    vault: Vault,
    target: Path,
    *,
    workers: int,
    worker_setup: Callable[[], None] | None,
    files: list[Path],
    todo: list[int],
    jobs: list[tuple[VaultSpec, list[tuple[str, str]], str, int]],
) -> bool:
    """Index the shards `todo` (`jobs`), then merge every shard of `files` into `target`."""
    terms = _GatheredTerms()
    if workers == 1 or len(files) == 1:
        _gather(terms, files, todo, (index_shard(*job) for job in jobs))
        return _merge(vault, target, terms, partial(link_rows, terms.shards))
    context = multiprocessing.get_context("spawn")
    # The merge starts as the shards come: their terms are numbered while later shards
    # are indexed, and the links are resolved in a process of their own beside the
    # postings' merge (one core was idle for the 5.6 s of help x16's merge). The shards'
    # workers exit first, with their run caches (~200 MB each).
    with ProcessPoolExecutor(workers, context, worker_setup) as pool:
        _gather(terms, files, todo, pool.map(index_shard, *zip(*jobs, strict=True)))
    with ProcessPoolExecutor(1, context, worker_setup) as linker:
        links = linker.submit(link_rows, terms.shards)
        return _merge(vault, target, terms, links.result)


@contextlib.contextmanager
def _shard_folder(resume_in: Path | None) -> Iterator[tuple[Path, bool]]:
    """Where the shards go, and whether they stay there after this build (`kept_folder`)."""
    if resume_in is not None:
        with kept_folder(resume_in) as folder:
            if folder is not None:
                yield folder, True
                return
    with locked_folder(SHARD_FOLDER_PREFIX) as folder:
        yield folder, False


def _shard_format() -> str:
    """What decides a shard's content: the index's format and the code writing shards."""
    return code_key(format_key(), (sys.modules[__name__], vault_documents))


def _shard_name(code: str, spec: VaultSpec, cut: list[_Listed]) -> str:
    """A shard's file name: what it was indexed by, from which notes, as they were listed."""
    digest = hashlib.sha256(
        json.dumps([code, spec.root, spec.include_hidden, spec.max_note_bytes, cut]).encode()
    )
    return f"shard-{digest.hexdigest()[:32]}.npz"


def _remove_all_but(folder: Path, names: set[str]) -> None:
    """Remove the shards of builds of other notes, and half-written files, from a kept folder."""
    for entry in folder.iterdir():
        if entry.name not in names and (entry.suffix == ".tmp" or entry.name.startswith("shard-")):
            entry.unlink(missing_ok=True)


def _written(file: Path, shard: list[tuple[str, str]]) -> bool:
    """Whether an earlier build wrote this shard whole; one that cannot be read is removed."""
    if not file.is_file():
        return False
    try:
        archive = open_mapped(file)
        held = [str(path) for path in archive.header["paths"]]
        archive.release_pages()
    except UNREADABLE as exc:
        logger.info("Indexing the notes of %s again: %s", file.name, exc)
        file.unlink(missing_ok=True)
        return False
    return set(held) <= {path for path, _file in shard}


def _gather(
    terms: _GatheredTerms, files: list[Path], todo: list[int], written: Iterator[str]
) -> None:
    """Number every shard's terms in note order, those written now as they come."""
    indexed = set(todo)
    for number, file in enumerate(files):
        terms.add(Path(next(written)) if number in indexed else file)


def index_shard(spec: VaultSpec, paths: Sequence[tuple[str, str]], out: str, runs: int) -> str:
    """Index some notes and write their postings, saved rows and links to `out`.

    Runs in a worker process. Notes that cannot be read (gone, over the size limit) are
    left out, as a refresh would leave them out.

    Args:
        spec: the vault.
        paths: the shard's notes, with their files, as the vault listed them.
        out: the file to write.
        runs: joined runs the worker keeps split (its share of `BUILD_RUN_CACHE`).

    Returns:
        `out`.
    """
    set_run_cache_size(runs)
    vault = spec.open()
    kept: list[str] = []
    rows: list[SavedRow] = []
    links: list[list[str]] = []
    aliases: dict[str, list[str]] = {}

    def documents() -> Iterator[RecallDocument]:
        for path, file in paths:
            read = vault.reader.read_listed(path, file)
            if read is None:
                continue
            info, text, stamp = read
            kept.append(path)
            rows.append(encode_row(info, stamp))
            links.append(sorted({link.target for link in info.parsed.links}))
            if info.parsed.aliases:
                aliases[path] = list(info.parsed.aliases)
            yield note_document(info, text)

    snapshot = RecallIndex.from_documents(documents(), len(paths)).snapshot()
    if snapshot.paths != kept:
        msg = "a shard's notes were numbered out of order"
        raise RuntimeError(msg)
    arrays: dict[str, npt.NDArray[Any]] = {
        "terms": np.frombuffer(snapshot.vocabulary, dtype=np.uint8),
        **{f"{field}_offsets": getattr(snapshot, field)[0] for field in _FIELDS},
        **{f"{field}_notes": getattr(snapshot, field)[1] for field in _FIELDS},
        **pack(rows, len(rows)),
    }
    header = {"paths": kept, "aliases": aliases, "links": links}
    # Renamed into place once whole: a build taking up a killed one trusts what it finds.
    write_atomically(Path(out), header, arrays)
    return out


class _GatheredTerms:
    """The shards written so far, each one's terms numbered in the order they first came.

    Numbered as each shard comes, while later ones are indexed: mapping every shard's
    terms to their merged ranks once all had come took ~1.3 s of help x16's merge; now
    the merge sorts the terms once and maps the numbers in numpy (`ranks`).
    """

    def __init__(self) -> None:
        self.shards: list[Path] = []
        self._numbering = TermNumbering()
        self._numbered: list[npt.NDArray[np.int32]] = []

    def add(self, shard_file: Path) -> None:
        """Number the terms of a shard written (the next in note order)."""
        shard = open_mapped(shard_file)
        try:
            terms = SortedTerms(_terms(shard.arrays)).decode_all()
        finally:
            shard.release_pages()
        number = self._numbering.__getitem__
        self._numbered.append(np.fromiter(map(number, terms), dtype=np.int32, count=len(terms)))
        self.shards.append(shard_file)

    def ranks(self) -> tuple[list[npt.NDArray[np.int32]], SortedTerms]:
        """Each shard's terms' ranks among every shard's terms, and those terms (once)."""
        ranks, terms = self._numbering.ranked()
        numbered, self._numbered = self._numbered, []
        return [ranks[numbers] for numbers in numbered], terms


def link_rows(shard_files: list[Path]) -> Rows:
    """The notes' outlinks, resolved against every note of the shards, as rows over them."""
    shards = [open_mapped(path) for path in shard_files]
    paths = [str(path) for shard in shards for path in shard.header["paths"]]
    numbers = {path: number for number, path in enumerate(paths)}
    links = (list(map(str, targets)) for shard in shards for targets in shard.header["links"])
    return LinkGraph.from_links(numbers, _aliases(shards), links).outlink_rows


def _aliases(shards: list[MappedArchive]) -> dict[str, list[str]]:
    return {str(path): names for shard in shards for path, names in shard.header["aliases"].items()}


def _merge(vault: Vault, target: Path, gathered: _GatheredTerms, links: Callable[[], Rows]) -> bool:
    """Merge shard files, in order, into one index file.

    Args:
        vault: the vault indexed.
        target: the index file to write.
        gathered: the shards, in note order, and their terms' numbering (emptied here).
        links: the outlink rows (`link_rows`), asked for once the postings are merged.
    """
    shards = [open_mapped(path) for path in gathered.shards]
    paths = [str(path) for shard in shards for path in shard.header["paths"]]
    bases = np.cumsum([0] + [len(shard.header["paths"]) for shard in shards])[:-1]
    to_merged, terms = gathered.ranks()
    fields = {}
    for field in _FIELDS:
        rows = [postings_from(shard.arrays, field) for shard in shards]
        fields[field] = _merge_rows(rows, to_merged, bases, len(terms))
        for shard in shards:
            shard.release_pages()
    snapshot = RecallSnapshot(paths, terms.buffer, fields["body"], fields["meta"])
    notes = _merge_saved_rows(shards)  # the records are copied from the shards as written
    return write_index(
        vault, target, snapshot=snapshot, notes=notes, links=links(), aliases=_aliases(shards)
    )


def _terms(arrays: dict[str, npt.NDArray[Any]]) -> bytes:
    return typed_array(arrays, "terms", np.uint8).tobytes()


def _merge_rows(
    rows: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]],
    to_merged: list[npt.NDArray[np.int32]],
    bases: npt.NDArray[np.int64],
    terms: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """One field's postings of every shard as rows over the merged terms and note numbers.

    A shard's notes all come after the previous shard's, so each merged row is the
    shards' rows for that term one after the other: every posting's place is its row's
    start, plus what earlier shards put there, plus its place in its shard's row.
    """
    counts = np.zeros(terms, dtype=np.int64)
    for (offsets, _notes), mapping in zip(rows, to_merged, strict=True):
        counts[mapping] += np.diff(offsets)
    merged_offsets = np.zeros(terms + 1, dtype=np.int64)
    np.cumsum(counts, out=merged_offsets[1:])
    merged = np.empty(int(merged_offsets[-1]), dtype=np.int32)
    cursor = merged_offsets[:-1].copy()
    for (offsets, notes), mapping, base in zip(rows, to_merged, bases, strict=True):
        sizes = np.diff(offsets)
        places = np.arange(notes.size, dtype=np.int64) - np.repeat(offsets[:-1], sizes)
        places += np.repeat(cursor[mapping], sizes)
        merged[places] = notes + np.int32(int(base))
        cursor[mapping] += sizes
    return merged_offsets, merged


def _merge_saved_rows(shards: list[MappedArchive]) -> Members:
    """The shards' saved rows (`saved_notes.pack`) as one set, in note order.

    The records (most of an index file) stay the shards' mapped arrays, written one after
    the other; only their offsets are shifted.
    """
    record_offsets = [typed_array(s.arrays, "note_record_offsets", np.int64) for s in shards]
    starts = np.cumsum([0] + [int(offsets[-1]) for offsets in record_offsets])
    return {
        "note_stamps": [typed_array(s.arrays, "note_stamps", np.int64) for s in shards],
        "note_times": [typed_array(s.arrays, "note_times", np.float64) for s in shards],
        "note_records": [typed_array(s.arrays, "note_records", np.uint8) for s in shards],
        "note_record_offsets": [
            np.zeros(1, dtype=np.int64),
            *(offsets[1:] + start for offsets, start in zip(record_offsets, starts, strict=False)),
        ],
    }
