"""LexicalIndex: the recall index of one vault through its life, apart from any query.

Opening (from the saved file in `<vault>/.vaultsearch/` when there is one), catching up
with the vault through its `ChangeFeed`, building a large vault's first index in a child
process while searches scan the notes' text, saving, and handing over from the scan to
the built index: all of it is here, so the query pipeline (`SearchCore`) only asks for
candidates, notes and vocabulary, and never sees which of the two recall paths answers.

When to save, when to build in the background and when to freeze the collector are an
`IndexPolicy`, not module constants, so a benchmark or a test says what it wants without
patching the module.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from langchain_vaultsearch.safe_archive import MappedArchive
from langchain_vaultsearch.search.index_cache import (
    index_path,
    load_index,
    remove_kept_shards,
    remove_stale_temporaries,
    save_index,
)
from langchain_vaultsearch.search.index_worker import IndexBuildError, build_index_file
from langchain_vaultsearch.search.memory_budget import MemoryBudget, ResidentPages
from langchain_vaultsearch.search.recall import RecallIndex
from langchain_vaultsearch.search.scan_recall import ScanRecall
from langchain_vaultsearch.search.vault_documents import apply_changes
from langchain_vaultsearch.vault.change_feed import ChangeFeed
from langchain_vaultsearch.vault.note_files import Listing, NoteFiles
from langchain_vaultsearch.vault.note_info import NoteInfo, VaultChanges
from langchain_vaultsearch.vault.vault import Vault

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexPolicy:
    """When the lexical index is saved, built in the background, and frozen.

    Attributes:
        persist: keep the index in `<vault>/.vaultsearch/` so a new process starts from it.
        persist_min_notes: vaults this large are worth saving; smaller ones index in well
            under a second.
        save_after_notes: notes read since the last save that make saving again worthwhile.
        freeze_after_notes: builds at least this large freeze their objects out of the
            garbage collector's scans (see `_freeze_long_lived_objects`).
        background_build_notes: a first index of at least this many notes is built in a
            child process while searches scan (1,000 notes take ~1.4 s in the foreground).
            0 never builds in the background.
        build_in_background: False leaves such a vault scanning for good: nothing builds
            its index (how the benchmarks measure the searches made before one exists).
        build_processes: worker processes of a background build (`parallel_build`);
            None uses every core the process may run on.
    """

    persist: bool = True
    persist_min_notes: int = 500
    save_after_notes: int = 200
    freeze_after_notes: int = 1000
    background_build_notes: int = 1000
    build_in_background: bool = True
    build_processes: int | None = None

    def __post_init__(self) -> None:
        counts = (
            self.persist_min_notes,
            self.save_after_notes,
            self.freeze_after_notes,
            self.background_build_notes,
        )
        if min(counts) < 0 or (self.build_processes is not None and self.build_processes < 1):
            msg = f"IndexPolicy counts must not be negative (build_processes >= 1), got {self}"
            raise ValueError(msg)


class LexicalIndex:
    """The recall index of one vault, kept current and persisted; thread-safe."""

    def __init__(
        self,
        vault: Vault,
        policy: IndexPolicy | None = None,
        budget: MemoryBudget | None = None,
    ) -> None:
        """Follow a vault; nothing is read until the first `sync`.

        Args:
            vault: the notes; may be shared with other indexes and retrievers.
            policy: when to save, build in the background and freeze.
            budget: the memory the scan's text and the saved index's pages may take.
        """
        self.vault = vault
        self.policy = policy or IndexPolicy()
        self.budget = budget or MemoryBudget.from_mb()
        # The saved index this index reads from, and how much of it is resident.
        self._pages: MappedArchive | None = None
        self._resident = ResidentPages(self.budget.mapped_bytes)
        self.recall = RecallIndex()
        self.feed = ChangeFeed(vault)
        self._unsaved_notes = 0
        self.lock = threading.Lock()
        """Held while the index changes; recall under it sees one consistent index."""
        # Set while the first index is built in the background: what searches recall from.
        self._scan: ScanRecall | None = None
        self._builder: threading.Thread | None = None

    @property
    def index_ready(self) -> bool:
        """False while searches scan because the first index is still being built."""
        return self._scan is None

    def sync(self) -> None:
        """Pick up notes added, changed or removed since the last query."""
        with self.lock:
            builder = self._builder
            if self._scan is not None and (builder is None or builder.is_alive()):
                # The build's own index file may be there already: the builder loads it.
                self._scan.refresh()
                return
            if not self.feed.started:
                remove_stale_temporaries(self.vault)
                if self.policy.persist and self._restore():
                    remove_kept_shards(self.vault)
            to_scan = self._files_to_scan()
            if to_scan is not None:
                # The build starts first: its processes yield to this one (`index_worker`),
                # so the scan's first search takes what it did alone while they index with
                # the other core, instead of starting once that search is done.
                self._start_builder()
                files, listed = to_scan
                self._scan = ScanRecall(self.vault, files, self.budget.scan_text_bytes, listed)
                return
            changes = self.feed.pull()
            self._apply(changes)
            # A failed build leaves its scan to the searches in flight until the index is in.
            self._scan = None
            if self._should_save():
                save_index(self.vault, self.recall, expected_version=self.feed.version)
                self._unsaved_notes = 0
            if len(changes.updated) >= self.policy.freeze_after_notes:
                _freeze_long_lived_objects()

    def _files_to_scan(self) -> tuple[NoteFiles, Listing] | None:
        """A never-indexed large vault's files, as just listed: scanned until the build is in.

        Also while the build runs without a scan (making the scan failed, e.g. interrupted):
        indexing here meanwhile would index the vault twice.
        """
        threshold = self.policy.background_build_notes
        builder = self._builder
        if (
            threshold <= 0
            or self.feed.started
            or (builder is not None and not builder.is_alive())
            or self.vault.notes
        ):
            return None
        files = NoteFiles(self.vault)
        listed = files.listing()
        return (files, listed) if len(listed[1]) >= threshold else None

    def _restore(self, path: Path | None = None, *, built_here: bool = False) -> bool:
        """Load a saved index (lock held); False when there is none to load.

        When the vault was refreshed by another reader first, the notes the index is not
        current for are indexed again here.
        """
        loaded = load_index(
            self.vault, path, self.budget.decoded_records_bytes, built_here=built_here
        )
        if loaded is None:
            return False
        self.recall, self._pages = loaded.recall, loaded.pages
        self._resident.reset()
        self._apply(self.feed.start_from(loaded.current, as_of=loaded.as_of))
        if len(loaded.current) >= self.policy.freeze_after_notes:
            _freeze_long_lived_objects()
        return True

    def _apply(self, changes: VaultChanges) -> None:
        """Bring the index in line with a change set the feed returned (lock held)."""
        apply_changes(self.recall, changes)
        self._unsaved_notes += len(changes.updated)

    def _start_builder(self) -> None:
        """Start the build's thread unless it ran or the policy says not to (lock held)."""
        if self._builder is not None or not self.policy.build_in_background:
            return
        # A daemon: a short script exits when it is done instead of waiting for it.
        self._builder = threading.Thread(target=self._build, name="vaultsearch-index", daemon=True)
        self._builder.start()

    def _build(self) -> None:
        """Index every note in a child process, then switch searches from scanning to it.

        The child saves the index where a restart would find it (or in a temporary file
        when the index is not persisted), and this process loads it as a restart would,
        its vault adopting the note records the child read. The next sync refreshes the
        vault against those records, so notes edited while the child ran are read again.
        The scan's text is dropped before the index is loaded, as holding both was the
        process's peak memory; searches wait for the lock (syncing, recalling, and
        looking up a note the vault does not know yet) until the index is in place.
        """
        target = index_path(self.vault) if self.policy.persist else None
        written: Path | None = None
        try:
            written = build_index_file(self.vault, target, self.policy.build_processes)
            with self.lock:
                self._scan = None
                if not self._restore(written, built_here=True):
                    msg = f"the index written to {written} could not be loaded"
                    raise IndexBuildError(msg)
                self._unsaved_notes = 0 if written == target else len(self.feed.applied)
                self.vault.folder_sizes()  # builds the link graph here, not in a search
        except Exception as exc:
            # Searches scan until this thread ends; the next sync after that indexes.
            message = "Indexing %s failed; the next search indexes it"
            if isinstance(exc, IndexBuildError):
                logger.warning(message + ": %s", self.vault.root, exc)
            else:
                logger.exception(message, self.vault.root)
        finally:
            if written is not None and written != target:
                written.unlink(missing_ok=True)

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Index the vault now, or wait for the background build to finish.

        Args:
            timeout: seconds to wait at most; None waits until the index is ready.

        Returns:
            True when searches use the index, False when the timeout came first.
        """
        self.sync()
        builder = self._builder
        if builder is not None:
            builder.join(timeout)
            self.sync()  # after a failed build, this indexes the vault
        return self.index_ready

    def save(self) -> Path | None:
        """Save the index now, whatever the vault's size (`vaultsearch index` does).

        Returns:
            The file written, or None when it could not be (the reason is logged).
        """
        with self.lock:
            if not save_index(self.vault, self.recall, expected_version=self.feed.version):
                return None
            self._unsaved_notes = 0
            return index_path(self.vault)

    def _should_save(self) -> bool:
        return (
            self.policy.persist
            and self._unsaved_notes >= self.policy.save_after_notes
            and self.recall.size >= self.policy.persist_min_notes
        )

    def candidates(self, terms: list[str], limit: int) -> list[str]:
        """Recalled note paths, best first, from the index or, while it builds, a scan.

        The caller holds `lock`, so several recalls of one query see one index.
        """
        scan = self._scan
        if scan is None:
            found = [path for path, _score in self.recall.candidates(terms, limit)]
            self.trim_pages()
            return found
        if not (self.vault.inclusions or self.vault.exclusions):
            return [path for path, _score in scan.candidates(terms, limit)]
        # Rules on tags or properties need the note parsed: check the best ones only.
        found = []
        for path, _score in scan.candidates(terms, 2 * limit):
            info = scan.note(path)
            if info is not None and info.searchable:
                found.append(path)
                if len(found) == limit:
                    break
        return found

    def term_rarity(self, terms: list[str]) -> dict[str, float] | None:
        """Each index term's IDF over the vault's notes (0: no note holds it).

        None while the first index builds (searches scan): rarity is then unknown.
        """
        if self._scan is not None:
            return None
        with self.lock:
            return self.recall.inverse_document_frequencies(terms)

    def trim_pages(self) -> None:
        """Let go of the saved index's pages once more than their share are resident.

        Checked after recall and after ranking (the caller holds `lock`): ranking reads
        the candidates' records, tags and links, 30-140 MB of help x16's index a query,
        which stayed resident until the next query's recall and made the search
        process's peak (518 MB, over a 512 MB budget).
        """
        if self._pages is not None and self._resident.over_limit():
            self._pages.release_pages()
            self._resident.reset()

    def recall_fallback(self, query: str, limit: int) -> list[tuple[str, float]]:
        """Notes for a query by recall alone, for when ranking failed."""
        return (self._scan or self.recall).candidates([query], limit)

    def note(self, path: str) -> NoteInfo | None:
        """A note's record, also while searches scan (the vault has not read it yet then)."""
        info = self.vault.get(path)
        if info is not None:
            return info
        # While the built index is handed over there is neither a scan nor the records:
        # the lock waits for the handover to end.
        with self.lock:
            info = self.vault.get(path)
            scan = self._scan
        if info is None and scan is not None:
            info = scan.note(path)  # parsed outside the lock: other searches go on
        return info

    def folder_sizes(self) -> Counter[str]:
        """Notes per folder, from the vault's records or, while scanning, the file list."""
        scan = self._scan
        return self.vault.folder_sizes() if scan is None else scan.folder_sizes()

    @property
    def has_links(self) -> bool:
        """Whether every note's links are known (not while scanning): the graph boost needs it."""
        return self._scan is None


def _freeze_long_lived_objects() -> None:
    """Keep the collector from re-scanning a freshly built index on every gen-2 pass.

    A 6,000-note vault leaves ~660,000 tracked objects (note records, headings, chunk
    terms). Without this, gen-2 collections landing inside queries took warm p95 from
    75 ms to 316 ms (measured). `gc.freeze` is process-wide: garbage is collected first so
    nothing already unreachable is frozen, and it runs only after large builds.
    """
    gc.collect()
    gc.freeze()
