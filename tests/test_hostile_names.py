"""File names and encodings a real vault has: colons in names, UTF-16 notes."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest

from langchain_vaultsearch import FilterRetriever, TieredLexicalRetriever
from langchain_vaultsearch.vault.note_reader import decode_note
from langchain_vaultsearch.vault.saved_notes import SavedNotes
from langchain_vaultsearch.vault.vault import Vault
from tests.conftest import write_vault


def test_colons_in_top_level_names_are_found_and_resolve(tmp_path: Path) -> None:
    vault_dir = tmp_path / "vault"
    (vault_dir / "Meetings: 2024").mkdir(parents=True)
    (vault_dir / "Re: budget.md").write_text("colonfileword budget talk\n", encoding="utf-8")
    (vault_dir / "Meetings: 2024" / "Daily.md").write_text("zebrafish standup\n", encoding="utf-8")
    vault = Vault(vault_dir, watch=False)
    lexical = TieredLexicalRetriever(vault=vault, k=3)
    assert [d.metadata["path"] for d in lexical.invoke("colonfileword")] == ["Re: budget.md"]
    assert [d.metadata["path"] for d in lexical.invoke("zebrafish")] == ["Meetings: 2024/Daily.md"]
    found = FilterRetriever(vault=vault).find("what about [[Re: budget]]?")
    assert [d.metadata["path"] for d in found.documents] == ["Re: budget.md"]
    assert vault.reader.safe_path("C:/Windows/system.ini") is None  # a drive is still absolute
    assert vault.reader.safe_path("Re: budget.md") == vault.root / "Re: budget.md"


def test_utf16_notes_with_a_bom_are_read(tmp_path: Path) -> None:
    vault_dir = tmp_path / "vault"
    vault_dir.mkdir()
    (vault_dir / "Windows.md").write_bytes("# Notiz\r\n\r\nÜberweisung quokka\r\n".encode("utf-16"))
    (vault_dir / "Big.md").write_bytes("capybara".encode("utf-16-be").join([b"\xfe\xff", b""]))
    docs = TieredLexicalRetriever(vault_path=str(vault_dir), k=2).invoke("quokka")
    assert [d.metadata["path"] for d in docs] == ["Windows.md"]
    assert "Überweisung quokka" in docs[0].page_content
    assert decode_note("é".encode("utf-16-le").join([b"\xff\xfe", b""])) == "é"
    assert decode_note(b"\xef\xbb\xbfplain") == "plain"


def test_composed_and_decomposed_names_find_each_other(tmp_path: Path) -> None:
    nfd, nfc = "Cafe\u0301 Me\u0301nu", "Caf\u00e9 M\u00e9nu"
    vault_dir = tmp_path / "vault"
    vault_dir.mkdir()
    (vault_dir / f"{nfd}.md").write_text(
        f"# {nfd}\n\nEspresso r\u00e9sum\u00e9\n", encoding="utf-8"
    )
    (vault_dir / "Links.md").write_text(f"See [[{nfc}]].\n", encoding="utf-8")
    vault = Vault(vault_dir, watch=False)
    vault.refresh()
    assert vault.link_graph().resolve(nfc) == f"{nfd}.md"
    assert vault.link_graph().resolve(nfd) == f"{nfd}.md"
    assert vault.backlinks(f"{nfd}.md") == frozenset({"Links.md"})
    lexical = TieredLexicalRetriever(vault=vault, k=2)
    assert lexical.invoke("caf\u00e9 m\u00e9nu")[0].metadata["path"] == f"{nfd}.md"
    assert lexical.invoke("re\u0301sume\u0301")[0].metadata["path"] == f"{nfd}.md"
    found = FilterRetriever(vault=vault).find(f"what is on the [[{nfc}]]?")
    assert [d.metadata["path"] for d in found.documents] == [f"{nfd}.md"]


@pytest.mark.parametrize("alias", ["aaa-alias", "zzz-alias"])
def test_a_folder_symlink_inside_the_vault_shows_each_note_once_under_its_real_path(
    tmp_path: Path, alias: str
) -> None:
    vault = write_vault(tmp_path / "v", {"real/Zeppelin.md": "# Zeppelin\n\nairship hangar\n"})
    (vault / alias).symlink_to(vault / "real", target_is_directory=True)
    retriever = TieredLexicalRetriever(vault_path=str(vault))
    assert [d.metadata["path"] for d in retriever.invoke("airship hangar")] == ["real/Zeppelin.md"]
    assert sorted(retriever.vault.notes) == ["real/Zeppelin.md"]  # type: ignore[union-attr]


def test_a_folder_symlink_into_a_hidden_folder_is_still_followed(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {".archive/Old.md": "# Old\n\nairship hangar\n"})
    (vault / "archive").symlink_to(vault / ".archive", target_is_directory=True)
    retriever = TieredLexicalRetriever(vault_path=str(vault))
    assert [d.metadata["path"] for d in retriever.invoke("airship")] == ["archive/Old.md"]


@pytest.mark.parametrize(
    "hostile",
    [[], ["../out.md"], ["/etc/x.md"], ["C:/x.md"], ["a/../../b.md"], ["a\\..\\b.md"], [""]],
)
def test_a_saved_index_naming_paths_outside_the_vault_adopts_only_the_inside_ones(
    tmp_path: Path, hostile: list[str]
) -> None:
    inside = ["Note.md", "Folder/Other.md", "Re: budget.md", "Notes...md"]
    paths = [*inside, *hostile]
    count = len(paths)
    saved = SavedNotes(
        paths,
        np.zeros(3 * count, dtype=np.int64),
        np.zeros(2 * count, dtype=np.float64),
        np.frombuffer(b"{}" * count, dtype=np.uint8),
        np.arange(0, 2 * count + 1, 2, dtype=np.int64),
    )
    vault = Vault(tmp_path, watch=False)
    assert vault.adopt(saved) == len(inside)
    assert saved.live_paths() == inside


@pytest.mark.skipif(os.sep != "/", reason="a backslash cannot be in a name on Windows")
def test_a_name_with_a_backslash_is_skipped_once_not_listed_unreadable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Listed but unreadable before: its path read as back/slash.md, a note that is not there.
    root = write_vault(tmp_path / "vault", {"back\\slash.md": "quokka", "plain.md": "wombat"})
    vault = Vault(root, watch=False)
    with caplog.at_level(logging.WARNING):
        vault.refresh()
        vault.refresh()
    assert sorted(vault.notes) == ["plain.md"]
    assert caplog.text.count("a backslash in a name reads as a folder") == 1
    assert TieredLexicalRetriever(vault=vault).invoke("wombat")
