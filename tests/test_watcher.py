"""The folder watchers: refreshes stay exact and skip the disk when nothing changed.

Every freshness test runs once per backend this machine can run (inotify and watchfiles on
Linux), chosen as a user would, with `VAULTSEARCH_WATCHER`.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import logging
import os
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from langchain_vaultsearch import Vault
from langchain_vaultsearch.vault import note_reader
from langchain_vaultsearch.vault import watcher as watcher_module
from langchain_vaultsearch.vault.note_files import NoteFiles
from langchain_vaultsearch.vault.note_info import VaultChanges
from langchain_vaultsearch.vault.watcher import (
    BACKEND_VARIABLE,
    BACKENDS,
    IN_Q_OVERFLOW,
    FolderWatcher,
    InotifyWatcher,
)
from tests.conftest import write_vault


def runs_here(backend: str) -> bool:
    try:
        if backend == "inotify":
            InotifyWatcher().close()
        else:
            import watchfiles  # noqa: F401
    except (OSError, ImportError):
        return False
    return True


HERE = [backend for backend in BACKENDS if runs_here(backend)]
needs_inotify = pytest.mark.skipif("inotify" not in HERE, reason="inotify is unavailable here")


@pytest.fixture
def inotify(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inotify backend, whatever the environment asks for."""
    monkeypatch.setenv(BACKEND_VARIABLE, "inotify")


def inotify_watcher(vault: Vault) -> InotifyWatcher:
    assert isinstance(vault.watcher, InotifyWatcher)
    return vault.watcher


NOTES = {
    "Inbox.md": "# Inbox\n\nloose ends\n",
    "Projects/Alpha/Plan.md": "# Plan\n\nship alpha\n",
    "Projects/Alpha/Deep/Detail.md": "# Detail\n\nthe fine print\n",
    "Projects/Beta/Notes.md": "# Beta\n\ntomatoes\n",
    "Daily/2024-03-05.md": "met Sarah\n",
    ".hidden/real/Secret.md": "hidden secret\n",
}


def later(path: Path, seconds: int = 10) -> None:
    """Push a file's mtime forward, as a later save would (no sleeping for clock ticks)."""
    stamp = path.stat().st_mtime_ns + seconds * 1_000_000_000
    os.utime(path, ns=(stamp, stamp))


def edit(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    later(path)


def atomic_save(path: Path, text: str) -> None:
    """What many editors do: write a temporary file, then rename it over the note."""
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text, encoding="utf-8")
    later(temp)
    os.replace(temp, path)


def rewrite_burst(root: Path) -> None:
    for path in BURST:
        edit(root / path, "rewritten in the burst\n")


def add_nested_folder(root: Path) -> None:
    write_vault(root, {"Areas/Health/Sleep/Log.md": "slept well\n", "Areas/Health/Run.md": "5k\n"})


def replace_folder(root: Path) -> None:
    shutil.rmtree(root / "Projects/Beta")
    write_vault(root, {"Projects/Beta/Fresh.md": "a different beta\n"})


def move_folder_out_and_back(root: Path) -> None:
    outside = root.parent / "outside"
    shutil.move(root / "Projects", outside)
    write_vault(outside, {"Elsewhere.md": "written while outside\n"})
    shutil.move(outside, root / "Work")


def link_note(root: Path) -> None:
    os.symlink(root / "Projects/Alpha/Plan.md", root / "Plan link.md")


def link_hidden_folder(root: Path) -> None:
    os.symlink(root / ".hidden/real", root / "Linked")


def retarget_link(root: Path) -> None:
    write_vault(
        root, {".hidden/other/Other.md": "other target\n", ".hidden/other/Sub/Deeper.md": "x\n"}
    )
    os.symlink(root / ".hidden/other", root / "Linked.new")
    os.replace(root / "Linked.new", root / "Linked")


@dataclass(frozen=True)
class Step:
    """One change to the vault and what the next refresh must report."""

    change: Callable[[Path], object]
    updated: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Scenario:
    steps: tuple[Step, ...]
    options: dict[str, object] = field(default_factory=dict)


