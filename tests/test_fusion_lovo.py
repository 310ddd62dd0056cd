"""`benchmarks.fusion_lovo --multilingual` asks the model every query, CJK ones too.

Without it the run measures what ships: an English-only model skips a query with a CJK
word. The flag is how the benchmark shows what that rule is worth on a Chinese vault, so
it must really reach the vector index.
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
def chinese_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A two-note Chinese vault, one judged CJK query, and the vector cache in tmp_path."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "睡眠.md").write_text("# 睡眠\n\n如何提高睡眠质量：固定作息。\n", encoding="utf-8")
    (vault / "咖啡.md").write_text("# 咖啡\n\n咖啡因会影响入睡。\n", encoding="utf-8")
    queries = tmp_path / "queries.json"
    judged = {"id": "kw-01", "kind": "keyword", "query": "睡眠质量", "relevant": {"睡眠.md": 2}}
    queries.write_text(json.dumps({"queries": [judged]}, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setattr(fusion_lovo, "CACHE", tmp_path / "cache")
    return queries, vault


def test_an_english_only_model_skips_cjk_queries_unless_told_it_reads_them(
    chinese_set: tuple[Path, Path],
) -> None:
    queries, vault = chinese_set

    (skipped,) = fusion_lovo.collect([chinese_set], "fake:16")
    (asked,) = fusion_lovo.collect([(queries, vault)], "fake:16", multilingual=True)

    assert skipped.semantic == []
    assert asked.semantic, "the model told it reads CJK was asked the query"
