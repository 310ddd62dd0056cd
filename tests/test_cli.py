"""The vaultsearch command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatResult

from langchain_vaultsearch import TieredLexicalRetriever, Vault, cli, create_vault_context_chain
from langchain_vaultsearch.cli import main
from langchain_vaultsearch.search import lexical_index as lexical_index_module
from tests.conftest import write_vault
from tests.fake_models import PIANO_REPLY, ScriptedChatModel


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
    assert "salient terms:  deploy, #project/alpha" in out
    assert "tags: #project/alpha" in out
    assert "raw score" in out


def test_no_results_message(vault_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--vault", str(vault_dir), "qwertyuiop"]) == 0
    assert "No results for 'qwertyuiop' in" in capsys.readouterr().out
    pasted = " ".join(f"qwertyuiop{n}" for n in range(1000))
    assert main(["search", "--vault", str(vault_dir), "--mode", "lexical", pasted]) == 0
    said = capsys.readouterr().out
    assert "No results for 'qwertyuiop0 qwertyuiop1" in said
    assert len(said) < 300  # not the whole page it was given


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


# --------------------------------------------------------------------------- --expand

EXPAND_VAULT = {
    "Piano/Lesson 1.md": "# Lesson 1\n\nPiano scales and notes on posture.\n",
    "Music/Sheet Music.md": "# Sheet music\n\nScores bought in Vienna.\n",
}


@pytest.fixture
def expand_vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", dict(EXPAND_VAULT))


@pytest.fixture
def fake_chat_model(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the OpenAI model with a fake answering seed 001's piano example."""
    requested: list[str] = []

    def fake(model: str, **_messages: str) -> BaseChatModel:
        requested.append(model)
        return ScriptedChatModel(responses=[PIANO_REPLY])

    monkeypatch.setattr(cli, "openai_chat_model", fake)
    return requested


