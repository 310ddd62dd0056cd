"""ChangeFeed: every index following a shared vault sees each change exactly once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from langchain_vaultsearch.vault.change_feed import ChangeFeed
from langchain_vaultsearch.vault.note_info import VaultChanges
from langchain_vaultsearch.vault.vault import Vault


def _paths(changes: VaultChanges) -> tuple[list[str], list[str]]:
    return sorted(info.path for info, _text in changes.updated), sorted(changes.removed)


def test_two_feeds_on_one_vault_each_get_every_change_once(
    vault_dir: Path, touch: Callable[[Path, str, int], None]
) -> None:
    vault = Vault(vault_dir, watch=False)
    first, second = ChangeFeed(vault), ChangeFeed(vault, with_text=False)
    everything = first.pull()
    assert len(everything.updated) == len(vault.notes) > 5
    assert all(text for _info, text in everything.updated)
    # The second feed did not refresh: the vault version moved without it.
    caught_up = second.pull()
    assert _paths(caught_up) == _paths(everything)
    assert all(text == "" for _info, text in caught_up.updated)

    touch(vault_dir / "Piano/Lesson 1.md", "# Lesson 1\n\nChopin today.\n", 10)
    (vault_dir / "Projects/Beta/Notes.md").unlink()
    assert _paths(second.pull()) == (["Piano/Lesson 1.md"], ["Projects/Beta/Notes.md"])
    changed = first.pull()
    assert _paths(changed) == (["Piano/Lesson 1.md"], ["Projects/Beta/Notes.md"])
    assert "Chopin" in changed.updated[0][1]
    assert not first.pull()
    assert not second.pull()
    assert set(first.applied) == set(second.applied) == set(vault.notes)


def test_start_from_saved_records_reports_only_what_differs(
    vault_dir: Path, touch: Callable[[Path, str, int], None]
) -> None:
    vault = Vault(vault_dir, watch=False)
    ChangeFeed(vault).pull()
    saved = list(vault.notes)
    touch(vault_dir / "C# Notes.md", "# C# Notes\n\nSpans and records.\n", 10)
    vault.refresh()  # another reader refreshed first
    feed = ChangeFeed(vault)
    assert not feed.started
    # What `load_index` passes: the notes whose record is still the saved one.
    changes = feed.start_from(path for path in saved if path != "C# Notes.md")
    assert feed.started
    assert _paths(changes) == (["C# Notes.md"], [])
    assert "Spans" in changes.updated[0][1]
    assert not feed.pull()
