"""The vault: the only code that touches the notes' files.

Public: `Vault` and the records it gives (`NoteInfo` with its `ParsedNote`, `Heading`s and
`Link`s, `VaultChanges`, `LinkGraph`, `TagCatalog`), and the two parts the lexical index hands it
(`SavedNotes`, a saved index's note records, and `FolderWatcher` with its `FolderChanges`,
the folder watches that keep a refresh from statting every note).
"""

from langchain_vaultsearch.vault.link_graph import LinkGraph
from langchain_vaultsearch.vault.markdown import Heading, Link, ParsedNote
from langchain_vaultsearch.vault.note_info import NoteInfo, VaultChanges
from langchain_vaultsearch.vault.saved_notes import SavedNotes
from langchain_vaultsearch.vault.tag_catalog import TagCatalog
from langchain_vaultsearch.vault.vault import Vault
from langchain_vaultsearch.vault.watcher import FolderChanges, FolderWatcher

__all__ = [
    "FolderChanges",
    "FolderWatcher",
    "Heading",
    "Link",
    "LinkGraph",
    "NoteInfo",
    "ParsedNote",
    "SavedNotes",
    "TagCatalog",
    "Vault",
    "VaultChanges",
]
