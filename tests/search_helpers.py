"""Vaults and vocabularies the recall and BM25 tests build (helpers, not tests)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from langchain_vaultsearch.search.recall import PREFIX_WEIGHT, RecallIndex, Vocabulary
from langchain_vaultsearch.search.vault_documents import apply_changes
from langchain_vaultsearch.vault import saved_notes as saved_notes_module
from langchain_vaultsearch.vault.vault import Vault


def write(root: Path, notes: dict[str, str]) -> None:
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def rewrite(path: Path, text: str, mtime_ns: int) -> None:
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(mtime_ns, mtime_ns))


def open_vault(root: Path, **options: object) -> tuple[Vault, RecallIndex]:
    vault = Vault(root, **options)  # type: ignore[arg-type]
    index = RecallIndex()
    apply_changes(index, vault.refresh())
    return vault, index


def prefix_weight(term: str, longer: str) -> float:
    extra = len(longer) - len(term)
    return PREFIX_WEIGHT * len(longer) / (len(longer) + 0.3 * extra)


def vocabulary(*terms: str) -> Vocabulary:
    vocab = Vocabulary()
    for term in terms:
        vocab.add(term)
    return vocab


def count_decodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the saved note records decoded from now on, in order."""
    decoded: list[str] = []
    original = saved_notes_module.parse_record

    def counting(record: dict[str, Any]) -> Any:
        decoded.append(record["path"])
        return original(record)

    monkeypatch.setattr(saved_notes_module, "parse_record", counting)
    return decoded
