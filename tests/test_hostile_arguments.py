"""Arguments a caller gets wrong, and terminals that go away: refused or ended cleanly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from langchain_vaultsearch import FilterRetriever, RetrieverFactory, TieredLexicalRetriever, cli
from tests.conftest import SAMPLE_VAULT


@pytest.mark.parametrize("k", ["5", 5.5, True, 0, 101])
def test_a_bad_k_is_refused_per_call_and_at_construction(k: object) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(SAMPLE_VAULT))
    with pytest.raises(ValueError, match="k must be"):
        retriever.invoke("oauth", k=k)
    with pytest.raises(ValidationError):
        TieredLexicalRetriever(vault_path=str(SAMPLE_VAULT), k=k)  # type: ignore[arg-type]


def test_output_cut_short_by_the_reader_ends_quietly() -> None:
    vaultsearch = Path(sys.executable).with_name("vaultsearch")
    command = [str(vaultsearch), "search", "--vault", str(SAMPLE_VAULT), "--json", "--k", "100"]
    process = subprocess.Popen(  # noqa: S603 - the package's own command
        [*command, "project alpha notes"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    assert process.stdout.read(100)  # like `| head -c 100`
    process.stdout.close()
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 0
    assert b"Traceback" not in err
    assert b"BrokenPipe" not in err


def test_ctrl_c_ends_with_one_line_and_status_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(_args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_search", interrupted)
    assert cli.main(["search", "--vault", str(SAMPLE_VAULT), "oauth"]) == 130
    assert capsys.readouterr().err == "vaultsearch: interrupted\n"


def test_a_vault_path_may_be_a_path_as_for_vault_and_vault_index() -> None:
    for retriever in (
        TieredLexicalRetriever(vault_path=SAMPLE_VAULT),
        FilterRetriever(vault_path=SAMPLE_VAULT),
        RetrieverFactory(vault_path=SAMPLE_VAULT),
    ):
        assert retriever.vault_path == str(SAMPLE_VAULT)
    assert TieredLexicalRetriever(vault_path=SAMPLE_VAULT, k=3).invoke("oauth")


def test_an_option_no_retriever_has_is_refused_not_ignored() -> None:
    """`search_kwargs={"k": 3}`, LangChain's vector-store idiom, returned 30 documents."""
    options: dict[str, Any] = {"vault_path": str(SAMPLE_VAULT), "search_kwargs": {"k": 3}}
    for make in (TieredLexicalRetriever, FilterRetriever, RetrieverFactory):
        with pytest.raises(ValidationError, match="search_kwargs"):
            make(**options)
