"""The recall index and note records saved in `<vault>/.vaultsearch/`, for fast restarts.

Indexing a 6,000-note vault reads, parses and tokenizes 30 MB of text: seconds, paid
by every new process (each `vaultsearch search` is one). Saved, the index loads in a
fraction of that, and the vault's first refresh then reads only notes whose mtime or
size changed since the save. One `.npz` file, written to a temporary name and renamed
into place, so a crash never leaves a half-written index; loaded with
`allow_pickle=False`, since the file sits in a folder users sync and share. A file from
another version of the tokenizer or parser is ignored: the format key hashes their code.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.search import recall
from langchain_vaultsearch.search.recall import RecallIndex, RecallSnapshot
from langchain_vaultsearch.text import tokenize
from langchain_vaultsearch.vault import markdown, note_records
from langchain_vaultsearch.vault.vault import Vault, VaultChanges

logger = logging.getLogger(__name__)

CACHE_FOLDER = ".vaultsearch"
INDEX_FILE = "lexical-index.npz"


def index_path(vault: Vault) -> Path:
    """Where the saved index of a vault lives."""
    return vault.root / CACHE_FOLDER / INDEX_FILE


def format_key() -> str:
    """A hash of the code that decides what the saved index holds."""
    digest = hashlib.sha256(b"lexical-index-v1")
    for module in (tokenize, markdown, note_records, recall):
        source = getattr(module, "__file__", None)
        digest.update(Path(source).read_bytes() if source else module.__name__.encode())
    return digest.hexdigest()[:16]


def save_index(vault: Vault, index: RecallIndex) -> bool:
    """Save the index and the vault's note records.

    Args:
        vault: the vault the index was built from.
        index: its recall index (compacted by this call).

    Returns:
        True when saved; False when the folder is not writable (logged, not raised).
    """
    snapshot = index.snapshot()
    header = {"format": format_key(), "paths": snapshot.paths, "notes": vault.records()}
    target = index_path(vault)
    try:
        target.parent.mkdir(exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        try:
            arrays: dict[str, Any] = {
                "header": _bytes(json.dumps(header)),
                "terms": _bytes("\n".join(snapshot.terms)),
                "term_ids": snapshot.term_ids,
                **_postings_arrays("body", snapshot.body),
                **_postings_arrays("meta", snapshot.meta),
            }
            with os.fdopen(handle, "wb") as out:
                np.savez(out, allow_pickle=False, **arrays)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        logger.info("Not saving the search index to %s: %s", target, exc)
        return False
    return True


def load_index(vault: Vault) -> RecallIndex | None:
    """Load a saved index into a vault that has not been scanned yet.

    Args:
        vault: a fresh vault; it adopts the saved note records.

    Returns:
        The recall index, or None when there is no usable saved index (missing, from
        another version, damaged: logged, never raised).
    """
    path = index_path(vault)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(data["header"].tobytes().decode("utf-8"))
            if header.get("format") != format_key():
                logger.info("Ignoring %s: saved by another version", path)
                return None
            terms_text = data["terms"].tobytes().decode("utf-8")
            snapshot = RecallSnapshot(
                paths=[str(p) for p in header["paths"]],
                terms=terms_text.split("\n") if terms_text else [],
                term_ids=data["term_ids"].astype(np.int64, copy=False),
                body=_postings_from(data, "body"),
                meta=_postings_from(data, "meta"),
            )
        _check(snapshot)
        if vault.adopt(header["notes"]) == 0 and header["notes"]:
            return None
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
        logger.warning("Ignoring the saved search index %s: %s", path, exc)
        return None
    searchable = [_searchable(vault, note_path) for note_path in snapshot.paths]
    index = RecallIndex.from_snapshot(snapshot, searchable)
    # Notes the vault did not adopt (frontmatter JSON cannot carry) are read again.
    index.apply(VaultChanges(removed=tuple(p for p in snapshot.paths if vault.get(p) is None)))
    return index


def _postings_arrays(
    name: str, postings: tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]
) -> dict[str, npt.NDArray[Any]]:
    """Sorted postings as (distinct term ids, their counts, note ids): half the bytes."""
    term_ids, counts = np.unique(postings[0], return_counts=True)
    return {f"{name}_terms": term_ids, f"{name}_counts": counts, f"{name}_notes": postings[1]}


def _postings_from(
    data: Mapping[str, npt.NDArray[Any]], name: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    term_ids = data[f"{name}_terms"].astype(np.int64, copy=False)
    counts = data[f"{name}_counts"].astype(np.int64, copy=False)
    notes = data[f"{name}_notes"].astype(np.int32, copy=False)
    if term_ids.shape != counts.shape or counts.sum() != notes.size or np.any(counts <= 0):
        msg = f"{name} postings counts do not add up"
        raise ValueError(msg)
    return np.repeat(term_ids, counts), notes


def _bytes(text: str) -> npt.NDArray[np.uint8]:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def _searchable(vault: Vault, path: str) -> bool:
    info = vault.get(path)
    return info is not None and info.searchable


def _check(snapshot: RecallSnapshot) -> None:
    """Reject arrays that do not fit together (a damaged or hand-edited file)."""
    if len(snapshot.terms) != len(snapshot.term_ids):
        msg = "term list and term ids differ in length"
        raise ValueError(msg)
    notes = len(snapshot.paths)
    for term_ids, note_ids in (snapshot.body, snapshot.meta):
        if term_ids.shape != note_ids.shape or term_ids.ndim != 1:
            msg = "postings arrays differ in shape"
            raise ValueError(msg)
        if note_ids.size and (note_ids.min() < 0 or note_ids.max() >= notes):
            msg = "postings point at notes that do not exist"
            raise ValueError(msg)
        if term_ids.size and np.any(term_ids[1:] < term_ids[:-1]):
            msg = "postings are not sorted"
            raise ValueError(msg)
