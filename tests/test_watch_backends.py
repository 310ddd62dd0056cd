"""The watcher macOS and Windows run (watchfiles), exercised here on Linux, and the filesystems
no watcher is trusted on.

The watchfiles backend's exactness rests on its sync cookie: these tests put a backend that
delivers late, one that never delivers, one that fails, and one that spells paths its own way
in place of the real one, and check that a refresh still never misses an edit completed
before it.
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("watchfiles")

from watchfiles._rust_notify import RustNotify, WatchfilesRustInternalError

from langchain_vaultsearch import TieredLexicalRetriever, Vault
from langchain_vaultsearch.vault import portable_watcher
from langchain_vaultsearch.vault import watcher as watcher_module
from langchain_vaultsearch.vault.note_files import NoteFiles
from langchain_vaultsearch.vault.portable_watcher import COOKIE_FOLDER, WatchfilesWatcher
from langchain_vaultsearch.vault.watcher import (
    BACKEND_VARIABLE,
    parse_macos_mounts,
    parse_mountinfo,
    unwatchable_filesystem,
)
from tests.conftest import write_vault
from tests.test_watcher import NOTES, assert_stats_only_what_changed, count_stats, edit, summary

LAG = 0.15


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(BACKEND_VARIABLE, "watchfiles")
    return write_vault(tmp_path / "vault", dict(NOTES))


def use_notify(monkeypatch: pytest.MonkeyPatch, notify: Callable[..., object]) -> None:
    """Put a stand-in for watchfiles' `RustNotify` under every watcher started from now on."""
    monkeypatch.setattr(portable_watcher, "RustNotify", notify)


def watcher_of(vault: Vault) -> WatchfilesWatcher:
    assert isinstance(vault.watcher, WatchfilesWatcher)
    return vault.watcher


class LaggingNotify:
    """The real watch, each batch of its events handed over only `LAG` seconds after it came."""

    def __init__(self, paths: list[str], *args: bool | int) -> None:
        self._real = RustNotify(paths, *args)  # type: ignore[arg-type]
        self._arrived: deque[tuple[float, set[tuple[int, str]]]] = deque()
        self._closing = threading.Event()
        self._pump = threading.Thread(target=self._gather, daemon=True)
        self._pump.start()

    def _gather(self) -> None:
        while True:
            batch = self._real.watch(1, 1, 0, self._closing)
            if isinstance(batch, str):
                return
            self._arrived.append((time.monotonic(), batch))

    def watch(
        self, debounce_ms: int, step_ms: int, timeout_ms: int, stop_event: object
    ) -> set[tuple[int, str]] | str:
        while True:
            due: set[tuple[int, str]] = set()
            while self._arrived and self._arrived[0][0] + LAG <= time.monotonic():
                due |= self._arrived.popleft()[1]
            if due:
                return due
            if stop_event.is_set():  # type: ignore[attr-defined]
                return "stop"

    def close(self) -> None:
        self._closing.set()
        self._pump.join(timeout=5)
        self._real.close()


class SilentNotify:
    """A watch that died: nothing ever comes through."""

    def __init__(self, *args: object) -> None:
        pass

    def watch(self, debounce_ms: int, step_ms: int, timeout_ms: int, stop_event: object) -> str:
        while not stop_event.is_set():  # type: ignore[attr-defined]
            pass
        return "stop"

    def close(self) -> None:
        pass


