"""Edits that keep a note's size and mtime (issue 12, item 5): an editor or a sync tool that
restores the mtime after writing. The inode change time in the stamp sees them, in one
process and after a restart from the saved index; attribute changes alone do not count."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from langchain_vaultsearch import TieredLexicalRetriever
from langchain_vaultsearch.search.lexical_index import IndexPolicy
from tests.conftest import write_vault

POLICY = IndexPolicy(persist_min_notes=1)  # save the index whatever the vault's size


def _rewrite_keeping_size_and_mtime(path: Path, old: str, new: str) -> None:
    assert len(old) == len(new)
    before = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def _paths(retriever: TieredLexicalRetriever, query: str) -> list[str]:
    return [d.metadata["path"] for d in retriever.invoke(query)]


def test_an_edit_keeping_size_and_mtime_is_seen_live_and_after_a_restart(tmp_path: Path) -> None:
    vault = write_vault(
        tmp_path / "v",
        {"Note.md": "# Note\n\nalpha bravo\n", "Other.md": "# Other\n\ncharlie\n"},
    )
    live = TieredLexicalRetriever(vault_path=str(vault), index_policy=POLICY)
    assert _paths(live, "alpha") == ["Note.md"]
    _rewrite_keeping_size_and_mtime(vault / "Note.md", "alpha", "delta")
    assert _paths(live, "delta") == ["Note.md"]
    assert _paths(live, "alpha") == []
    assert live.core.index.save() is not None
    _rewrite_keeping_size_and_mtime(vault / "Note.md", "delta", "gamma")
    restarted = TieredLexicalRetriever(vault_path=str(vault), index_policy=POLICY)
    assert _paths(restarted, "gamma") == ["Note.md"]
    assert _paths(restarted, "delta") == []


def test_a_chmod_or_a_hard_link_is_not_an_edit(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"Note.md": "# Note\n\nalpha bravo\n"})
    retriever = TieredLexicalRetriever(vault_path=str(vault))
    notes = retriever.vault
    assert notes is not None
    notes.refresh()
    (vault / "Note.md").chmod(0o600)
    os.link(vault / "Note.md", vault / "Linked.md")
    changes = notes.refresh()
    assert [info.path for info, _text in changes.updated] == ["Linked.md"]
    assert _paths(retriever, "alpha") == ["Linked.md", "Note.md"]


def test_a_chmod_after_a_restart_keeps_the_saved_record_trusted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The row's stamp follows the chmod (ctime) while its record keeps the stamp it was
    made from: neither this process nor the next may take that for damage."""
    vault = write_vault(
        tmp_path / "v",
        {"Note.md": "# Note\n\nalpha bravo\n", "Other.md": "# Other\n\ncharlie\n"},
    )
    first = TieredLexicalRetriever(vault_path=str(vault), index_policy=POLICY)
    assert _paths(first, "alpha") == ["Note.md"]
    assert first.core.index.save() is not None
    restarted = TieredLexicalRetriever(vault_path=str(vault), index_policy=POLICY)
    with caplog.at_level(logging.WARNING):
        assert _paths(restarted, "alpha") == ["Note.md"]  # its saved record is checked
        os.chmod(vault / "Note.md", 0o600)
        assert _paths(restarted, "alpha") == ["Note.md"]
        assert restarted.vault is not None
        assert restarted.vault.notes.keys() == {"Note.md", "Other.md"}
        assert restarted.core.index.save() is not None
        again = TieredLexicalRetriever(vault_path=str(vault), index_policy=POLICY)
        assert _paths(again, "alpha") == ["Note.md"]
    assert [r.getMessage() for r in caplog.records if "saved record" in r.getMessage()] == []
