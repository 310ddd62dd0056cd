"""The cookbook notebooks run top to bottom, as a new user would run them.

Each notebook executes in a fresh kernel of this interpreter with cwd = cookbook/. Without
OPENAI_API_KEY the notebooks pick a fake chat model; with it, the real one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

COOKBOOK = Path(__file__).resolve().parents[1] / "cookbook"
NOTEBOOKS = sorted(COOKBOOK.glob("*.ipynb"))
KERNEL = "vaultsearch-test"

# What each notebook must print: proof that it searched the sample vault and got through
# its last step. A new notebook needs an entry here.
EXPECTED_OUTPUT = {
    "01_lcel_rag_chain.ipynb": [
        "examples/sample-vault",
        "Projects/Alpha/Next.js OAuth Setup.md",
        "<localSearch>",
        "</localSearch>",
        "1 Projects/Alpha/Next.js OAuth Setup.md",
        "Engineering/PostgreSQL Indexing.md#",  # the keyword retriever over the export
    ],
    "02_langgraph_rag.ipynb": [
        "examples/sample-vault",
        "retrieved:\n  Projects/Alpha/Next.js OAuth Setup.md",
        "grade -.-> answer;",
        "grade -> ['relevant']",
    ],
    "05_mcp_agent.ipynb": [
        "examples/sample-vault",
        "['list_tags', 'local_search', 'read_note', 'search', 'status']",
        "0.98  Projects/Alpha/Next.js OAuth Setup.md",
        "tool search -> {",
        "answer: ",
        "server stopped: True",
    ],
    "04_semantic_and_merged.ipynb": [
        "examples/sample-vault",
        "384 dimensions",
        "49 notes, 123 chunks",
        "again: 0 texts embedded",
        "verify: True",
        "  semantic Engineering/PostgreSQL Indexing.md",
        "speed up slow database lookups -> merged",
        "#project/alpha decisions -> merged",
        "what did I change last week? -> merged",
        "<localSearch>",
    ],
    "03_filters_tags_time.ipynb": [
        "examples/sample-vault",
        "49 notes",
        "[[Next.js OAuth Setup]] -> Projects/Alpha/Next.js OAuth Setup.md",
        "unresolved: ['No Such Note']",
        "#project/alpha: 24 notes\n#project: 25 notes",
        "last week 2024-04-15 to 2024-04-21",
        "0.93 time-filtered Daily/2024-04-19.md",
        "found: last week\n  #meeting Daily/2024-04-17.md\n"
        "  #meeting Meetings/2024-04-17 Auth Review.md",
        "search documents of filtered notes dropped",
        "limit 100 | searched True\nfilter title-match Project Alpha.md",
        "time range: last week | searched False | 9 documents",
        "<filterResults>",
        '<localSearch timeRange="week of 2024-04-15">\nDaily/2024-04-17.md time-filtered\n'
        "Meetings/2024-04-17 Auth Review.md time-filtered\nProject Alpha.md title-match",
        "['Project Alpha.md',",
    ],
}


@pytest.fixture(scope="module")
def kernel_specs(tmp_path_factory: pytest.TempPathFactory) -> KernelSpecManager:
    """A kernel spec for this very interpreter, whatever kernels the machine has."""
    kernels = tmp_path_factory.mktemp("kernels")
    spec = kernels / KERNEL
    spec.mkdir()
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"}),
        encoding="utf-8",
    )
    return KernelSpecManager(kernel_dirs=[str(kernels)])


def test_the_cookbook_has_its_notebooks() -> None:
    assert [path.name for path in NOTEBOOKS] == sorted(EXPECTED_OUTPUT)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebooks_are_committed_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == []
            assert cell.execution_count is None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_runs_top_to_bottom(path: Path, kernel_specs: KernelSpecManager) -> None:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=120,
        km=KernelManager(kernel_name=KERNEL, kernel_spec_manager=kernel_specs),
        resources={"metadata": {"path": str(COOKBOOK)}},
    )
    client.execute()  # raises CellExecutionError, with the traceback, if any cell fails
    printed = _printed(notebook)
    for expected in EXPECTED_OUTPUT[path.name]:
        assert expected in printed, f"{path.name} did not print {expected!r}:\n{printed}"


def _printed(notebook: nbformat.NotebookNode) -> str:
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            # Standard output only: a log line on stderr arrives when the kernel flushes
            # it, and landing between two printed lines it split what the cell printed.
            if output.output_type == "stream" and output.name == "stdout":
                parts.append(output.text)
            elif output.output_type in {"execute_result", "display_data"}:
                parts.append(output.data.get("text/plain", ""))
    return "\n".join(parts)
