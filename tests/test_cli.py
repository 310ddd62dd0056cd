"""The vaultsearch command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_vaultsearch.cli import main


def test_table_lists_ranked_notes(vault_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--vault", str(vault_dir), "--k", "3", "OAuth", "Next.js"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["#", "note", "heading", "score"]
    assert lines[1].split()[:2] == ["1", "Projects/Alpha/OAuth"]
    assert len(lines) == 4


def test_json_output_parses(vault_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--vault", str(vault_dir), "--json", "--explain", "zeppelin"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["query"] == "zeppelin"
    assert [d["metadata"]["path"] for d in payload["documents"]] == ["Crlf.md"]
    assert payload["documents"][0]["metadata"]["explanation"]["lexicalMatches"]
    assert payload["queryExpansion"]["salientTerms"] == ["zeppelin"]


def test_explain_shows_terms_and_fields(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "--vault", str(vault_dir), "--explain", "#project/alpha deploy"]) == 0
    out = capsys.readouterr().out
    assert "salient terms: deploy, #project/alpha" in out
    assert "tags: #project/alpha" in out
    assert "raw score" in out


def test_no_results_message(vault_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--vault", str(vault_dir), "qwertyuiop"]) == 0
    assert "No results" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vault", "/definitely/not/here", "x"], "does not exist"),
        (["--vault", ".", "--k", "0", "x"], "--k must be between 1 and 100"),
    ],
)
def test_bad_arguments_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", *args]) == 2
    assert message in capsys.readouterr().err
