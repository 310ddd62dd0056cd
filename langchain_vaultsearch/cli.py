"""`vaultsearch`: search a vault from a terminal, see what a model would read, ask it.

`vaultsearch search --vault PATH [--mode M] [--k N] [--tag T] [--time EXPR] [--json] QUERY`
`vaultsearch search --chunks DIR [--filter KEY=VALUE] [--k N] [--json] [--explain] QUERY`
`vaultsearch export-chunks --vault PATH --out DIR`
`vaultsearch mcp --vault PATH [--mode M] [--http PORT [--host H]]`
`vaultsearch context --vault PATH [--mode M] [--time EXPR] [--k N] [--json] QUESTION`
`vaultsearch ask --vault PATH [--mode M] [--time EXPR] [--k N] [--chat-model NAME] QUESTION`
`vaultsearch index --vault PATH [--embeddings SPEC] [--chroma-host H --chroma-port P] [--rebuild]`
`vaultsearch status --vault PATH`

A thin adapter over `VaultSearch`: it parses arguments and prints what the service returns.
"""

from __future__ import annotations

import argparse
import codecs
import io
import json
import logging
import math
import os
import shlex
import sys
import unicodedata
from collections.abc import Sequence
from contextlib import closing
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel

from langchain_vaultsearch.expansion.expander import QueryExpander
from langchain_vaultsearch.expansion.terms import ExpandedQuery
from langchain_vaultsearch.fusion.rerankers import (
    DEFAULT_RERANKER_MODEL,
    RERANKER_MODEL_VARIABLE,
    CrossEncoderReranker,
)
from langchain_vaultsearch.limits import DEFAULT_K, DEFAULT_SHOWN_K
from langchain_vaultsearch.mcp_server import LOOPBACK_HOSTS, TOKEN_VARIABLE, create_mcp_server
from langchain_vaultsearch.query_plan import SEARCH_MODES, SearchMode
from langchain_vaultsearch.retrievers.keyword import KeywordDocumentRetriever
from langchain_vaultsearch.semantic.embeddings import install_command
from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable
from langchain_vaultsearch.semantic.index import IndexProgress
from langchain_vaultsearch.service import VaultSearch
from langchain_vaultsearch.time_ranges import resolve_time_range

CHAT_MODEL_ENV = "VAULTSEARCH_CHAT_MODEL"
DEFAULT_CHAT_MODEL = "gpt-4.1-mini"


DEFAULT_MCP_PORT = 8000
"""The port `create_mcp_server` is given when the server runs on stdio (unused there)."""
DAMAGE_LOGGERS = (
    "langchain_vaultsearch.safe_archive",
    "langchain_vaultsearch.search.index_cache",
    "langchain_vaultsearch.chunk_store.keyword_file",
    "langchain_vaultsearch.chunk_store.keyword_chunks",
)
"""Loggers whose warnings (a saved index refused or rebuilt) print without --verbose: they
explain a slow command or a changed result; notes' own warnings wait for --verbose."""
EXPANDER_LOGGER = "langchain_vaultsearch.expansion.expander"
"""Whoever asks for `--expand` hears why it fell back, even without --verbose."""
MERGED_LOGGER = "langchain_vaultsearch.retrievers.merged"
"""Why a merged search answered with lexical results alone (the semantic side failed or
did not answer in time): heard without --verbose, as the results are not what was asked."""


class UsageError(Exception):
    """Something the user can fix, reported as one line on stderr (no traceback)."""


