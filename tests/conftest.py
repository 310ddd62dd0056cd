"""Shared fixtures: a real vault shape written to a temporary folder."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from langchain_vaultsearch.vault import note_reader, note_store
from langchain_vaultsearch.vault.markdown import ParsedNote

SAMPLE_VAULT = Path(__file__).resolve().parents[1] / "examples" / "sample-vault"

NOTES = {
    "Projects/Alpha/Deployment.md": (
        "---\ntags: [project/alpha, ops]\nstatus: active\n---\n# Deployment\n\n"
        "We deploy #project/alpha to Vercel after the OAuth fix.\n\n"
        "## Rollback\n\nRevert the release.\n"
    ),
    "Projects/Alpha/OAuth Setup.md": (
        "---\naliases: [Login Guide]\nauthor: Alice Example\n---\n# OAuth in Next.js\n\n"
        "Configure the OAuth provider and the callback URL. Links: [[Deployment]].\n"
    ),
    "Projects/Beta/Notes.md": "# Beta\n\nNothing about login here, only gardening and tomatoes.\n",
    "Piano/Lesson 1.md": "# Lesson 1\n\nScales and arpeggios. #music/piano\n",
    "Daily/2024-03-05.md": "Met Sarah about [[OAuth Setup]] and [[Deployment]]. #meeting\n",
    "学习笔记.md": "# 学习笔记\n\n我的学习笔记：Git分支管理和复习方法。\n",
    "Crlf.md": "# Windows note\r\n\r\nThis note uses carriage returns and mentions zeppelin.\r\n",
    "Broken.md": (
        "---\ntitle: Broken: colon: here\n  bad: indent\n---\n"
        "The broken frontmatter note mentions xylophone.\n"
    ),
    "C# Notes.md": "# C# Notes\n\nLINQ queries and async streams in dotnet.\n",
    ".obsidian/workspace.md": "OAuth hidden config note\n",
    ".trash/Old OAuth.md": "# Old OAuth\n\nDeleted OAuth note.\n",
}


def write_vault(root: Path, notes: Mapping[str, str | bytes]) -> Path:
    """Write notes (text or raw bytes) under root and return root."""
    for rel, content in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    return root


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", dict(NOTES))


@pytest.fixture
def touch() -> Callable[[Path, str, int], None]:
    """Rewrite a note with an explicit, later mtime (no sleeping for clock ticks)."""

    def _touch(path: Path, text: str, offset_s: int = 10) -> None:
        previous = path.stat().st_mtime_ns if path.exists() else 0
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        stamp = max(previous, path.stat().st_mtime_ns) + offset_s * 1_000_000_000
        os.utime(path, ns=(stamp, stamp))

    return _touch


@pytest.fixture
def count_reads(monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """Count notes the vault reads and parses from disk."""
    reads = [0]
    original = note_reader.parse_note

    def counting(text: str) -> ParsedNote:
        reads[0] += 1
        return original(text)

    # Both read notes: a refresh (`NoteReader.load`), and a check of an adopted record.
    monkeypatch.setattr(note_reader, "parse_note", counting)
    monkeypatch.setattr(note_store, "parse_note", counting)
    return lambda: reads[0]
