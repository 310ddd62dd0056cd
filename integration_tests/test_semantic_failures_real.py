"""A real hub model that cannot be had offline: one line with the fix, and no index left behind.

Run in a child process: `HF_HUB_OFFLINE` is read when huggingface_hub is imported, and the
child's empty `HF_HOME` makes sure the model is in no cache, whatever this machine holds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from langchain_vaultsearch.semantic.embeddings import bundled_minilm_path

_CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from langchain_vaultsearch.semantic.embeddings import load_embeddings
    from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable
    from langchain_vaultsearch.semantic.index import VaultIndex

    spec = "huggingface:sentence-transformers/all-MiniLM-L6-v2"
    found = {}
    try:
        load_embeddings(spec)
    except SemanticIndexUnavailable as exc:
        found["load"] = str(exc)
    try:
        VaultIndex(vault_path=sys.argv[1], embeddings=spec)
    except SemanticIndexUnavailable as exc:
        found["index"] = str(exc)
    print(json.dumps(found))
    """
)


def test_a_hub_model_not_downloaded_while_offline_is_one_line_and_leaves_no_index(
    tmp_path: Path,
) -> None:
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("sentence-transformers is not installed: pip install -e '.[local]'")
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Note.md").write_text("# Note\n\nSlow database lookups.\n", "utf-8")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "empty-hf-home"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    env.pop("TRANSFORMERS_OFFLINE", None)
    child = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", _CHILD, str(vault)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    assert "Traceback" not in child.stderr
    found = json.loads(child.stdout)
    for message in (found["load"], found["index"]):
        assert "\n" not in message
        assert message.startswith("cannot load the embedding model 'huggingface:sentence-")
        assert "HF_HUB_OFFLINE forbids downloading: unset HF_HUB_OFFLINE" in message
    bundled = bundled_minilm_path()
    if bundled is not None:  # the fix names the offline model this machine has
        assert f"huggingface:{bundled}" in found["load"]
    assert sorted(p.name for p in vault.rglob("*")) == ["Note.md"]
