"""The recall index and note records saved in `<vault>/.vaultsearch/`, for fast restarts.

Indexing a 6,000-note vault reads, parses and tokenizes 30 MB of text: seconds, paid
by every new process (each `vaultsearch search` is one). Saved, the index is opened in
a fraction of that, and the vault's first refresh then reads only notes whose stamp
changed since the save. One archive (`safe_archive`), written to a temporary name and
renamed into place, so a crash never leaves a half-written index; never unpickled, since
the file sits in a folder users sync and share. A file from another version of the
tokenizer or parser is ignored: the format key hashes their code.

The file is opened, not parsed (`safe_archive.open_mapped`): a restart of a 100,000-note
vault maps it and reads the pages its queries touch, where parsing it took 10 s and a
gigabyte. The header holds the format key, the vault's root, the note paths and the
aliases; the arrays are the recall index in the form it takes in memory (`terms`,
sorted newline-ended UTF-8; `body_offsets`/`meta_offsets`, int64 rows;
`body_notes`/`meta_notes`, int32 note ids), each note's saved record (`saved_notes.pack`:
stamps, times, its JSON record) and the link graph's rows (`link_offsets`,
`link_targets`), all by the same note number.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.safe_archive import (
    UNREADABLE,
    MappedArchive,
    Members,
    code_key,
    discard,
    open_mapped,
    refused_folder,
    remove_abandoned,
    remove_abandoned_folders,
    save_if_possible,
    typed_array,
)
from langchain_vaultsearch.search import recall
from langchain_vaultsearch.search.recall import RecallIndex, RecallSnapshot
from langchain_vaultsearch.text import han_forms, tokenize
from langchain_vaultsearch.vault import markdown, note_records, saved_notes
from langchain_vaultsearch.vault.link_graph import LinkGraph, Rows
from langchain_vaultsearch.vault.saved_notes import DECODED_CACHE_BYTES, SavedNotes, pack
from langchain_vaultsearch.vault.vault import Vault

logger = logging.getLogger(__name__)

CACHE_FOLDER = ".vaultsearch"
STALE_TEMPORARY_S = 600.0
"""A temporary index file this old belongs to no write in progress."""
WORKER_FILE_PREFIX = "vaultsearch-"
"""How an index process names the file it writes for its parent in the temp folder."""
SHARD_FOLDER_PREFIX = "vaultsearch-shards-"
"""How a build across processes names the temporary folder of its shard files."""
INDEX_FILE = "lexical-index.npz"
BUILD_SHARDS_FOLDER = "build-shards"
"""Beside the saved index: the shards of a build across processes not yet merged, for the
next build to take up when this one is stopped or killed (`parallel_build`)."""


def index_path(vault: Vault) -> Path:
    """Where the saved index of a vault lives."""
    return vault.root / CACHE_FOLDER / INDEX_FILE


def format_key() -> str:
    """A hash of the code that decides what the saved index holds."""
    return code_key(
        "lexical-index-v3",
        (tokenize, han_forms, markdown, note_records, saved_notes, recall),
        han_forms.table_version(),
    )


def save_index(
    vault: Vault,
    index: RecallIndex,
    expected_version: int | None = None,
    target: Path | None = None,
) -> bool:
    """Save the index, the vault's note records and its link graph.

    Args:
        vault: the vault the index was built from.
        index: its recall index (compacted by this call).
        expected_version: the vault version the index is current at, when the vault may
            have been refreshed since by another reader: then the records would be newer
            than the index, and nothing is saved.
        target: the file to write; the vault's `index_path` by default.

    Returns:
        True when saved; False when the folder is not writable (logged, not raised) or
        the vault moved past `expected_version` or while the records were collected.
    """
    snapshot = index.snapshot()
    version = vault.version
    if expected_version is not None and version != expected_version:
        return False
    graph = vault.link_graph()
    numbers = {path: number for number, path in enumerate(snapshot.paths)}
    absent = ((0, 0, 0), 0.0, 0.0, b"")
    notes = pack((vault.saved_row(path) or absent for path in snapshot.paths), len(numbers))
    if vault.version != version:
        # Versions only grow: unchanged while packing means the records match the index.
        return False
    aliases = {path: names for path, names in graph.aliases.items() if path in numbers}
    links = _link_rows(graph, numbers)
    return write_index(vault, target, snapshot=snapshot, notes=notes, links=links, aliases=aliases)


def write_index(
    vault: Vault,
    target: Path | None,
    *,
    snapshot: RecallSnapshot,
    notes: Members,
    links: Rows,
    aliases: Mapping[str, Sequence[str]],
) -> bool:
    """Write an index file: the recall index, the notes' saved rows and the link rows.

    Args:
        vault: the vault it indexes (its root is the file's identity).
        target: the file to write; the vault's `index_path` by default.
        snapshot: the recall index.
        notes: `saved_notes.pack` of every note of the snapshot, in its order.
        links: the link graph's outlinks over the snapshot's note numbers.
        aliases: frontmatter aliases of the notes that have any.

    Returns:
        True when written; False when the folder is refused or not writable (logged).
    """
    header = {
        "format": format_key(),
        "root": str(vault.root),
        "paths": snapshot.paths,
        "aliases": {path: list(names) for path, names in aliases.items()},
    }
    target = target or index_path(vault)
    refused = refused_folder(target.parent)
    if refused is not None:
        logger.warning("Not saving the search index in %s: %s", target.parent, refused)
        return False
    arrays: Members = {
        "terms": np.frombuffer(snapshot.vocabulary, dtype=np.uint8),
        "body_offsets": snapshot.body[0],
        "body_notes": snapshot.body[1],
        "meta_offsets": snapshot.meta[0],
        "meta_notes": snapshot.meta[1],
        **notes,
        "link_offsets": links[0],
        "link_targets": links[1],
    }
    return save_if_possible(target, header, arrays, "search index")


def _link_rows(graph: LinkGraph, numbers: dict[str, int]) -> Rows:
    """The graph's outlinks renumbered to the index's note numbers (others dropped)."""
    offsets = np.zeros(len(numbers) + 1, dtype=np.int64)
    targets: list[int] = []
    for path, number in numbers.items():
        found = [numbers[t] for t in graph.outlinks(path) if t in numbers]
        targets.extend(sorted(found))
        offsets[number + 1] = len(targets)
    return offsets, np.array(targets, dtype=np.int32)


def remove_stale_temporaries(vault: Vault, older_than_s: float = STALE_TEMPORARY_S) -> int:
    """Delete what killed writers left behind; returns how many files went.

    A save writes `<vault>/.vaultsearch/tmpXXXX.tmp` and renames it; an index process with
    `persist_index=False` writes `<tmp>/vaultsearch-XXXX.npz` for its parent. Killed at the
    wrong moment (kill -9, a power cut) they stay, and so does the shard folder of a build
    across processes (`parallel_build`); each is locked by its writer while written, so
    one no writer holds goes now (`safe_archive.remove_abandoned`). The shards a stopped
    build kept beside the index (`BUILD_SHARDS_FOLDER`) stay for the next build
    (`remove_kept_shards` once an index is loaded).
    """
    folder = index_path(vault).parent
    ours = [] if refused_folder(folder) is not None else list(folder.glob("tmp*.tmp"))
    temporary = Path(tempfile.gettempdir())
    candidates = [*ours, *temporary.glob(f"{WORKER_FILE_PREFIX}*.npz")]
    removed = remove_abandoned(candidates, older_than_s)
    shards = temporary.glob(f"{SHARD_FOLDER_PREFIX}*")
    removed += remove_abandoned_folders(shards, older_than_s)
    if removed:
        logger.info("Removed %d abandoned temporary index file(s) of %s", removed, vault.root)
    return removed


def remove_kept_shards(vault: Vault) -> None:
    """Remove the shards a stopped build kept, once a saved index was loaded: no build comes.

    Not before: an index saved by another version, or for another vault, is not loaded,
    and the build that replaces it takes those shards up.
    """
    folder = index_path(vault).parent
    if refused_folder(folder) is None:
        remove_abandoned_folders([folder / BUILD_SHARDS_FOLDER], STALE_TEMPORARY_S)


class LoadedIndex(NamedTuple):
    """A saved index opened for a vault.

    Attributes:
        recall: the recall index over the file's arrays.
        current: paths of the vault's notes it is current for.
        pages: the mapped file, whose pages the holder may release.
        as_of: the vault's version and note revisions `current` holds for (see
            `Vault.snapshot`), for the holder's `ChangeFeed.start_from`.
    """

    recall: RecallIndex
    current: list[str]
    pages: MappedArchive
    as_of: tuple[int, dict[str, int]]


def load_index(
    vault: Vault,
    path: Path | None = None,
    decoded_cache_bytes: int = DECODED_CACHE_BYTES,
    *,
    built_here: bool = False,
) -> LoadedIndex | None:
    """Open a saved index; a vault that has not been scanned yet adopts its note records.

    A vault another reader refreshed first (a `FilterRetriever` sharing it) keeps its
    own records: the index is then current for the notes whose file is the one their
    saved record was made from, and the caller indexes the others again.

    Args:
        vault: the vault the index was saved from.
        path: the file to read; the vault's `index_path` by default.
        decoded_cache_bytes: how much memory the records decoded for queries may keep.
        built_here: the file is what this process's own index build just wrote from the
            notes, so its records need no check against them (`Vault.get` checks each
            adopted record the first time, since a saved file is anyone's input; after a
            background build that check read and parsed every new candidate of the first
            searches again: warm p95 85 ms on the 6,280-note help vault).

    Returns:
        The index, or None when there is no usable saved index (missing, from another
        version or vault, damaged: logged, never raised).
    """
    path = path or index_path(vault)
    refused = refused_folder(path.parent)
    if refused is not None:
        logger.warning("Not reading a saved search index from %s: %s", path.parent, refused)
        return None
    try:
        saved_here = path.is_file()
    except OSError as exc:  # a folder this user may not look into: search without it
        logger.warning("Not reading a saved search index from %s: %s", path.parent, exc)
        return None
    if not saved_here:
        return None
    try:
        archive = open_mapped(path)
        header, data = archive.header, archive.arrays
        if header.get("format") != format_key():
            logger.info("Ignoring %s: saved by another version", path)
            return None
        if header.get("root") != str(vault.root) and path == index_path(vault):
            logger.info("Ignoring %s: saved for another vault (%s)", path, header.get("root"))
            return None
        paths = [str(p) for p in header["paths"]]
        # Checked when made: a bad file is refused before the vault adopts anything.
        snapshot = RecallSnapshot(
            paths=paths,
            vocabulary=typed_array(data, "terms", np.uint8).tobytes(),
            body=postings_from(data, "body"),
            meta=postings_from(data, "meta"),
            release=archive.release_pages,
        )
        saved = SavedNotes(
            paths,
            typed_array(data, "note_stamps", np.int64),
            typed_array(data, "note_times", np.float64),
            typed_array(data, "note_records", np.uint8),
            typed_array(data, "note_record_offsets", np.int64),
            decoded_cache_bytes=decoded_cache_bytes,
            read_records=archive.bytes_reader("note_records"),
        )
        saved.verified[:] = built_here
        aliases = header["aliases"]
        if not isinstance(aliases, dict):
            msg = "the aliases are not a JSON object"
            raise TypeError(msg)
        graph = LinkGraph(
            saved.rows,
            {str(p): [str(a) for a in names] for p, names in aliases.items()},
            (
                typed_array(data, "link_offsets", np.int64),
                typed_array(data, "link_targets", np.int32),
            ),
        )
        archive.release_pages()
        version = vault.version
        if vault.adopt(saved, graph) == 0 and len(saved.live_paths()):
            as_of = vault.snapshot()  # before the stamps are compared: see `snapshot`
            current = vault.unchanged_notes(saved)
        else:
            current = saved.live_paths()
            as_of = (version, vault.adopted_revisions(saved, current))
    except UNREADABLE as exc:
        discard(path, "the saved search index", exc)
        return None
    live = set(current)
    if vault.inclusions or vault.exclusions:
        searchable = [_searchable(vault, note_path) for note_path in paths]
    else:
        searchable = [True] * len(paths)
    index = RecallIndex.from_snapshot(snapshot, searchable)
    # Notes the vault did not adopt (frontmatter JSON cannot carry) are read again.
    index.apply(removed=[p for p in paths if p not in live])
    return LoadedIndex(index, current, archive, as_of)


def postings_from(
    data: Mapping[str, npt.NDArray[Any]], name: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """A field's postings rows (`body` or `meta`) from an index file's arrays, typed."""
    return typed_array(data, f"{name}_offsets", np.int64), typed_array(
        data, f"{name}_notes", np.int32
    )


def _searchable(vault: Vault, path: str) -> bool:
    info = vault.record(path)
    return info is not None and info.searchable
