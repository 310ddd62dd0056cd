"""A vault's chunks written as a JSONL chunk store, for pipelines that take chunks.

The same chunks, chunk ids and metadata the vault's own retrievers use, so a keyword
search over the export finds what the vault search finds, under the same names.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from langchain_vaultsearch.search.chunk_cache import read_chunks
from langchain_vaultsearch.vault.vault import Vault

EXPORT_FILE = "vault-chunks.jsonl"


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote.

    Attributes:
        path: the file written.
        notes: notes exported.
        chunks: chunks (lines) written.
    """

    path: Path
    notes: int
    chunks: int


def export_vault_chunks(
    vault: Vault | str | os.PathLike[str], out_dir: str | os.PathLike[str]
) -> ExportReport:
    """Write every searchable note's chunks to `out_dir/vault-chunks.jsonl`.

    Written to a temporary file and renamed, so a store being searched never sees half
    an export. Each line: `{"id": chunk id, "text": chunk content, "metadata": {"path",
    "title", "heading", "chunk_index", "tags", "mtime", "ctime", "source"}}`.

    Args:
        vault: the vault, or its folder (refreshed here).
        out_dir: the store's folder (created when missing).
    """
    if not isinstance(vault, Vault):
        vault = Vault(os.path.expanduser(os.fspath(vault)), watch=False)
    folder = Path(os.path.expanduser(os.fspath(out_dir)))
    folder.mkdir(parents=True, exist_ok=True)
    vault.refresh(keep_text=False)
    target = folder / EXPORT_FILE
    handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
    notes = chunks = 0
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            for path in sorted(vault.notes):
                info = vault.notes[path]
                read = None if not info.searchable else read_chunks(vault, info)
                if read is None:
                    continue
                notes += 1
                for chunk in read[1]:
                    metadata = {
                        "path": info.path,
                        "title": info.title,
                        "heading": chunk.heading,
                        "chunk_index": chunk.chunk_index,
                        "tags": list(read[0].tags),
                        "mtime": info.mtime_ms,
                        "ctime": info.ctime_ms,
                        "source": info.path,
                    }
                    line = {"id": chunk.id, "text": chunk.content, "metadata": metadata}
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")
                    chunks += 1
        os.chmod(temporary, 0o644)  # a data file for other tools, not mkstemp's private 0600
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return ExportReport(path=target, notes=notes, chunks=chunks)