def test_expand_explain_shows_the_expansion_and_the_notes_it_found(
    expand_vault: Path, fake_chat_model: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", "--vault", str(expand_vault), "--expand", "--explain", "find my piano notes"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "salient terms:  piano, notes" in out
    assert "queries:        find my piano notes | piano lesson notes | piano practice sheets" in out
    assert "expanded terms: music, sheet, practice, lesson" in out
    assert "expansion:      llm" in out
    rows = [line.split() for line in out.splitlines()]
    table = [row[1] for row in rows if row and row[0].isdigit()]
    assert table == ["Piano/Lesson", "Music/Sheet"]
    assert "found only through the query expansion" in out
    assert fake_chat_model == [cli.DEFAULT_CHAT_MODEL]


def test_expand_json_carries_the_expansion(
    expand_vault: Path, fake_chat_model: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "search",
        "--vault",
        str(expand_vault),
        "--expand",
        "--json",
        "--explain",
        "my piano notes",
    ]
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["queryExpansion"]["source"] == "llm"
    assert payload["queryExpansion"]["expandedTerms"] == ["music", "sheet", "practice", "lesson"]


def test_chat_model_from_option_or_environment(
    expand_vault: Path,
    fake_chat_model: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["search", "--vault", str(expand_vault), "--expand"]
    assert main([*base, "--chat-model", "gpt-test", "piano"]) == 0
    monkeypatch.setenv(cli.CHAT_MODEL_ENV, "gpt-from-env")
    assert main([*base, "piano"]) == 0
    assert fake_chat_model == ["gpt-test", "gpt-from-env"]
    capsys.readouterr()


def test_expand_without_api_key_is_a_one_line_error(
    expand_vault: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["search", "--vault", str(expand_vault), "--expand", "piano"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "vaultsearch: --expand needs OPENAI_API_KEY in the environment (or leave out --expand)"
    ]


def test_expand_without_langchain_openai_is_a_one_line_error(
    expand_vault: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setitem(sys.modules, "langchain_openai", None)  # import fails
    assert main(["search", "--vault", str(expand_vault), "--expand", "piano"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "vaultsearch: --expand needs langchain-openai: "
        'pip install "langchain-vaultsearch[openai]" (from a clone: pip install -e ".[openai]")'
    ]


# langchain-openai creates (never connects) a socket at construction to probe its options.
@pytest.mark.enable_socket
def test_openai_chat_model_is_built_with_the_requested_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = cli.openai_chat_model("gpt-4.1-mini", needed_by="--expand", hint="")
    assert type(model).__name__ == "ChatOpenAI"
    assert model.model_name == "gpt-4.1-mini"  # type: ignore[attr-defined]


def test_without_expand_no_model_is_built(
    expand_vault: Path, fake_chat_model: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "--vault", str(expand_vault), "--explain", "piano"]) == 0
    assert fake_chat_model == []
    assert "expansion:      fallback" in capsys.readouterr().out


# --------------------------------------------------------------------------- context and ask

QA_VAULT = {
    "Projects/Alpha.md": "# Alpha\n\nAlpha is the zeppelin project. #project/alpha\n",
    "Meetings/Kickoff.md": "# Kickoff\n\nDecided: JWT sessions for the app. #meeting\n",
    "Notes/Sessions.md": "# Sessions\n\nJWT sessions versus database sessions.\n",
}
ANSWER = "JWT sessions [^1].\n\n#### Sources\n[^1]: [[Kickoff]]"


@pytest.fixture
def qa_vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", dict(QA_VAULT))


def test_context_prints_exactly_what_the_model_would_read(
    qa_vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    question = "What did I decide about [[Alpha]] sessions in #meeting?"
    assert main(["context", "--vault", str(qa_vault), question]) == 0
    out = capsys.readouterr().out
    expected = create_vault_context_chain(vault_path=str(qa_vault)).invoke(question)["context"]
    assert out == expected + "\n"
    tree = ET.fromstring(out)  # noqa: S314 (our own output)
    filters = [
        doc.findtext("path") for doc in tree.iter("document") if doc.find("matchType") is not None
    ]
    assert filters == ["Projects/Alpha.md", "Meetings/Kickoff.md"]
    assert "<searchResults>" in out
    assert "Notes/Sessions.md" in out


def test_context_reads_the_time_range_from_the_question_or_from_time(
    qa_vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["context", "--vault", str(qa_vault), "what did I write today?"]) == 0
    today = capsys.readouterr().out
    assert today.startswith('<localSearch timeRange="today">')
    assert today.count("<matchType>time-filtered</matchType>") == len(QA_VAULT)
    argv = ["context", "--vault", str(qa_vault), "--time", "Q1 1990", "what did I write today?"]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith('<localSearch timeRange="Q1 1990">')


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--time", "someday", "what?"], "vaultsearch: --time: Unable to parse time expression"),
        (["  "], "vaultsearch: the question is empty"),
        (["--k", "101", "what?"], "vaultsearch: --k must be between 1 and 100, got 101"),
    ],
)
def test_context_bad_arguments_exit_2(
    qa_vault: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["context", "--vault", str(qa_vault), *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1
    assert captured.err.startswith(message)


@pytest.mark.parametrize("where", [["--vault", "VAULT"], ["--chunks", "CHUNKS"]])
def test_a_blank_search_query_exits_2_rather_than_finding_nothing(
    qa_vault: Path, tmp_path: Path, where: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    chunks = tmp_path / "chunks"
    chunks.mkdir()
    (chunks / "a.jsonl").write_text('{"id": "a", "content": "deploy notes"}\n', encoding="utf-8")
    folder = {"VAULT": str(qa_vault), "CHUNKS": str(chunks)}[where[1]]
    assert main(["search", where[0], folder, " ", ""]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "vaultsearch: the query is empty\n"


def test_context_of_a_missing_vault_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["context", "--vault", "/definitely/not/here", "what?"]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.fixture
def fake_answer_model(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the OpenAI model with a fake that streams ANSWER."""
    requested: list[str] = []

    def fake(model: str, **_messages: str) -> BaseChatModel:
        requested.append(model)
        return GenericFakeChatModel(messages=iter([AIMessage(content=ANSWER)]))

    monkeypatch.setattr(cli, "openai_chat_model", fake)
    return requested


def test_ask_prints_the_answer_and_its_sources(
    qa_vault: Path, fake_answer_model: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["ask", "--vault", str(qa_vault), "--chat-model", "gpt-test", "Why", "[[Kickoff]]?"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    answer, sources = out.split("\nSources:\n")
    assert answer.strip() == ANSWER
    assert sources.splitlines()[0] == "[1] Meetings/Kickoff.md  (title-match)"
    assert fake_answer_model == ["gpt-test"]


def test_ask_without_api_key_is_a_one_line_error(
    qa_vault: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["ask", "--vault", str(qa_vault), "Why JWT?"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "vaultsearch: ask needs OPENAI_API_KEY in the environment (`vaultsearch context` shows"
        " what the model would read, without one)"
    ]


def test_ask_without_langchain_openai_is_a_one_line_error(
    qa_vault: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setitem(sys.modules, "langchain_openai", None)  # import fails
    assert main(["ask", "--vault", str(qa_vault), "Why JWT?"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "vaultsearch: ask needs langchain-openai: "
        'pip install "langchain-vaultsearch[openai]" (from a clone: pip install -e ".[openai]")'
    ]


def test_ask_reports_a_failing_model_without_a_traceback(
    qa_vault: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class RejectedChatModel(GenericFakeChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            raise RuntimeError("401 invalid api key")

    def failing(model: str, **_messages: str) -> BaseChatModel:
        return RejectedChatModel(messages=iter([]))

    monkeypatch.setattr(cli, "openai_chat_model", failing)
    assert main(["ask", "--vault", str(qa_vault), "Why JWT?"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "vaultsearch: the chat model failed: 401 invalid api key"


def test_index_saves_an_index_the_next_search_starts_from(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", "--vault", str(vault_dir)]) == 0
    out = capsys.readouterr().out
    saved = vault_dir / ".vaultsearch" / "lexical-index.npz"
    assert saved.is_file()
    assert out.startswith("Indexed ")
    assert str(saved) in out
    vault = Vault(vault_dir, watch=False)
    retriever = TieredLexicalRetriever(vault=vault)
    retriever.core.index.sync()
    assert vault.version == 1  # adopted from the saved index, nothing read since
    assert retriever.core.index.recall.size == len(vault.notes) > 0


def test_index_of_an_unwritable_vault_exits_1(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(lexical_index_module, "save_index", lambda *args, **kwargs: False)
    assert main(["index", "--vault", str(vault_dir)]) == 1
    assert "could not save the index" in capsys.readouterr().err


def test_index_of_a_missing_vault_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "--vault", "/definitely/not/here"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_export_chunks_then_search_them_by_keywords(
    vault_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "store"
    assert main(["export-chunks", "--vault", str(vault_dir), "--out", str(out)]) == 0
    assert "chunks of" in capsys.readouterr().out
    assert (out / "vault-chunks.jsonl").is_file()
    assert main(["search", "--chunks", str(out), "--json", "--explain", "OAuth", "Next.js"]) == 0
    payload = json.loads(capsys.readouterr().out)
    top = payload["documents"][0]["metadata"]
    assert top["source"] == "keyword"
    assert "OAuth" in top["path"]
    assert set(top["explanation"]) >= {"bm25", "tfidf", "boosts", "finalScore"}
    assert main(["search", "--chunks", str(out), "--explain", "--k", "2", "OAuth"]) == 0
    table = capsys.readouterr().out
    assert "bm25 1.000" in table


def test_search_chunks_filters_and_argument_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    lines = [
        {"id": "a", "text": "estimated tax form", "metadata": {"doc_type": "form"}},
        {"id": "b", "text": "estimated tax guide", "metadata": {"doc_type": "guide"}},
    ]
    (store / "c.jsonl").write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    args = ["search", "--chunks", str(store), "--json", "--filter", "doc_type=guide", "tax"]
    assert main(args) == 0
    assert [d["id"] for d in json.loads(capsys.readouterr().out)["documents"]] == ["b"]
    for bad, message in (
        (["search", "tax"], "needs --vault PATH or --chunks DIR"),
        (["search", "--chunks", str(store), "--vault", str(store), "tax"], "one of them"),
        (["search", "--chunks", str(tmp_path / "none"), "tax"], "does not exist"),
        (["search", "--chunks", str(store), "--filter", "novalue", "tax"], "KEY=VALUE"),
        (["search", "--chunks", str(store), "--mode", "semantic", "tax"], "--mode applies"),
        (["search", "--vault", str(store), "--filter", "a=b", "tax"], "--filter applies"),
    ):
        assert main(bad) == 2
        assert message in capsys.readouterr().err


def test_hybrid_search_from_the_command_line(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["search", "--vault", str(vault_dir), "--mode", "hybrid", "--top-n", "3", "--json"]
    assert main([*args, "--no-recency", "OAuth", "Next.js"]) == 0
    documents = json.loads(capsys.readouterr().out)["documents"]
    assert 1 <= len(documents) <= 3
    assert documents[0]["metadata"]["score"] == 1.0
    assert main(["search", "--vault", str(vault_dir), "--no-graph", "oauth"]) == 2
    assert "apply to --mode hybrid" in capsys.readouterr().err


def test_the_table_keeps_a_long_paths_note_name_and_lines_up_cjk() -> None:
    from langchain_core.documents import Document

    from langchain_vaultsearch.cli import _table, _width

    deep = "/".join(["Folder"] * 15) + "/Meeting notes 2024.md"
    docs = [
        Document(page_content="x", metadata={"path": deep, "heading": "Intro", "score": 0.9}),
        Document(
            page_content="x",
            metadata={"path": "学习笔记/学习笔记.md", "heading": "学习笔记", "score": 0.5},
        ),
    ]
    lines = _table(docs).splitlines()
    assert "…Meeting notes 2024.md" in lines[1]
    # Every row ends at the same terminal column: wide characters count twice.
    assert len({_width(line) for line in lines}) == 1


def test_an_empty_vault_path_is_refused_not_read_as_the_current_folder(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["search", "--vault", "", "oauth"]) == 2
    assert "--vault needs a folder" in capsys.readouterr().err
    assert main(["status", "--vault", "  "]) == 2


def test_json_output_is_strict_json_even_for_a_score_that_is_not_a_number() -> None:
    from langchain_vaultsearch.cli import _json

    printed = _json({"documents": [{"score": float("nan"), "rank": [1.0, float("inf")]}]})
    assert json.loads(printed) == {"documents": [{"score": None, "rank": [1.0, None]}]}


def test_index_says_how_many_texts_it_will_embed_and_counts_them(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", "--vault", str(vault_dir), "--embeddings", "fake:16"]) == 0
    err = capsys.readouterr().err
    first = next(line for line in err.splitlines() if "texts of" in line)
    assert re.match(r"vaultsearch: \d+ texts of \d+ changed notes to embed", first)
    assert "text/s" in err or "texts/s" in err or "s/text" in err  # tqdm's rate, in texts


def test_skipped_chunk_lines_are_one_line_without_verbose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    good = {"id": "a", "text": "estimated tax form", "metadata": {}}
    lines = [json.dumps(good), "{not json", '{"id": "b"}', "[1, 2]"]
    (store / "c.jsonl").write_text("\n".join(lines), encoding="utf-8")
    assert main(["search", "--chunks", str(store), "tax"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("vaultsearch: skipped c.jsonl:2: ")
    assert "and 2 more (--verbose lists them)" in err[0]


def test_a_refused_saved_index_is_said_without_verbose(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    good = {"id": "a", "text": "estimated tax form", "metadata": {}}
    (store / "c.jsonl").write_text(json.dumps(good), encoding="utf-8")
    command = [str(Path(sys.executable).with_name("vaultsearch")), "search", "--chunks"]
    command += [str(store), "tax"]

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: S603 - the installed command, fixed arguments
            command, capture_output=True, text=True, timeout=120, check=True
        )

    assert run().stderr == ""
    saved = store / ".vaultsearch" / "keyword-index.npz"
    saved.write_bytes(b"PK\x03\x04 not really a zip")
    second = run()
    assert "c.jsonl" in second.stdout
    [line] = second.stderr.strip().splitlines()
    assert "Ignoring the keyword index" in line
    assert "removed; it is rebuilt" in line


def cli_with_failing_vector_search(error: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own (its own logging, as a user runs it) whose vector
    search raises `error` (Python source of an exception)."""
    script = (
        "import sys\n"
        "from langchain_vaultsearch.semantic.index import VaultIndex\n"
        "from langchain_vaultsearch.cli import main\n"
        "def failing(*args):\n"
        f"    raise {error}\n"
        "VaultIndex.search = failing\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", script, *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_why_a_merged_search_answered_lexically_is_said_without_verbose(vault_dir: Path) -> None:
    assert main(["index", "--vault", str(vault_dir), "--embeddings", "fake:16"]) == 0
    done = cli_with_failing_vector_search(
        "ConnectionError('vector store is down')",
        *["search", "--vault", str(vault_dir), "oauth deployment"],
    )
    assert done.returncode == 0, done.stderr
    assert "OAuth Setup.md" in done.stdout
    said = [line for line in done.stderr.splitlines() if "Semantic search failed" in line]
    assert len(said) == 1
    assert "(vector store is down); returning lexical results" in said[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["search", "context"])
def test_notes_still_being_embedded_when_the_command_ends_are_said(
    vault_dir: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A one-shot command embeds 8 changed notes before its query and says what it left.

    It starts no background thread: its exit cut one short inside the model (status 134,
    a half-written batch, the same at every later search).
    """
    assert main(["index", "--vault", str(vault_dir), "--embeddings", "fake:16"]) == 0
    new_notes = {f"Walrus {n}.md": f"# Walrus {n}\n\nA walrus, number {n}.\n" for n in range(12)}
    write_vault(vault_dir, new_notes)  # more than a query waits for
    capsys.readouterr()
    assert main([command, "--vault", str(vault_dir), "--mode", "semantic", "walrus"]) == 0
    assert not [t for t in threading.enumerate() if t.name == "vaultsearch-embed"]
    said = capsys.readouterr().err.strip().splitlines()
    assert said == [
        "vaultsearch: 4 notes are not embedded yet, so semantic search left them out: "
        f"`vaultsearch index --vault {vault_dir}` embeds them"
    ]
    assert main(["search", "--vault", str(vault_dir), "--mode", "semantic", "walrus"]) == 0
    assert capsys.readouterr().err == ""  # the next command embedded the rest


@pytest.mark.parametrize("command", ["search", "context"])
def test_a_semantic_search_that_fails_is_one_line_not_a_traceback(
    vault_dir: Path, command: str
) -> None:
    assert main(["index", "--vault", str(vault_dir), "--embeddings", "fake:16"]) == 0
    done = cli_with_failing_vector_search(
        "RuntimeError('the model exploded\\n  at layer 3')",
        *[command, "--vault", str(vault_dir), "--mode", "semantic", "oauth"],
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "vaultsearch: semantic search failed: the model exploded"
    ]


def test_ask_blames_a_failing_semantic_search_not_the_chat_model(
    qa_vault: Path,
    fake_chat_model: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from langchain_vaultsearch.semantic.index import VaultIndex

    assert main(["index", "--vault", str(qa_vault), "--embeddings", "fake:16"]) == 0

    def exploded(*_args: object) -> list[tuple[str, float]]:
        raise RuntimeError("the model exploded")

    monkeypatch.setattr(VaultIndex, "search", exploded)
    capsys.readouterr()
    assert main(["ask", "--vault", str(qa_vault), "--mode", "semantic", "Why JWT?"]) == 2
    assert capsys.readouterr().err.strip() == (
        "vaultsearch: semantic search failed: the model exploded"
    )


def test_multilingual_said_once_sends_cjk_queries_to_the_model_in_later_commands(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fake:16` gives no hint that it reads Chinese: without the flag its side skips a
    Chinese query; with it once, the next commands keep the choice until told otherwise."""

    skipped = "the embedding model reads no Chinese, Japanese or Korean"

    def semantic_paths(*flags: str) -> list[str]:
        capsys.readouterr()
        command = ["search", "--vault", str(vault_dir), "--mode", "semantic", "--json"]
        assert main([*command, *flags, "学习笔记"]) == 0
        printed = capsys.readouterr()
        paths = [d["metadata"]["path"] for d in json.loads(printed.out)["documents"]]
        assert (skipped in printed.err) == (not paths), "the line says why nothing came back"
        return paths

    assert main(["index", "--vault", str(vault_dir), "--embeddings", "fake:16"]) == 0
    assert semantic_paths() == []
    assert main(["index", "--vault", str(vault_dir), "--multilingual"]) == 0
    assert semantic_paths()
    capsys.readouterr()
    assert main(["status", "--vault", str(vault_dir)]) == 0
    assert json.loads(capsys.readouterr().out)["semantic"]["reads_cjk"] is True
    assert semantic_paths("--no-multilingual") == []
    assert semantic_paths() == []


@pytest.mark.parametrize("as_json", [False, True])
def test_a_terminal_without_emoji_still_gets_the_results(tmp_path: Path, as_json: bool) -> None:
    """A Chinese Windows console (GBK) cannot print 📺; a note named with it once ended the
    search with `UnicodeEncodeError`. The table prints `?` for it; JSON escapes it."""
    vault = write_vault(tmp_path / "vault", {"📺 风起陇西.md": "# 风起陇西\n\n一部剧的笔记\n"})
    command = ["search", "--vault", str(vault), "--mode", "lexical", "风起陇西"]
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed command
        [sys.executable, "-m", "langchain_vaultsearch.cli", *command, *(["--json"] * as_json)],
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "gbk"},
    )
    assert done.returncode == 0, done.stderr.decode("gbk", "replace")
    out = done.stdout.decode("gbk")
    if as_json:
        paths = [d["metadata"]["path"] for d in json.loads(out)["documents"]]
        assert paths == ["📺 风起陇西.md"]
    else:
        assert "? 风起陇西.md" in out


def test_exclude_takes_comma_separated_rules_as_the_python_string_form_does(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--exclude "Projects,Archive"` once named one folder called "Projects,Archive", so
    # nothing was left out of what the user asked to keep private.
    command = ["search", "--vault", str(vault_dir), "--json", "--exclude", "Daily,Projects"]
    assert main([*command, "note"]) == 0
    paths = [d["metadata"]["path"] for d in json.loads(capsys.readouterr().out)["documents"]]
    assert "Crlf.md" in paths
    assert not [path for path in paths if path.startswith(("Projects/", "Daily/"))]