def build_parser() -> argparse.ArgumentParser:
    """The command-line grammar."""
    parser = argparse.ArgumentParser(
        prog="vaultsearch", description="Search an Obsidian-style markdown vault."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    search = commands.add_parser(
        "search", help="rank the vault's chunks (or a JSONL chunk store's) for a query"
    )
    search.add_argument("query", nargs="+", help="the query (quote it or not)")
    _add_vault_arguments(search)
    search.add_argument(
        "--chunks",
        default=None,
        metavar="DIR",
        help="search a folder of *.jsonl chunks by keywords (BM25 + TF-IDF) instead of a vault",
    )
    search.add_argument(
        "--filter",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="with --chunks: only chunks whose metadata KEY is VALUE (repeat for more)",
    )
    search.add_argument(
        "--k",
        "--top-n",
        type=int,
        default=DEFAULT_SHOWN_K,
        help=f"results to show (1..100, default {DEFAULT_SHOWN_K})",
    )
    search.add_argument(
        "--tag",
        action="append",
        default=None,
        metavar="TAG",
        help="only notes with this tag or a descendant (repeat for more)",
    )
    search.add_argument(
        "--time",
        default=None,
        metavar="EXPR",
        help='only notes with a date in this period, e.g. "last week" or 2024-03',
    )
    search.add_argument(
        "--no-graph", action="store_true", help="hybrid: no graph neighbours of the best results"
    )
    search.add_argument(
        "--no-recency", action="store_true", help="hybrid: no boost for recently changed notes"
    )
    search.add_argument(
        "--rerank",
        action="store_true",
        help="hybrid: re-sort the top 10 with a cross-encoder ($VAULTSEARCH_RERANKER_MODEL, a"
        " model name or local folder; needs the 'local' extra)",
    )
    search.add_argument("--json", action="store_true", help="print the documents as JSON")
    search.add_argument(
        "--explain", action="store_true", help="show matched fields, boosts and query terms"
    )
    search.add_argument(
        "--expand",
        action="store_true",
        help="expand the query with a chat model (OpenAI; needs OPENAI_API_KEY and the"
        " 'openai' extra): alternative phrasings and related terms widen recall",
    )
    _add_chat_model_argument(search, "--expand")

    context = commands.add_parser(
        "context", help="print the XML context a chat model gets for a question (no model)"
    )
    _add_question_arguments(context)
    context.add_argument(
        "--json",
        action="store_true",
        help="print the period, what the filter found, the documents and the context as JSON",
    )
    ask = commands.add_parser(
        "ask", help="answer a question from the vault with a chat model (OpenAI)"
    )
    _add_question_arguments(ask)
    _add_chat_model_argument(ask, "ask")
    index = commands.add_parser(
        "index",
        help="index the vault now and save the index in <vault>/.vaultsearch/, so that"
        " every later search starts from it",
    )
    _add_vault_arguments(index)
    index.add_argument(
        "--rebuild",
        action="store_true",
        help="drop the vector index first (needed after changing the embedding model)",
    )
    status = commands.add_parser("status", help="what is indexed, and whether it is complete")
    _add_vault_arguments(status)
    export = commands.add_parser(
        "export-chunks", help="write the vault's chunks to DIR/vault-chunks.jsonl (a chunk store)"
    )
    _add_vault_arguments(export)
    export.add_argument("--out", required=True, metavar="DIR", help="the chunk store's folder")
    mcp = commands.add_parser(
        "mcp", help="serve the vault's search to MCP clients (stdio, or --http PORT)"
    )
    _add_vault_arguments(mcp)
    mcp.add_argument(
        "--http", type=int, default=None, metavar="PORT", help="serve streamable HTTP on PORT"
    )
    mcp.add_argument(
        "--host",
        default="127.0.0.1",
        help="the HTTP address (default 127.0.0.1: this machine); any other needs a bearer"
        f" token in ${TOKEN_VARIABLE}",
    )
    mcp.add_argument(
        "--allow-host",
        action="append",
        default=None,
        metavar="NAME",
        help="off loopback: a name clients reach the server by, checked against each"
        " request's Host header (default: --host; needed for 0.0.0.0; repeat for more)",
    )
    return parser


def _add_vault_arguments(parser: argparse.ArgumentParser) -> None:
    searching = parser.prog.split()[-1] == "search"
    parser.add_argument(
        "--vault",
        required=not searching,
        help="the vault folder" + (" (or give --chunks)" if searching else ""),
    )
    parser.add_argument("--exclude", action="append", default=None, help="exclusion rule")
    parser.add_argument("--include", action="append", default=None, help="inclusion rule")
    parser.add_argument("--verbose", action="store_true", help="log warnings about notes")
    parser.add_argument(
        "--embeddings",
        default=None,
        help="embedding model for semantic search: huggingface:NAME_OR_FOLDER, openai:MODEL"
        " (default: the model the vault's vector index was built with, if any)",
    )
    parser.add_argument(
        "--multilingual",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the model reads Chinese, Japanese or Korean, so CJK queries go to it (default:"
        " as the index recorded, else guessed from the model's name); kept with the index",
    )
    parser.add_argument("--chroma-host", default=None, help="a Chroma server for the vectors")
    parser.add_argument("--chroma-port", type=int, default=8000, help="its port (default 8000)")
    if parser.prog.split()[-1] in ("search", "context", "ask", "mcp"):
        parser.add_argument(
            "--mode",
            choices=SEARCH_MODES,
            default="auto",
            help="auto (merged when the vault has a vector index, else lexical),"
            " lexical, semantic, merged or hybrid",
        )


def _add_question_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "question",
        nargs="+",
        help="the question; the notes of the [[notes]], #tags and periods it names come first",
    )
    _add_vault_arguments(parser)
    parser.add_argument(
        "--time",
        default=None,
        help='answer only from the notes of this period, e.g. "last week" (a period the'
        " question names only puts its notes first)",
    )
    parser.add_argument(
        "--k",
        type=int,
        default=DEFAULT_K,
        help=f"documents for questions without tags or period (1..100, default"
        f" {DEFAULT_K}; tag and period questions get up to 100)",
    )


def _add_chat_model_argument(parser: argparse.ArgumentParser, user: str) -> None:
    parser.add_argument(
        "--chat-model",
        default=os.environ.get(CHAT_MODEL_ENV, DEFAULT_CHAT_MODEL),
        help=f"the OpenAI model {user} uses (default ${CHAT_MODEL_ENV} or {DEFAULT_CHAT_MODEL})",
    )


def _print_what_the_terminal_can() -> None:
    """A character the terminal's encoding lacks prints as `?` instead of a traceback.

    A Chinese Windows console (GBK) has no emoji, and real vaults put them in note names
    (`🧰 本库指南/`): one such path ended a search with `UnicodeEncodeError`. `--json`
    escapes instead (`_json`), so its output stays whole.
    """
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="replace")