def test_a_lagging_backend_never_shows_a_stale_note(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_notify(monkeypatch, LaggingNotify)
    vault = Vault(root)
    vault.refresh()
    calls = count_stats(monkeypatch)
    for text in ("first edit\n", "second, longer edit\n", "third\n"):
        (root / "Projects/Alpha/Plan.md").write_text(text, encoding="utf-8")
        calls.clear()
        start = time.monotonic()
        changes = vault.refresh()
        # Seen at once although its event came LAG later, and learned from that event:
        # only the edited note was stat-ed, so the refresh waited for the events, not walked.
        assert time.monotonic() - start >= LAG * 0.9
        assert [(info.path, body) for info, body in changes.updated] == [
            ("Projects/Alpha/Plan.md", text)
        ]
        assert calls == [str(root / "Projects/Alpha/Plan.md")]
    os.rename(root / "Inbox.md", root / "Daily/Inbox.md")
    assert summary(vault.refresh()) == ({"Daily/Inbox.md"}, {"Inbox.md"})
    (root / "Daily/2024-03-05.md").unlink()
    assert summary(vault.refresh()) == (set(), {"Daily/2024-03-05.md"})
    vault.close()


def test_a_query_through_a_lagging_backend_finds_the_words_just_saved(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_notify(monkeypatch, LaggingNotify)
    retriever = TieredLexicalRetriever(vault=Vault(root), k=5)
    assert retriever.invoke("loose ends")
    (root / "Inbox.md").write_text("# Inbox\n\nquokka sightings\n", encoding="utf-8")
    found = retriever.invoke("quokka")
    assert [doc.metadata["path"] for doc in found] == ["Inbox.md"]
    assert "quokka sightings" in found[0].page_content


def test_an_unchanged_query_stats_no_note(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    retriever = TieredLexicalRetriever(vault=Vault(root), k=5)
    retriever.invoke("ship alpha")
    retriever.invoke("tomatoes")
    calls = count_stats(monkeypatch)
    assert retriever.invoke("ship alpha")
    assert calls == []


def test_a_watch_that_died_is_noticed_and_the_vault_walked(
    root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(portable_watcher, "SYNC_TIMEOUT", 0.2)
    use_notify(monkeypatch, SilentNotify)
    vault = Vault(root)
    vault.refresh()
    edit(root / "Inbox.md", "edited while the watch was dead\n")
    start = time.monotonic()
    with caplog.at_level(logging.DEBUG, logger=portable_watcher.__name__):
        assert summary(vault.refresh()) == ({"Inbox.md"}, set())
    assert 0.2 <= time.monotonic() - start < 5
    assert "No sync cookie" in caplog.text
    assert vault.watching


@pytest.mark.parametrize(
    "failure",
    [WatchfilesRustInternalError("error in underlying watcher"), RuntimeError("closed")],
)
def test_an_error_in_the_watch_walks_the_vault_with_a_new_watch(
    root: Path, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    vault = Vault(root)
    vault.refresh()
    first = watcher_of(vault)
    assert first._notify is not None
    fails = [True]
    real_watch = first._notify.watch

    class Failing:
        def watch(self, *args: object) -> object:
            if fails.pop():
                raise failure
            return real_watch(*args)  # type: ignore[arg-type]

        def close(self) -> None:
            pass

    first._notify = Failing()  # type: ignore[assignment]
    edit(root / "Daily/2024-03-05.md", "edited before the error\n")
    assert summary(vault.refresh()) == ({"Daily/2024-03-05.md"}, set())
    assert watcher_of(vault) is not first
    edit(root / "Inbox.md", "edited after\n")
    assert summary(vault.refresh()) == ({"Inbox.md"}, set())


def test_ctrl_c_during_the_wait_interrupts_and_the_next_refresh_walks(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Interrupted(SilentNotify):
        """watchfiles' answer when SIGINT comes during a wait on the main thread."""

        def watch(self, *args: object) -> str:
            return "signal"

    vault = Vault(root)
    vault.refresh()
    watcher_of(vault)._notify = Interrupted()  # type: ignore[assignment]
    edit(root / "Inbox.md", "edited, then Ctrl-C\n")
    with pytest.raises(KeyboardInterrupt):
        vault.refresh()
    # watchfiles dropped what it held when the signal came: the vault walks.
    assert summary(vault.refresh()) == ({"Inbox.md"}, set())
    assert not vault.refresh()


def test_a_burst_over_the_limit_walks_and_a_smaller_one_does_not(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(portable_watcher, "BURST", 20)
    vault = Vault(root)
    vault.refresh()
    small = {f"Daily/{n}.md": f"small {n}\n" for n in range(15)}
    write_vault(root, small)
    calls = count_stats(monkeypatch, ("stat",))
    assert summary(vault.refresh()) == (set(small), set())
    assert not {call for call in calls if call.endswith(".md")} - {str(root / p) for p in small}
    large = {f"Projects/Beta/{n}.md": f"large {n}\n" for n in range(30)}
    write_vault(root, large)
    first = watcher_of(vault)
    calls.clear()
    assert summary(vault.refresh()) == (set(large), set())
    assert str(root / "Inbox.md") in calls  # walked: a new watcher, every note stat-ed
    assert watcher_of(vault) is not first


def test_no_cookie_no_watch_the_vault_walks(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault = Vault(root)
    vault.refresh()

    def refused(**kwargs: object) -> tuple[int, str]:
        raise PermissionError("read-only vault")

    monkeypatch.setattr(portable_watcher.tempfile, "mkstemp", refused)
    edit(root / "Inbox.md", "edited on a read-only mount\n")
    assert summary(vault.refresh()) == ({"Inbox.md"}, set())


@pytest.mark.parametrize("make", ["file", "symlink"])
def test_a_vaultsearch_that_is_not_our_folder_is_not_used(
    root: Path, monkeypatch: pytest.MonkeyPatch, make: str, tmp_path: Path
) -> None:
    if make == "file":
        (root / COOKIE_FOLDER).write_text("not a folder\n", encoding="utf-8")
    else:
        (tmp_path / "elsewhere").mkdir()
        os.symlink(tmp_path / "elsewhere", root / COOKIE_FOLDER)
    vault = Vault(root)
    vault.refresh()
    assert watcher_of(vault)._notify is None
    calls = count_stats(monkeypatch, ("stat",))
    assert not vault.refresh()
    assert str(root / "Inbox.md") in calls  # unwatched: checked by stat-ing
    if make == "symlink":
        assert not list((tmp_path / "elsewhere").iterdir())
    edit(root / "Inbox.md", "still seen\n")
    assert summary(vault.refresh()) == ({"Inbox.md"}, set())


def test_a_notify_that_can_only_poll_is_not_trusted(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[bool] = []

    class Polling:
        def __init__(self, *args: object) -> None:
            pass

        def __repr__(self) -> str:
            return "RustNotify(Poll(PollWatcher { .. }))"

        def close(self) -> None:
            closed.append(True)

    use_notify(monkeypatch, Polling)
    vault = Vault(root)
    vault.refresh()
    assert watcher_of(vault)._notify is None
    assert closed == [True]
    edit(root / "Inbox.md", "seen by stat-ing\n")
    assert summary(vault.refresh()) == ({"Inbox.md"}, set())


def test_events_spelled_differently_are_mapped_to_the_vault_s_paths(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on macOS, where notify reports the folder's real case whatever case was typed."""

    class Respelled:
        def __init__(self, paths: list[str], *args: bool | int) -> None:
            self._real = RustNotify(paths, *args)  # type: ignore[arg-type]
            self._root = paths[0]

        def watch(self, *args: object) -> object:
            batch = self._real.watch(*args)  # type: ignore[arg-type]
            if isinstance(batch, str):
                return batch
            return {(c, "/SPELLED/Vault" + p[len(self._root) :]) for c, p in batch}

        def close(self) -> None:
            self._real.close()

    use_notify(monkeypatch, Respelled)
    vault = Vault(root)
    vault.refresh()
    assert_stats_only_what_changed(vault, root, monkeypatch)
    vault.close()


def test_the_editor_s_own_files_cost_nothing(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Obsidian saves `.obsidian/workspace.json` constantly; attachments come and go."""
    vault = Vault(root)
    vault.refresh()
    write_vault(root, {".obsidian/workspace.json": "{}", "Projects/Alpha/diagram.png": "png"})
    vault.refresh()  # the new attachment changes its folder's listing
    for n in range(3):
        write_vault(root, {".obsidian/workspace.json": "{" * n, "Projects/Alpha/diagram.png": "p"})
        with monkeypatch.context() as patch:
            calls = count_stats(patch)
            assert not vault.refresh()
        assert calls == []


def test_cookies_do_not_pile_up_and_one_a_scanner_held_is_removed_later(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = Vault(root)
    files = NoteFiles(vault)
    real_unlink = os.unlink
    held = [True]

    def unlink(path: str, **kwargs: object) -> None:
        if held and os.path.basename(path).startswith(portable_watcher.COOKIE_PREFIX):
            held.pop()
            raise PermissionError("in use by another process")
        real_unlink(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(portable_watcher.os, "unlink", unlink)
    for _ in range(20):
        vault.refresh()
        files.listing()
    assert not held
    assert list((root / COOKIE_FOLDER).iterdir()) == []


def test_a_vault_folder_deleted_and_recreated_is_watched_again(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = Vault(root)
    vault.refresh()
    shutil.rmtree(root)
    assert len(vault.refresh().removed) == 5
    write_vault(root, {"Back.md": "back again\n"})
    assert summary(vault.refresh()) == ({"Back.md"}, set())
    calls = count_stats(monkeypatch)
    assert not vault.refresh()
    assert calls == []  # watched again, not polled
    edit(root / "Back.md", "and edited\n")
    assert summary(vault.refresh()) == ({"Back.md"}, set())


def notify_threads() -> int:
    """notify's threads in this process; a thread ending while they are read counts as gone."""
    count = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            count += (task / "comm").read_text().startswith("notify-rs")
        except OSError:
            continue
    return count


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="Linux only")
def test_the_watch_s_thread_ends_when_the_vault_is_collected(root: Path) -> None:
    # Watches other tests let go end in their own time: count once none is ending.
    gc.collect()
    deadline = time.monotonic() + 5
    counts = [notify_threads()]
    while len(set(counts[-20:])) > 1 or len(counts) < 20:
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
        counts.append(notify_threads())
    before = notify_threads()
    vault = Vault(root)
    vault.refresh()
    assert notify_threads() == before + 1
    del vault
    gc.collect()
    deadline = time.monotonic() + 5
    while notify_threads() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert notify_threads() == before


MOUNTINFO = r"""22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 8:1 / / rw,relatime - ext4 /dev/vda1 rw
40 27 0:50 / /home/me/Shared\040Notes rw - nfs4 nas:/notes rw,vers=4.2
41 27 0:51 / /home/me/remote rw,nosuid - fuse.sshfs me@box:/notes rw
42 27 8:17 / /media/usb rw - fuseblk /dev/sdb1 rw
43 27 0:52 / /mnt/c rw - 9p drvfs rw
44 40 0:53 / /home/me/Shared\040Notes/local rw - tmpfs tmpfs rw
45 27 0:54 / /home/me/remote rw - ext4 /dev/vdb rw
"""

MACOS_MOUNT = """/dev/disk3s1s1 on / (apfs, sealed, local, read-only, journaled)
/dev/disk3s5 on /System/Volumes/Data (apfs, local, journaled, nobrowse, protect)
//me@nas._smb._tcp.local/Notes on /Volumes/Notes (smbfs, nodev, nosuid, mounted by me)
gdrive@macfuse0 on /Volumes/GoogleDrive (macfuse, nodev, nosuid, synchronous, mounted by me)
nas:/export on /Volumes/export (nfs, asynchronous)
"""


def remote_at(mounts: list[tuple[str, str, bool]], path: str) -> str | None:
    mount = watcher_module._mount_of(path, mounts)
    assert mount is not None
    return mount[1] if mount[2] else None


def test_network_and_fuse_mounts_are_found_in_mountinfo() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    assert remote_at(mounts, "/home/me/notes") is None
    assert remote_at(mounts, "/home/me/Shared Notes/Vault") == "nfs4"
    assert remote_at(mounts, "/home/me/Shared Notes/local/Vault") is None  # mounted inside
    assert remote_at(mounts, "/home/me/Shared Notes2") is None  # a sibling, not inside
    assert remote_at(mounts, "/home/me/remote/Vault") is None  # the later mount on top wins
    assert remote_at(mounts, "/media/usb/Vault") is None  # a local disk through FUSE
    assert remote_at(mounts, "/mnt/c/Users/me/Vault") == "9p"  # WSL2's Windows drive


def test_network_and_fuse_mounts_are_found_in_macos_mount_output() -> None:
    mounts = parse_macos_mounts(MACOS_MOUNT)
    assert remote_at(mounts, "/Users/me/Notes") is None
    assert remote_at(mounts, "/Volumes/Notes/Vault") == "smbfs"
    assert remote_at(mounts, "/Volumes/GoogleDrive/My Drive/Vault") == "macfuse"
    assert remote_at(mounts, "/Volumes/export") == "nfs"


@pytest.mark.skipif(not os.path.exists("/proc/self/mountinfo"), reason="Linux only")
def test_a_local_vault_is_on_a_watchable_filesystem(root: Path) -> None:
    assert unwatchable_filesystem(str(root)) is None


def test_a_vault_on_a_network_filesystem_is_stat_ed_with_one_log_line(
    root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    table = tmp_path / "mountinfo"
    point = str(root).replace(" ", "\\040")
    table.write_text(
        f"27 1 8:1 / / rw - ext4 /dev/vda1 rw\n40 27 0:50 / {point} rw - cifs //nas/notes rw\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(watcher_module, "_MOUNTINFO", str(table))
    monkeypatch.setattr(watcher_module.sys, "platform", "linux")
    with caplog.at_level(logging.INFO, logger=watcher_module.__name__):
        vaults = [Vault(root), Vault(root)]
        files = NoteFiles(vaults[0])
    assert not any(vault.watching for vault in vaults)
    assert caplog.text.count("is on a cifs filesystem") == 1
    assert len(vaults[0].refresh().updated) == 5
    edit(root / "Inbox.md", "edited on the server\n")
    assert summary(vaults[0].refresh()) == ({"Inbox.md"}, set())
    assert files.listing()[1] == vaults[0].list_files()
