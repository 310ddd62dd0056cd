"""The keyword index's saved file: one `.npz` beside the store, loaded only when current.

A store of 100,000 chunks takes seconds to index; a process that starts again loads the
arrays instead when the store's files, the tokenizer and the code that shapes the index
(`format_key`) are all unchanged. The file is input (anyone with the folder can change
it): a damaged or forged one is logged at WARNING, removed, and rebuilt; never trusted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.chunk_store import analysis
from langchain_vaultsearch.chunk_store.analysis import Tokenizer
from langchain_vaultsearch.chunk_store.jsonl_store import MAX_LINE_BYTES, FileStamp
from langchain_vaultsearch.chunk_store.keyword_build import TFIDF_FEATURES
from langchain_vaultsearch.chunk_store.keyword_chunks import IndexedChunks
from langchain_vaultsearch.chunk_store.keyword_scoring import (
    BM25_B,
    BM25_EPSILON,
    BM25_K1,
    KeywordScorer,
    Postings,
    okapi_idf,
    smooth_idf,
)
from langchain_vaultsearch.expansion import terms as stop_word_source
from langchain_vaultsearch.safe_archive import (
    HEADER,
    UNREADABLE,
    check_sizes,
    code_key,
    discard,
    refused_folder,
    save_if_possible,
    typed_array,
)
from langchain_vaultsearch.text import han_forms, tokenize

logger = logging.getLogger(__name__)

INDEX_FILE = "keyword-index.npz"


def format_key() -> str:
    """A hash of the code that decides what the saved keyword index holds."""
    return code_key(
        "keyword-index-v1",
        (analysis, tokenize, han_forms, stop_word_source),
        f"{BM25_K1} {BM25_B} {BM25_EPSILON} {TFIDF_FEATURES} {han_forms.table_version()}",
    )


def save(path: Path, chunks: IndexedChunks, scorer: KeywordScorer) -> bool:
    """Write an index to `path` atomically; False (logged) when it cannot be."""
    refused = refused_folder(path.parent)
    if refused is not None:
        logger.warning("Not saving the keyword index in %s: %s", path.parent, refused)
        return False
    header = {
        "format": format_key(),
        "tokenizer": scorer.tokenizer,
        "stamps": chunks.stamps,
        "files": chunks.files,
        "ids": chunks.ids,
        "bm25_terms": list(scorer.bm25_terms),
        "features": list(scorer.features),
        "form_numbers": list(scorer.form_numbers),
    }
    arrays: dict[str, npt.NDArray[Any]] = {
        "lines": chunks.lines.reshape(-1),
        "bm25_offsets": scorer.bm25.offsets,
        "bm25_docs": scorer.bm25.docs,
        "bm25_counts": scorer.bm25.values,
        "lengths": scorer.lengths,
        "tfidf_offsets": scorer.tfidf.offsets,
        "tfidf_docs": scorer.tfidf.docs,
        "tfidf_weights": scorer.tfidf.values,
        "form_offsets": scorer.forms.offsets,
        "form_docs": scorer.forms.docs,
    }
    return save_if_possible(path, header, arrays, "keyword index")


def load(
    path: Path, stamps: Sequence[FileStamp], tokenizer: Tokenizer
) -> tuple[IndexedChunks, KeywordScorer] | None:
    """The saved index when it is current for these files and this tokenizer, else None.

    The file is input (anyone with the folder can change it): a damaged or forged one
    is logged at WARNING, removed, and rebuilt by the caller; never trusted.
    """
    if refused_folder(path.parent) is not None or not path.is_file():
        return None
    try:
        check_sizes(path)
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(data[HEADER]) if HEADER in data.files else None
            if not isinstance(header, dict) or header.get("format") != format_key():
                logger.info("Ignoring %s: saved by another version", path)
                return None
            if header.get("tokenizer") != tokenizer:
                return None
            if [tuple(s) for s in header["stamps"]] != [tuple(s) for s in stamps]:
                return None
            parts = _from_saved(header, data)
    except UNREADABLE as exc:
        discard(path, "the keyword index", exc)
        return None
    return parts


def _from_saved(
    header: dict[str, Any], data: Mapping[str, Any]
) -> tuple[IndexedChunks, KeywordScorer]:
    """The index a saved file holds, checked against the store it was loaded for.

    `header["stamps"]` already equals the store's own listing (`load`): the files a
    query opens must be those, and each chunk's line must lie within its file, or a
    forged file would have queries read a FIFO (forever), `/dev/zero` or a file
    outside the store. The idf of every term follows from the postings and is
    computed again, not read: a saved NaN or huge value made every query find nothing.
    """
    stamps = [(str(a), int(b), int(c)) for a, b, c in header["stamps"]]
    files = _strings(header["files"], "files")
    if files != [name for name, _, _ in stamps]:
        msg = "the saved file list is not the store's files"
        raise ValueError(msg)
    ids = _strings(header["ids"], "ids")
    n = len(ids)
    if len(set(ids)) != n:
        msg = "chunk ids repeat"
        raise ValueError(msg)
    lines = typed_array(data, "lines", np.int64)
    if len(lines) != 4 * n:
        msg = "chunk locations do not match the ids"
        raise ValueError(msg)
    lines = lines.reshape(-1, 4)
    if n and (lines.min() < 0 or int(lines[:, 0].max()) >= len(files)):
        msg = "chunk locations name files that do not exist"
        raise ValueError(msg)
    file_sizes = np.array([size for _, _, size in stamps], dtype=np.int64)
    offsets, lengths = lines[:, 2], lines[:, 3]
    if np.any(lengths > MAX_LINE_BYTES) or np.any(offsets > file_sizes[lines[:, 0]] - lengths):
        msg = "chunk locations lie outside their files"
        raise ValueError(msg)
    bm25_names = _strings(header["bm25_terms"], "bm25_terms")
    feature_names = _strings(header["features"], "features")
    form_names = _strings(header["form_numbers"], "form_numbers")
    bm25 = Postings(
        typed_array(data, "bm25_offsets", np.int64),
        typed_array(data, "bm25_docs", np.int32),
        typed_array(data, "bm25_counts", np.uint16),
    )
    bm25.check(len(bm25_names), n)
    tfidf = Postings(
        typed_array(data, "tfidf_offsets", np.int64),
        typed_array(data, "tfidf_docs", np.int32),
        typed_array(data, "tfidf_weights", np.float32),
    )
    tfidf.check(len(feature_names), n)
    if not np.all(np.isfinite(tfidf.values)):
        msg = "TF-IDF weights are not finite"
        raise ValueError(msg)
    form_docs = typed_array(data, "form_docs", np.int32)
    forms = Postings(typed_array(data, "form_offsets", np.int64), form_docs, form_docs)
    forms.check(len(form_names), n)
    chunk_lengths = typed_array(data, "lengths", np.int32)
    if len(chunk_lengths) != n or np.any(chunk_lengths < 0):
        msg = "chunk lengths do not match the chunks"
        raise ValueError(msg)
    chunks = IndexedChunks(stamps=stamps, files=files, ids=ids, lines=lines)
    scorer = KeywordScorer(
        tokenizer=analysis.check_tokenizer(str(header["tokenizer"])),
        bm25_terms={t: i for i, t in enumerate(bm25_names)},
        bm25=bm25,
        lengths=chunk_lengths,
        bm25_idf=okapi_idf(np.diff(bm25.offsets), n),
        features={t: i for i, t in enumerate(feature_names)},
        tfidf=tfidf,
        tfidf_idf=smooth_idf(np.diff(tfidf.offsets), n),
        form_numbers={t: i for i, t in enumerate(form_names)},
        forms=forms,
    )
    return chunks, scorer


def _strings(value: object, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        msg = f"{name} is not a list of strings"
        raise ValueError(msg)
    return value
