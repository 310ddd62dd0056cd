"""The recall index and note records saved in `<vault>/.vaultsearch/`, for fast restarts.

Indexing a 6,000-note vault reads, parses and tokenizes 30 MB of text: seconds, paid
by every new process (each `vaultsearch search` is one). Saved, the index loads in a
fraction of that, and the vault's first refresh then reads only notes whose mtime or
size changed since the save. One `.npz` file, written to a temporary name and renamed
into place, so a crash never leaves a half-written index; loaded with
`allow_pickle=False`, since the file sits in a folder users sync and share. A file from
another version of the tokenizer or parser is ignored: the format key hashes their code.

The archive holds `header.json` (format key, note paths, note records) and the recall
index in the form it takes in memory, so loading it creates no Python object per term:
`terms` (every term, sorted, newline-ended UTF-8), `body_offsets` and `meta_offsets`
(int64, one row per term) and `body_notes` and `meta_notes` (int32 note ids).
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.safe_archive import (
    HEADER,
    UNREADABLE,
    check_sizes,
    discard,
    refused_folder,
    typed_array,
    write_atomically,
)
from langchain_vaultsearch.search import recall
from langchain_vaultsearch.search.recall import RecallIndex, RecallSnapshot
from langchain_vaultsearch.text import tokenize
from langchain_vaultsearch.vault import markdown, note_records
from langchain_vaultsearch.vault.note_info import NoteInfo
from langchain_vaultsearch.vault.vault import Vault

logger = logging.getLogger(__name__)

CACHE_FOLDER = ".vaultsearch"
STALE_TEMPORARY_S = 600.0
"""A temporary index file this old belongs to no write in progress."""
WORKER_FILE_PREFIX = "vaultsearch-"
"""How an index process names the file it writes for its parent in the temp folder."""
INDEX_FILE = "lexical-index.npz"


def index_path(vault: Vault) -> Path:
    """Where the saved index of a vault lives."""
    return vault.root / CACHE_FOLDER / INDEX_FILE


def format_key() -> str:
    """A hash of the code that decides what the saved index holds."""
    digest = hashlib.sha256(b"lexical-index-v2")
    for module in (tokenize, markdown, note_records, recall):
        source = getattr(module, "__file__", None)
        digest.update(Path(source).read_bytes() if source else module.__name__.encode())
    return digest.hexdigest()[:16]


def save_index(
    vault: Vault,
    index: RecallIndex,
    expected_version: int | None = None,
    target: Path | None = None,
) -> bool:
    """Save the index and the vault's note records.

    Args:
        vault: the vault the index was built from.
        index: its recall index (compacted by this call).
        expected_version: the vault version the index was built at, when the vault may
            have been refreshed since (by another thread): then the records would be
            newer than the index, and nothing is saved.
        target: the file to write; the vault's `index_path` by default.

    Returns:
        True when saved; False when the folder is not writable (logged, not raised) or
        the vault moved past `expected_version`.
    """
    snapshot = index.snapshot()
    records = vault.records()
    if expected_version is not None and vault.version != expected_version:
        # Versions only grow: unchanged after `records()` means the records match it.
        return False
    header = {"format": format_key(), "paths": snapshot.paths, "notes": records}
    target = target or index_path(vault)
    refused = refused_folder(target.parent)
    if refused is not None:
        logger.warning("Not saving the search index in %s: %s", target.parent, refused)
        return False
    arrays: dict[str, npt.NDArray[Any]] = {
        "terms": np.frombuffer(snapshot.vocabulary, dtype=np.uint8),
        "body_offsets": snapshot.body[0],
        "body_notes": snapshot.body[1],
        "meta_offsets": snapshot.meta[0],
        "meta_notes": snapshot.meta[1],
    }
    try:
        write_atomically(target, header, arrays)
    except OSError as exc:
        logger.info("Not saving the search index to %s: %s", target, exc)
        return False
    return True


def remove_stale_temporaries(vault: Vault, older_than_s: float = STALE_TEMPORARY_S) -> int:
    """Delete what killed writers left behind; returns how many files went.

    A save writes `<vault>/.vaultsearch/tmpXXXX.tmp` and renames it; an index process with
    `persist_index=False` writes `<tmp>/vaultsearch-XXXX.npz` for its parent. Killed at the
    wrong moment (kill -9, a power cut) they stay for good. Files older than
    `older_than_s` are well past any write in progress, so they are removed.
    """
    cutoff = time.time() - older_than_s
    folder = index_path(vault).parent
    ours = [] if refused_folder(folder) is not None else list(folder.glob("tmp*.tmp"))
    candidates = [*ours, *Path(tempfile.gettempdir()).glob(f"{WORKER_FILE_PREFIX}*.npz")]
    removed = 0
    for path in candidates:
        try:
            if path.is_file() and not path.is_symlink() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except OSError as exc:
            logger.debug("Could not remove the stale file %s: %s", path, exc)
    if removed:
        logger.info("Removed %d stale temporary index file(s) of %s", removed, vault.root)
    return removed


def load_index(
    vault: Vault, path: Path | None = None
) -> tuple[RecallIndex, dict[str, NoteInfo]] | None:
    """Load a saved index; a vault that has not been scanned yet adopts its note records.

    A vault another reader refreshed first (a `FilterRetriever` sharing it) keeps its
    own records: the index is then current for the notes whose file is the one their
    saved record was made from, and the caller indexes the others again.

    Args:
        vault: the vault the index was saved from.
        path: the file to read; the vault's `index_path` by default.

    Returns:
        The recall index and the vault's notes it is current for, or None when there is
        no usable saved index (missing, from another version, damaged: logged, never
        raised).
    """
    path = path or index_path(vault)
    refused = refused_folder(path.parent)
    if refused is not None:
        logger.warning("Not reading a saved search index from %s: %s", path.parent, refused)
        return None
    if not path.is_file():
        return None
    try:
        check_sizes(path)
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(data[HEADER]) if HEADER in data.files else {}
            if not isinstance(header, dict):
                msg = "the header is not a JSON object"
                raise ValueError(msg)
            if header.get("format") != format_key():
                logger.info("Ignoring %s: saved by another version", path)
                return None
            # Checked when made: a bad file is refused before the vault adopts anything.
            snapshot = RecallSnapshot(
                paths=[str(p) for p in header["paths"]],
                vocabulary=typed_array(data, "terms", np.uint8).tobytes(),
                body=_postings_from(data, "body"),
                meta=_postings_from(data, "meta"),
            )
        if vault.adopt(header["notes"]) == 0 and header["notes"]:
            current = vault.unchanged_notes(header["notes"])
        else:
            current = dict(vault.notes)
    except UNREADABLE as exc:
        discard(path, "the saved search index", exc)
        return None
    searchable = [_searchable(vault, note_path) for note_path in snapshot.paths]
    index = RecallIndex.from_snapshot(snapshot, searchable)
    # Notes the vault did not adopt (frontmatter JSON cannot carry) are read again.
    index.apply(removed=[p for p in snapshot.paths if p not in current])
    return index, current


def _postings_from(
    data: Mapping[str, npt.NDArray[Any]], name: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    return typed_array(data, f"{name}_offsets", np.int64), typed_array(
        data, f"{name}_notes", np.int32
    )


def _searchable(vault: Vault, path: str) -> bool:
    info = vault.record(path)
    return info is not None and info.searchable
