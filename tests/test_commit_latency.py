"""`benchmarks.commit_latency` times each commit's own code over a copy of one index.

What its figures are worth rests on each run importing only the commit it names, reading
the index as it is, and leaving the index as it was for the next run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# `benchmarks` is a top-level folder of the repo, not part of the installed package.
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import commit_latency

REPO = Path(__file__).resolve().parents[1]

pytest.importorskip("langchain_chroma", reason="the vector index needs the [chroma] extra")

SAMPLE = REPO / "examples" / "sample-vault"


@pytest.fixture
def built_index(tmp_path: Path) -> Path:
    """The sample vault's vector index with a hash model, built by this checkout."""
    from langchain_vaultsearch import VaultIndex

    home = tmp_path / "index"
    index = VaultIndex(vault_path=SAMPLE, embeddings="fake:16", persist_directory=home)
    index.refresh()
    index.close()
    return home


def _head() -> str:
    try:
        return commit_latency.short_hash("HEAD")
    except subprocess.CalledProcessError:
        pytest.skip("not a git checkout: the benchmark exports commits with git archive")


def test_each_round_times_the_commit_over_an_unchanged_index(
    built_index: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    head = _head()
    monkeypatch.chdir(REPO)
    before = sorted((p.name, p.stat().st_size) for p in built_index.rglob("*") if p.is_file())
    argv = ["--vault", str(SAMPLE), "--index", str(built_index), "--embeddings", "fake:16"]

    commit_latency.main([*argv, "--rounds", "2", "--repeats", "1", "--queries", "5", "HEAD"])

    shown = capsys.readouterr().out
    rounds = [line.split() for line in shown.splitlines() if line.split()[:1] in (["1"], ["2"])]
    assert [r[:2] for r in rounds] == [["1", head], ["2", head]]
    assert f"{head} " in shown.split("median of rounds")[1]
    assert "100%" in shown, "the baseline's share of itself"
    after = sorted((p.name, p.stat().st_size) for p in built_index.rglob("*") if p.is_file())
    assert after == before, "the runs read copies: the index itself is untouched"


def test_a_missing_index_is_an_error_that_says_to_build_it(tmp_path: Path) -> None:
    argv = ["--vault", str(SAMPLE), "--index", str(tmp_path / "none"), "HEAD"]

    with pytest.raises(SystemExit, match=r"no vector index at .*build it first"):
        commit_latency.main([*argv, "--embeddings", "fake:16"])