ALPHA = {"Projects/Alpha/Plan.md", "Projects/Alpha/Deep/Detail.md"}
BURST = {f"Burst/{n % 10}/Note {n}.md": f"note {n} of a burst\n" for n in range(1000)}
PROJECTS = {*ALPHA, "Projects/Beta/Notes.md"}

SCENARIOS = {
    "nothing": Scenario((Step(lambda root: None),)),
    "edit": Scenario((Step(lambda r: edit(r / "Inbox.md", "rewritten inbox\n"), {"Inbox.md"}),)),
    "edit-in-deep-folder": Scenario(
        (
            Step(
                lambda r: edit(r / "Projects/Alpha/Deep/Detail.md", "x"),
                {"Projects/Alpha/Deep/Detail.md"},
            ),
        )
    ),
    "add": Scenario(
        (
            Step(
                lambda r: write_vault(r, {"Daily/2024-03-06.md": "new day\n"}),
                {"Daily/2024-03-06.md"},
            ),
        )
    ),
    "delete": Scenario((Step(lambda r: (r / "Inbox.md").unlink(), removed={"Inbox.md"}),)),
    "rename-file": Scenario(
        (
            Step(
                lambda r: os.rename(r / "Inbox.md", r / "Outbox.md"),
                {"Outbox.md"},
                {"Inbox.md"},
            ),
        )
    ),
    "move-between-folders": Scenario(
        (
            Step(
                lambda r: os.rename(r / "Projects/Beta/Notes.md", r / "Daily/Notes.md"),
                {"Daily/Notes.md"},
                {"Projects/Beta/Notes.md"},
            ),
        )
    ),
    "rename-folder": Scenario(
        (
            Step(
                lambda r: os.rename(r / "Projects", r / "Work"),
                {p.replace("Projects/", "Work/", 1) for p in PROJECTS},
                PROJECTS,
            ),
        )
    ),
    "move-folder-into-another": Scenario(
        (
            Step(
                lambda r: os.rename(r / "Projects/Alpha", r / "Daily/Alpha"),
                {p.replace("Projects/", "Daily/", 1) for p in ALPHA},
                ALPHA,
            ),
        )
    ),
    "new-nested-folder": Scenario(
        (Step(add_nested_folder, {"Areas/Health/Sleep/Log.md", "Areas/Health/Run.md"}),)
    ),
    "delete-folder": Scenario((Step(lambda r: shutil.rmtree(r / "Projects"), removed=PROJECTS),)),
    "replace-folder": Scenario(
        (Step(replace_folder, {"Projects/Beta/Fresh.md"}, {"Projects/Beta/Notes.md"}),)
    ),
    "move-folder-to-trash": Scenario(
        (Step(lambda r: os.rename(r / "Projects", r / ".hidden/Projects"), removed=PROJECTS),)
    ),
    "move-folder-out-and-back": Scenario(
        (
            Step(
                move_folder_out_and_back,
                {p.replace("Projects/", "Work/", 1) for p in PROJECTS} | {"Work/Elsewhere.md"},
                PROJECTS,
            ),
        )
    ),
    "vault-folder-deleted-and-recreated": Scenario(
        (
            Step(shutil.rmtree, removed={p for p in NOTES if not p.startswith(".")}),
            Step(lambda r: None),
            Step(lambda r: write_vault(r, {"Back.md": "back again\n"}), {"Back.md"}),
        )
    ),
    "atomic-save": Scenario(
        (Step(lambda r: atomic_save(r / "Inbox.md", "saved atomically\n"), {"Inbox.md"}),)
    ),
    "touch-without-change": Scenario((Step(lambda r: later(r / "Inbox.md"), {"Inbox.md"}),)),
    "chmod-without-change": Scenario((Step(lambda r: (r / "Inbox.md").chmod(0o600)),)),
    "edit-then-edit-again": Scenario(
        (
            Step(lambda r: edit(r / "Inbox.md", "first\n"), {"Inbox.md"}),
            Step(lambda r: None),
            Step(lambda r: edit(r / "Inbox.md", "second edit\n"), {"Inbox.md"}),
        )
    ),
    "grow-over-the-limit-and-back": Scenario(
        (
            Step(lambda r: edit(r / "Inbox.md", "x" * 500), removed={"Inbox.md"}),
            Step(lambda r: later(r / "Inbox.md")),
            Step(lambda r: edit(r / "Inbox.md", "small again\n"), {"Inbox.md"}),
        ),
        {"max_note_bytes": 100},
    ),
    "hidden-folder-ignored": Scenario(
        (Step(lambda r: edit(r / ".hidden/real/Secret.md", "still hidden\n")),)
    ),
    "hidden-folder-included": Scenario(
        (
            Step(
                lambda r: edit(r / ".hidden/real/Secret.md", "shown\n"),
                {".hidden/real/Secret.md"},
            ),
        ),
        {"include_hidden": True},
    ),
    "symlinked-note": Scenario(
        (
            Step(link_note, {"Plan link.md"}),
            Step(
                lambda r: edit(r / "Projects/Alpha/Plan.md", "edited through its folder\n"),
                {"Projects/Alpha/Plan.md", "Plan link.md"},
            ),
        )
    ),
    "symlinked-folder": Scenario(
        (
            Step(link_hidden_folder, {"Linked/Secret.md"}),
            Step(
                lambda r: edit(r / ".hidden/real/Secret.md", "edited behind the link\n"),
                {"Linked/Secret.md"},
            ),
            Step(
                lambda r: write_vault(r, {".hidden/real/Sub/New.md": "new behind the link\n"}),
                {"Linked/Sub/New.md"},
            ),
            Step(
                retarget_link,
                {"Linked/Other.md", "Linked/Sub/Deeper.md"},
                {"Linked/Secret.md", "Linked/Sub/New.md"},
            ),
            Step(
                lambda r: edit(r / ".hidden/other/Sub/Deeper.md", "edited in the new target\n"),
                {"Linked/Sub/Deeper.md"},
            ),
        )
    ),
    "burst-of-1000-writes": Scenario(
        (
            Step(lambda r: write_vault(r, BURST), set(BURST)),
            Step(rewrite_burst, set(BURST)),
        )
    ),
    "hard-linked-note": Scenario(
        (
            Step(
                lambda r: os.link(r / "Inbox.md", r / "Daily/Inbox copy.md"),
                {"Daily/Inbox copy.md"},
            ),
            Step(
                lambda r: edit(r / "Daily/Inbox copy.md", "edited through the other link\n"),
                {"Inbox.md", "Daily/Inbox copy.md"},
            ),
        )
    ),
}