def _writes_utf8(stream: object) -> bool:
    """Whether a stream encodes UTF-8, so that any character can be printed as it is."""
    encoding = getattr(stream, "encoding", None)
    try:
        return isinstance(encoding, str) and codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def _configure_logging(args: argparse.Namespace) -> None:
    """Warnings on stderr: all of them with --verbose, else only those that explain a result.

    The choice is a filter on the handler this command adds, not a level set on the
    package's loggers, so a program that calls `main` keeps its own logging as it was.
    """
    root = logging.getLogger()
    before = list(root.handlers)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.verbose:
        return
    expand = [EXPANDER_LOGGER] if getattr(args, "expand", False) else []
    shown = {*DAMAGE_LOGGERS, MERGED_LOGGER, *expand}

    def without_verbose(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or record.name in shown

    for handler in root.handlers:
        if handler not in before:
            handler.addFilter(without_verbose)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (2 for bad arguments, 1 for a failed model)."""
    args = build_parser().parse_args(argv)
    _print_what_the_terminal_can()
    _configure_logging(args)
    if hasattr(args, "k") and not 1 <= args.k <= 100:
        print(f"vaultsearch: --k must be between 1 and 100, got {args.k}", file=sys.stderr)
        return 2
    for option in ("vault", "chunks", "out"):
        value = getattr(args, option, None)
        if value is not None and not value.strip():
            # An empty path would silently mean the current folder.
            print(f"vaultsearch: --{option} needs a folder, got an empty path", file=sys.stderr)
            return 2
    run = {
        "search": _search,
        "context": _context,
        "ask": _ask,
        "index": _index,
        "status": _status,
        "export-chunks": _export_chunks,
        "mcp": _mcp,
    }[args.command]
    try:
        return run(args)
    except UsageError as exc:
        print(f"vaultsearch: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("vaultsearch: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`vaultsearch search ... | head`): nothing left to say. Point
        # stdout at /dev/null so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _open(
    args: argparse.Namespace,
    expander: QueryExpander | None = None,
    *,
    rebuild: bool = False,
    watch: bool = False,
) -> VaultSearch:
    """The vault behind every vault command; a one-shot command does not watch folders."""
    reranker = _reranker() if getattr(args, "rerank", False) else None
    try:
        return VaultSearch(
            args.vault,
            # Each value in the rules' string form: `--exclude "Archive,#private"` is two.
            inclusions=",".join(args.include) if args.include else None,
            exclusions=",".join(args.exclude) if args.exclude else None,
            embeddings=args.embeddings,
            chroma_host=args.chroma_host,
            chroma_port=args.chroma_port,
            multilingual=args.multilingual,
            query_expander=expander,
            watch=watch,
            # A one-shot command embeds a few changed notes before its query: a thread
            # embedding the rest would be cut short at exit, inside the model.
            catch_up_in_background=watch,
            rebuild=rebuild,
            graph=not getattr(args, "no_graph", False),
            recency=not getattr(args, "no_recency", False),
            reranker=reranker,
        )
    except (ValueError, ImportError) as exc:
        raise UsageError(str(exc)) from None


def _search(args: argparse.Namespace) -> int:
    if (args.vault is None) == (args.chunks is None):
        raise UsageError("search needs --vault PATH or --chunks DIR (one of them)")
    if args.chunks is not None:
        return _search_chunks(args)
    if args.filter:
        raise UsageError("--filter applies to --chunks searches")
    query = _words(args.query, "query")
    expander = None
    if args.expand:
        llm = openai_chat_model(args.chat_model, needed_by="--expand", hint="or leave out --expand")
        expander = QueryExpander(llm)
    hybrid_options = (args.no_graph, args.no_recency, args.rerank)
    if args.mode != "hybrid" and any(hybrid_options):
        raise UsageError("--no-graph, --no-recency and --rerank apply to --mode hybrid")
    with closing(_open(args, expander)) as service:
        try:
            documents = service.search(
                query, mode=args.mode, k=args.k, tags=args.tag, time_range=args.time
            )
        except (ValueError, SemanticIndexUnavailable) as exc:
            raise UsageError(str(exc)) from None
        _say_what_search_left_out(service, args.vault, query, args.mode)
        _print_results(args, query, documents, args.vault, service.lexical.last_query_expansion)
    return 0


def _say_what_search_left_out(
    service: VaultSearch, vault: str, query: str, mode: SearchMode
) -> None:
    """One line on stderr for each reason semantic results miss notes.

    The vault's vector index could not join the search, its model cannot read the query
    (an English-only model and a Chinese one: `--mode semantic` said "No results" and
    nothing else), or it holds no vectors yet of some notes (new ones past the few this
    one-shot command embeds before its query, a store emptied behind its back): without
    the line, results that leave notes out look complete.
    """
    if service.model_skips(query, mode):
        print(
            "vaultsearch: the embedding model reads no Chinese, Japanese or Korean, so"
            " semantic search skipped this query (pick a model that does; --multilingual"
            " if this one does)",
            file=sys.stderr,
        )
    if service.semantic_problem is not None:
        print(
            f"vaultsearch: semantic search is off, these are lexical results:"
            f" {service.semantic_problem}",
            file=sys.stderr,
        )
    waiting = service.notes_unembedded
    if waiting:
        print(
            f"vaultsearch: {waiting:,} notes are not embedded yet, so semantic search left"
            f" them out: `vaultsearch index --vault {shlex.quote(vault)}` embeds them",
            file=sys.stderr,
        )


_SHOWN_QUERY_CHARS = 100
"""A query this long is echoed in full; a pasted page is cut to its start."""


def _print_results(
    args: argparse.Namespace,
    query: str,
    documents: list[Document],
    where: str,
    expansion: ExpandedQuery | None = None,
) -> None:
    """A search's results as `--json`, `--explain` and the table ask, for vault and store."""
    expansion = expansion if args.explain else None
    if args.json:
        payload: dict[str, Any] = {
            "query": query,
            "documents": [_document_json(doc, explain=args.explain) for doc in documents],
        }
        if expansion is not None:
            payload["queryExpansion"] = expansion.to_dict()
        print(_json(payload))
        return
    if expansion is not None:
        print(_expansion_summary(expansion) + "\n")
    if not documents:
        shown = query if len(query) <= _SHOWN_QUERY_CHARS else query[:_SHOWN_QUERY_CHARS] + "…"
        print(f"No results for {shown!r} in {where}")
        return
    print(_table(documents))
    if args.explain:
        print()
        for rank, doc in enumerate(documents, start=1):
            print(f"{rank:>3}. {doc.id}\n{_explain(doc.metadata['explanation'])}")


def _reranker() -> CrossEncoderReranker:
    model = os.environ.get(RERANKER_MODEL_VARIABLE) or DEFAULT_RERANKER_MODEL
    try:
        return CrossEncoderReranker(model_name_or_path=model)
    except Exception as exc:  # a missing extra, or a model it cannot load
        raise UsageError(f"--rerank could not load {model}: {exc}") from None


def _search_chunks(args: argparse.Namespace) -> int:
    """Keyword search over a JSONL chunk store (seed 004)."""
    for option in ("expand", "include", "exclude", "embeddings", "chroma_host", "tag", "time"):
        if getattr(args, option):
            raise UsageError(f"--{option.replace('_', '-')} applies to vault searches")
    if args.multilingual is not None:
        raise UsageError("--multilingual applies to vault searches")
    if args.mode != "auto":
        raise UsageError("--mode applies to vault searches; --chunks is keyword search")
    filters: dict[str, Any] = {}
    for item in args.filter or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--filter takes KEY=VALUE, got {item!r}")
        filters.setdefault(key, []).append(value)
    query = _words(args.query, "query")
    try:
        retriever = KeywordDocumentRetriever(chunk_dir=args.chunks)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    documents = retriever.invoke(query, k=args.k, filters=filters)
    _print_results(args, query, documents, args.chunks)
    skipped = retriever.problems
    if skipped and not args.verbose:
        more = f" and {len(skipped) - 1:,} more (--verbose lists them)" if len(skipped) > 1 else ""
        print(f"vaultsearch: skipped {skipped[0]}{more}", file=sys.stderr)
    return 0


def _export_chunks(args: argparse.Namespace) -> int:
    """Write the vault's chunks as a JSONL chunk store."""
    with closing(_open(args)) as service:
        try:
            report = service.export_chunks(args.out)
        except (ValueError, OSError) as exc:
            raise UsageError(str(exc)) from None
    print(f"Wrote {report.chunks:,} chunks of {report.notes:,} notes to {report.path}")
    return 0


def _mcp(args: argparse.Namespace) -> int:
    """Serve the vault over MCP until the client disconnects (stdio) or Ctrl-C (HTTP)."""
    if args.http is not None and not 0 < args.http < 65536:
        raise UsageError(f"--http takes a port number, got {args.http}")
    token = os.environ.get(TOKEN_VARIABLE) or None
    if args.http is None and args.allow_host:
        raise UsageError("--allow-host applies to --http")
    # A long-running server watches the folders, so a call does not stat every note.
    with closing(_open(args, watch=True)) as service:
        if service.uses_vectors:
            # Catch up (or make a first index) while serving: calls answer at once, merged
            # with the vectors written so far, and `status` shows how far it is.
            service.index_in_background()
        try:
            server = create_mcp_server(
                service,
                mode=args.mode,
                host=args.host,
                port=args.http or DEFAULT_MCP_PORT,
                token=token if args.http is not None else None,
                allowed_hosts=args.allow_host or (),
            )
        except (ValueError, ImportError) as exc:
            raise UsageError(str(exc)) from None
        if args.http is None:
            server.run("stdio")
        else:
            guard = "a bearer token is required" if token else "no token: this machine only"
            if args.allow_host or args.host not in LOOPBACK_HOSTS:
                guard += f"; Host must be one of {', '.join(args.allow_host or [args.host])}"
            where = f"http://{args.host}:{args.http}/mcp"
            print(f"vaultsearch: MCP on {where} ({guard})", file=sys.stderr)
            server.run("streamable-http")
        return 0


def _index(args: argparse.Namespace) -> int:
    """Index the vault and save the index: later one-shot searches start from it.

    With an embedding model (given, or the one the vault's vector index was built with),
    the vector index is refreshed too, with a progress bar on stderr.
    """
    with closing(_open(args, rebuild=args.rebuild)) as service:
        with _ProgressBar() as bar:
            summary = service.index(on_progress=bar.update)
        notes = f"{summary.notes:,} notes in {summary.lexical_seconds:.1f} s"
        if summary.saved_to is None:
            print(f"vaultsearch: indexed {notes} but could not save the index", file=sys.stderr)
            return 1
        print(f"Indexed {notes}; saved to {summary.saved_to}")
        if summary.semantic_problem is not None:
            raise UsageError(f"the vector index was not refreshed: {summary.semantic_problem}")
        report = summary.semantic
        index = service.semantic_index
        if report is not None and index is not None:
            # How many notes hold vectors, not how many this run read again: notes whose file
            # is as their vectors knew it are not read at all, so "0 unchanged" read as if
            # nothing were indexed.
            searchable = len(index.vault.searchable_paths())
            held = searchable - index.notes_unembedded
            print(
                f"Vector index ({index.model_id}): {len(report.added)} added,"
                f" {len(report.updated)} updated, {len(report.removed)} removed;"
                f" {held:,} of {searchable:,} notes have vectors; {report.texts_embedded:,} texts"
                f" embedded in {summary.semantic_seconds:.1f} s"
            )
        return 0


def _status(args: argparse.Namespace) -> int:
    """Print what is indexed as JSON (the vector index's check included)."""
    with closing(_open(args)) as service:
        print(_json(service.status()))
    return 0


def _context(args: argparse.Namespace) -> int:
    """Print exactly the context `ask` would give the model (`--json`: with its documents)."""
    with closing(_open(args)) as service:
        question, time_range = _question(args)
        try:
            result = service.local_search(question, mode=args.mode, time_range=time_range, k=args.k)
        except (ValueError, SemanticIndexUnavailable) as exc:
            raise UsageError(str(exc)) from None
        _say_what_search_left_out(service, args.vault, question, args.mode)
        built = result.build_context()
        if not args.json:
            print(built.text)
            return 0
        found = result.filter_result
        payload = {
            "question": question,
            "timeRange": None if result.time_range is None else result.time_range.label,
            "filter": {
                "mentions": found.mentions,
                "tags": list(found.tags),
                "matched": found.matched,
            },
            "searched": result.searched,
            "documents": [_document_json(doc, explain=False) for doc in result.documents],
            "context": built.text,
        }
        print(_json(payload))
        return 0


def _ask(args: argparse.Namespace) -> int:
    """Stream the model's answer, then list the sources the context showed it."""
    llm = openai_chat_model(
        args.chat_model,
        needed_by="ask",
        hint="`vaultsearch context` shows what the model would read, without one",
    )
    with closing(_open(args)) as service:
        question, time_range = _question(args)
        try:
            chain = service.qa_chain(llm, mode=args.mode, k=args.k)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        sources: list[dict[str, Any]] = []
        try:
            for chunk in chain.stream({"question": question, "time_range": time_range}):
                sources = chunk.get("sources", sources)
                print(chunk.get("answer", ""), end="", flush=True)
        except SemanticIndexUnavailable as exc:  # the search the answer needed, not the model
            print(f"\nvaultsearch: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:
            print(f"\nvaultsearch: the chat model failed: {exc}", file=sys.stderr)
            return 1
        print()
        shown = [source for source in sources if source["id"] is not None]
        if shown:
            print("\nSources:")
            for source in shown:
                how = f"  ({source['matchType']})" if source["matchType"] else ""
                print(f"[{source['id']}] {source['path'] or source['title']}{how}")
        _say_what_search_left_out(service, args.vault, question, args.mode)
        return 0


def _question(args: argparse.Namespace) -> tuple[str, str | None]:
    """The question and `--time`; a blank question or an unreadable --time is the user's to fix."""
    question = _words(args.question, "question")
    try:
        resolve_time_range(args.time)
    except ValueError as exc:
        raise UsageError(f"--time: {exc}") from None
    return question, args.time


def _words(words: list[str], what: str) -> str:
    """The words of a query or question as one string; blank is the user's to fix.

    A blank query searched nothing and printed "No results", as if the vault held nothing.
    """
    text = " ".join(words).strip()
    if not text:
        raise UsageError(f"the {what} is empty")
    return text


def openai_chat_model(model: str, *, needed_by: str, hint: str) -> BaseChatModel:
    """The chat model a command uses: OpenAI, the default provider (docs/design.md, decision 8).

    Args:
        model: the OpenAI model name.
        needed_by: the option or command that needs the model, for the messages.
        hint: what the user can do without a model, for the missing-key message.

    Raises:
        UsageError: without `OPENAI_API_KEY`, without langchain-openai, or when the client
            rejects its settings.
    """
    if not os.environ.get("OPENAI_API_KEY"):
        msg = f"{needed_by} needs OPENAI_API_KEY in the environment ({hint})"
        raise UsageError(msg)
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:
        msg = f"{needed_by} needs langchain-openai: {install_command('openai')}"
        raise UsageError(msg) from None
    try:
        return ChatOpenAI(model=model)
    except Exception as exc:
        msg = f"cannot set up the chat model {model!r}: {exc}"
        raise UsageError(msg) from None


def _expansion_summary(expansion: ExpandedQuery) -> str:
    rows = [
        ("salient terms", ", ".join(expansion.salient_terms) or "(none)"),
        ("queries", " | ".join(expansion.queries) or "(none)"),
        ("expanded terms", ", ".join(expansion.expanded_terms) or "(none)"),
        ("recall terms", ", ".join(expansion.recall_terms()) or "(none)"),
        ("expansion", expansion.source),
    ]
    return "\n".join(f"{label + ':':<16}{value}" for label, value in rows)


def _json(payload: object) -> str:
    """Strict JSON: a score that is not a number prints as null, never as NaN or Infinity.

    NaN is not JSON, and a reader such as `jq` rejects the whole output over one value.
    Characters are written as they are to a UTF-8 stdout, else as JSON escapes, which
    any encoding can print and every JSON reader decodes.
    """
    readable = _writes_utf8(sys.stdout)
    return json.dumps(_finite(payload), ensure_ascii=not readable, indent=2, allow_nan=False)


def _finite(value: object) -> object:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _document_json(doc: Document, *, explain: bool) -> dict[str, Any]:
    metadata = dict(doc.metadata)
    if not explain:
        metadata.pop("explanation", None)
    return {"id": doc.id, "metadata": metadata, "page_content": doc.page_content}


def _table(documents: list[Document]) -> str:
    """Rank, note, heading and score in columns a terminal lines up, CJK titles included."""
    rows = [
        (
            str(rank),
            doc.metadata["path"],
            doc.metadata.get("heading", ""),
            f"{doc.metadata['score']:.3f}",
        )
        for rank, doc in enumerate(documents, start=1)
    ]
    header = ("#", "note", "heading", "score")
    widths = [min(max(_width(row[i]) for row in [header, *rows]), 60) for i in range(4)]
    lines = []
    for row in [header, *rows]:
        cells = [
            _pad(row[0], widths[0], right=True),
            _pad(_fit_path(row[1], widths[1]), widths[1]),
            _pad(_fit_end(row[2], widths[2]), widths[2]),
            _pad(row[3], widths[3], right=True),
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _width(text: str) -> int:
    """Columns a terminal gives the text: wide (CJK, full-width) characters take two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _pad(text: str, width: int, *, right: bool = False) -> str:
    space = " " * max(width - _width(text), 0)
    return space + text if right else text + space


def _fit_end(text: str, width: int) -> str:
    """The text, cut at the end to `width` columns."""
    if _width(text) <= width:
        return text
    kept = ""
    for char in text:
        if _width(kept + char) > width - 1:
            break
        kept += char
    return kept + "…"


def _fit_path(path: str, width: int) -> str:
    """A path cut in its folders, so the note's own name stays readable."""
    if _width(path) <= width:
        return path
    name = path.rsplit("/", 1)[-1]
    if _width(name) + 2 > width:
        return _fit_end(name, width)
    start = ""
    for char in path[: len(path) - len(name)]:
        if _width(start + char) + 1 + _width(name) > width:
            break
        start += char
    return f"{start}…{name}"


def _explain(explanation: dict[str, Any]) -> str:
    lines = []
    neighbour = explanation.get("graphNeighbour")
    if neighbour:
        lines.append(f"       graph neighbour of {', '.join(neighbour['via'])}")
    if "recency" in explanation:
        lines.append(f"       recency x{explanation['recency']:.2f}")
    if "bm25" in explanation:  # keyword search over a chunk store
        lines.append(f"       bm25 {explanation['bm25']:.3f}, tfidf {explanation['tfidf']:.3f}")
        for name, factor in explanation.get("boosts", {}).items():
            lines.append(f"       {name} x{factor:.2f}")
    if explanation.get("expansionOnly"):
        lines.append("       found only through the query expansion")
    matches = explanation.get("lexicalMatches") or []
    fields: dict[str, list[str]] = {}
    for match in matches:  # `~`: the word a misspelt query term was taken for
        fields.setdefault(match["field"], []).append(
            match["query"] + ("~" if match.get("fuzzy") else "")
        )
    for name, terms in fields.items():
        lines.append(f"       {name}: {', '.join(dict.fromkeys(terms))}")
    folder = explanation.get("folderBoost")
    if folder:
        lines.append(
            f"       folder boost x{folder['boostFactor']:.3f} ({folder['documentCount']}"
            f"/{folder['totalDocsInFolder']} notes in {folder['folder'] or '(root)'})"
        )
    graph = explanation.get("graphConnections")
    if graph:
        lines.append(
            f"       graph boost x{graph['boostMultiplier']:.3f} (backlinks {graph['backlinks']},"
            f" co-citations {graph['coCitations']}, shared tags {graph['sharedTags']})"
        )
    scaled = ""
    if "bestScore" in explanation:  # keyword search: scores are relative to the best result
        scaled = (
            f" (boosted {explanation['boostedScore']:.4f} / best {explanation['bestScore']:.4f})"
        )
    lines.append(
        f"       raw score {explanation.get('baseScore', 0):.4f}"
        f" -> {explanation.get('finalScore', 0):.3f}{scaled}"
    )
    return "\n".join(lines)


class _ProgressBar:
    """A tqdm bar of texts written, with its rate and time left, on stderr.

    Texts are what the model's time goes to, so the bar counts them (a bar of notes
    showed 60% done at a quarter of the work); it appears before the first text is
    embedded, under one line saying how many there will be.
    """

    def __init__(self) -> None:
        self._bar: Any = None

    def __enter__(self) -> _ProgressBar:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._bar is not None:
            self._bar.close()

    def update(self, progress: IndexProgress) -> None:
        from tqdm import tqdm

        if self._bar is None:
            changed = progress.notes_total - progress.notes_done
            print(
                f"vaultsearch: {progress.texts_total:,} texts of {changed:,} changed notes to"
                " embed (texts embedded before are reused, not sent to the model)",
                file=sys.stderr,
            )
            self._bar = tqdm(total=progress.texts_total, unit="text", desc="Embedding")
        self._bar.total = progress.texts_total
        self._bar.update(progress.texts_done - self._bar.n)
        self._bar.set_postfix(
            notes=f"{progress.notes_done}/{progress.notes_total}",
            embedded=progress.texts_embedded,
        )


if __name__ == "__main__":
    sys.exit(main())