def summary(changes: VaultChanges) -> tuple[set[str], set[str]]:
    return {info.path for info, _text in changes.updated}, set(changes.removed)


def canonical(changes: VaultChanges) -> tuple[object, ...]:
    return tuple(sorted(changes.updated, key=lambda item: item[0].path)), tuple(
        sorted(changes.removed)
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", dict(NOTES))


@pytest.fixture(params=HERE)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each backend this machine runs, chosen by the environment variable a user would set."""
    monkeypatch.setenv(BACKEND_VARIABLE, request.param)
    return str(request.param)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_watched_and_walked_refreshes_report_the_same_changes(
    root: Path, name: str, backend: str
) -> None:
    scenario = SCENARIOS[name]
    watched = Vault(root, watch=True, **scenario.options)  # type: ignore[arg-type]
    walked = Vault(root, watch=False, **scenario.options)  # type: ignore[arg-type]
    assert watched.watching
    assert backend_of(watched) == backend
    assert not walked.watching
    assert canonical(watched.refresh()) == canonical(walked.refresh())
    for step in scenario.steps:
        step.change(root)
        seen_by_watcher = watched.refresh()
        seen_by_walk = walked.refresh()
        assert summary(seen_by_watcher) == (step.updated, step.removed)
        assert canonical(seen_by_watcher) == canonical(seen_by_walk)
    assert watched.notes == walked.notes
    assert not watched.refresh()
    assert watched.watching


def backend_of(vault: Vault) -> str:
    return {"InotifyWatcher": "inotify", "WatchfilesWatcher": "watchfiles"}[
        type(vault.watcher).__name__
    ]


@pytest.mark.skipif("watchfiles" not in HERE, reason="watchfiles is not installed")
def test_elsewhere_than_linux_the_vault_is_watched_through_watchfiles(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(BACKEND_VARIABLE, raising=False)
    monkeypatch.setattr(watcher_module, "unwatchable_filesystem", lambda root: None)
    for platform in ("darwin", "win32", "freebsd14"):
        monkeypatch.setattr(watcher_module.sys, "platform", platform)
        assert backend_of(Vault(root)) == "watchfiles"


@needs_inotify
def test_on_linux_the_vault_is_watched_through_inotify(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(BACKEND_VARIABLE, raising=False)
    assert backend_of(Vault(root)) == "inotify"


def test_without_a_backend_every_refresh_walks(
    root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    watcher_module._libc.cache_clear()
    monkeypatch.setattr(watcher_module.sys, "platform", "darwin")
    monkeypatch.setattr(watcher_module, "unwatchable_filesystem", lambda root: None)
    monkeypatch.setenv(BACKEND_VARIABLE, "inotify")
    with caplog.at_level(logging.DEBUG, logger=watcher_module.__name__):
        vault = Vault(root)
    watcher_module._libc.cache_clear()
    assert not vault.watching
    assert "inotify is Linux-only" in caplog.text
    assert len(vault.refresh().updated) == 5
    edit(root / "Inbox.md", "seen by walking\n")
    assert summary(vault.refresh()) == ({"Inbox.md"}, set())


def test_an_unknown_backend_name_is_logged_and_the_default_used(
    root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(BACKEND_VARIABLE, "fsevents")
    with caplog.at_level(logging.WARNING, logger=watcher_module.__name__):
        vault = Vault(root)
    assert "VAULTSEARCH_WATCHER=fsevents is not one of inotify, watchfiles" in caplog.text
    assert vault.watching == bool(HERE)


def count_stats(
    monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...] = ("stat", "lstat", "scandir")
) -> list[str]:
    """Record the paths given to these `os` functions from now on."""
    calls: list[str] = []
    for name in names:
        real = getattr(os, name)

        def counting(
            path: str, *args: object, _real: Callable[..., object] = real, **kwargs: object
        ) -> object:
            calls.append(os.fspath(path))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, counting)
    return calls


def test_unchanged_refresh_stats_nothing_and_an_edit_stats_one_note(
    root: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    vault = Vault(root)
    vault.refresh()
    assert_stats_only_what_changed(vault, root, monkeypatch)


def assert_stats_only_what_changed(
    vault: Vault, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unchanged refresh stats nothing; after one edit, a refresh stats that note alone."""
    calls = count_stats(monkeypatch)
    assert not vault.refresh()
    assert calls == []
    edit(root / "Projects/Beta/Notes.md", "edited\n")
    calls.clear()
    assert summary(vault.refresh()) == ({"Projects/Beta/Notes.md"}, set())
    assert calls == [str(root / "Projects/Beta/Notes.md")]


def test_an_edit_made_just_before_a_refresh_is_always_seen(root: Path, backend: str) -> None:
    vault = Vault(root)
    vault.refresh()
    notes = ["Inbox.md", "Projects/Alpha/Deep/Detail.md", "Daily/2024-03-05.md"]
    for round_ in range(150):
        note = notes[round_ % len(notes)]
        # A new size each time, and no mtime push: the edit alone must be seen.
        (root / note).write_text("x" * (round_ + 1), encoding="utf-8")
        changes = vault.refresh()
        assert summary(changes) == ({note}, set()), round_
        assert changes.updated[0][1] == "x" * (round_ + 1)


def test_without_the_watcher_every_refresh_stats_every_note(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = Vault(root, watch=False)
    vault.refresh()
    calls = count_stats(monkeypatch)
    assert not vault.refresh()
    assert {str(root / info.path) for info in vault.notes.values()} <= set(calls)


@needs_inotify
@pytest.mark.usefixtures("inotify")
def test_queue_overflow_falls_back_to_a_full_walk_and_rearms(
    root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    vault = Vault(root)
    vault.refresh()
    edit(root / "Inbox.md", "edited before the overflow\n")
    real_read = os.read
    overflow = struct.pack("iIII", -1, IN_Q_OVERFLOW, 0, 0)
    reads = iter([overflow])

    def read_overflow(fd: int, size: int) -> bytes:
        return next(reads, None) or real_read(fd, size)

    monkeypatch.setattr(os, "read", read_overflow)
    with caplog.at_level(logging.DEBUG, logger=watcher_module.__name__):
        changes = vault.refresh()
    assert "overflowed" in caplog.text
    assert summary(changes) == ({"Inbox.md"}, set())
    assert vault.watching
    calls = count_stats(monkeypatch)
    assert not vault.refresh()
    assert calls == []
    write_vault(root, {"Daily/after.md": "after the overflow\n"})
    assert summary(vault.refresh()) == ({"Daily/after.md"}, set())


def test_a_forked_process_starts_its_own_watcher(
    root: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    vault = Vault(root)
    vault.refresh()
    real_pid = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: real_pid + 1)
    edit(root / "Inbox.md", "edited in the child\n")
    assert summary(vault.refresh()) == ({"Inbox.md"}, set())
    assert vault.watching
    assert backend_of(vault) == backend
    edit(root / "Daily/2024-03-05.md", "and again\n")
    assert summary(vault.refresh()) == ({"Daily/2024-03-05.md"}, set())


@needs_inotify
@pytest.mark.usefixtures("inotify")
def test_folders_that_cannot_be_watched_are_stat_ed_every_time(
    root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    libc = watcher_module._libc()
    real_add = libc.add_watch
    refused = os.fsencode(root / "Projects")

    def add_watch(fd: int, path: bytes, mask: int) -> int:
        if path == refused:
            ctypes.set_errno(errno.ENOSPC)
            return -1
        return real_add(fd, path, mask)

    monkeypatch.setattr(libc, "add_watch", add_watch)
    with caplog.at_level(logging.WARNING, logger=watcher_module.__name__):
        vault = Vault(root)
        vault.refresh()
    assert "watch limit" in caplog.text
    calls = count_stats(monkeypatch)
    assert not vault.refresh()
    assert str(root / "Projects/Alpha/Deep/Detail.md") in calls
    assert str(root / "Inbox.md") not in calls
    edit(root / "Projects/Alpha/Deep/Detail.md", "seen without a watch\n")
    assert summary(vault.refresh()) == ({"Projects/Alpha/Deep/Detail.md"}, set())


@needs_inotify
@pytest.mark.usefixtures("inotify")
def test_a_watch_the_kernel_drops_is_put_back(root: Path) -> None:
    vault = Vault(root)
    vault.refresh()
    watcher = inotify_watcher(vault)
    folder = str(root / "Daily")
    watcher._libc.rm_watch(watcher._fd, watcher._wd_by_folder[folder])  # as on unmount
    assert not vault.refresh()
    edit(root / "Daily/2024-03-05.md", "edited after the watch came back\n")
    assert summary(vault.refresh()) == ({"Daily/2024-03-05.md"}, set())


def test_refresh_interval_still_delays_what_the_watcher_saw(
    root: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    clock = [1000.0]
    monkeypatch.setattr("langchain_vaultsearch.vault.vault.time.monotonic", lambda: clock[0])
    vault = Vault(root, refresh_interval=5.0)
    vault.refresh()
    edit(root / "Inbox.md", "edited\n")
    clock[0] += 1.0
    assert not vault.refresh()
    clock[0] += 5.0
    assert summary(vault.refresh()) == ({"Inbox.md"}, set())


def test_close_stops_watching_but_refresh_keeps_working(root: Path, backend: str) -> None:
    with Vault(root) as vault:
        vault.refresh()
        assert vault.watching
    assert not vault.watching
    vault.close()
    edit(root / "Inbox.md", "edited after close\n")
    assert summary(vault.refresh()) == ({"Inbox.md"}, set())


@needs_inotify
@pytest.mark.usefixtures("inotify")
def test_the_descriptor_is_closed_when_the_vault_is_collected(root: Path) -> None:
    vault = Vault(root)
    vault.refresh()
    fd = inotify_watcher(vault)._fd
    os.fstat(fd)
    del vault
    gc.collect()
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(fd)


def test_a_refresh_that_fails_midway_loses_no_change(
    root: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    vault = Vault(root)
    vault.refresh()
    edit(root / "Inbox.md", "edited before the failure\n")

    def broken(text: str) -> object:
        raise RuntimeError("parser exploded")

    with monkeypatch.context() as patch:
        patch.setattr(note_reader, "parse_note", broken)
        with pytest.raises(RuntimeError, match="exploded"):
            vault.refresh()
    assert summary(vault.refresh()) == ({"Inbox.md"}, set())
    assert vault.watching


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_watched_note_files_stay_the_walked_listing(root: Path, name: str, backend: str) -> None:
    scenario = SCENARIOS[name]
    vault = Vault(root, **scenario.options)  # type: ignore[arg-type]
    files = NoteFiles(vault)
    assert files.listing()[1] == vault.list_files()
    for step in scenario.steps:
        step.change(root)
        assert files.listing()[1] == vault.list_files()


def test_note_files_stat_only_the_edited_note_after_the_first_walk(
    root: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    files = NoteFiles(Vault(root))
    listed = files.listing()[1]
    calls = count_stats(monkeypatch)
    assert files.listing()[1] == listed
    assert calls == []
    edit(root / "Projects/Beta/Notes.md", "edited\n")
    calls.clear()
    after = files.listing()[1]
    assert calls == [str(root / "Projects/Beta/Notes.md")]
    assert after["Projects/Beta/Notes.md"][1] != listed["Projects/Beta/Notes.md"][1]
    assert {path: stamp for path, stamp in after.items() if path != "Projects/Beta/Notes.md"} == {
        path: stamp for path, stamp in listed.items() if path != "Projects/Beta/Notes.md"
    }


def test_note_files_say_when_nothing_changed_since_a_listing(root: Path, backend: str) -> None:
    files = NoteFiles(Vault(root))
    seen, listed = files.listing()
    assert files.changed_since(seen) == (seen, None)
    edit(root / "Inbox.md", "edited\n")
    now, after = files.changed_since(seen)
    assert after is not None
    assert now > seen
    assert after["Inbox.md"][1] != listed["Inbox.md"][1]
    assert files.changed_since(now) == (now, None)
    assert files.changed_since(seen) == (now, after)  # an older generation gets the listing


def test_note_files_of_an_unwatched_vault_always_changed(root: Path) -> None:
    files = NoteFiles(Vault(root, watch=False))
    seen, listed = files.listing()
    now, again = files.changed_since(seen)
    assert now > seen
    assert again == listed


@pytest.mark.parametrize("how", ["unwatched vault", "symlinked note"])
def test_note_files_walk_each_time_when_events_cannot_cover_the_vault(
    root: Path, monkeypatch: pytest.MonkeyPatch, how: str, backend: str
) -> None:
    if how == "symlinked note":
        os.symlink(root / "Inbox.md", root / "Projects" / "Inbox link.md")
    files = NoteFiles(Vault(root, watch=how != "unwatched vault"))
    first = files.listing()[1]
    calls = count_stats(monkeypatch, ("stat",))
    assert files.listing()[1] == first
    assert len([call for call in calls if call.endswith(".md")]) == len(first)


def test_note_files_interrupted_walk_again_and_miss_nothing(
    root: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    vault = Vault(root)
    files = NoteFiles(vault)
    files.listing()[1]
    write_vault(root, {"Projects/New.md": "new\n"})
    real_walk = vault.walk_files

    def interrupted(watcher: FolderWatcher | None) -> object:
        monkeypatch.setattr(vault, "walk_files", real_walk)
        raise KeyboardInterrupt

    monkeypatch.setattr(vault, "walk_files", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.listing()[1]
    assert files.listing()[1] == vault.list_files()
    assert "Projects/New.md" in files.listing()[1]
