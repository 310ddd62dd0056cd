"""`benchmarks.chinese_forms`: a Chinese set asked across forms scores as in one form."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# `benchmarks` is a top-level folder of the repo, not part of the installed package.
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import chinese_forms
from tests.conftest import write_vault

NOTES = {
    "学习方法.md": "# 学习方法\n\n费曼技巧：用简单的话讲给别人听。\n",
    "时间管理.md": "# 时间管理\n\n番茄工作法，每次二十五分钟。\n",
    "头发护理.md": "# 头发护理\n\n洗发水和护发素。\n",
}
# Words whose every character differs between the forms: unfolded, they match nothing.
QUERIES = [
    ("q1", "keyword", "学习", "学习方法.md"),
    ("q2", "keyword", "时间", "时间管理.md"),
    ("q3", "question", "头发", "头发护理.md"),
]


def test_every_pairing_of_forms_scores_as_the_set_as_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = write_vault(tmp_path / "vault", NOTES)
    judged = tmp_path / "judged.json"
    queries = [
        {"id": qid, "kind": kind, "query": text, "relevant": {path: 2}}
        for qid, kind, text, path in QUERIES
    ]
    judged.write_text(json.dumps({"queries": queries}, ensure_ascii=False), encoding="utf-8")
    copy = tmp_path / "traditional"
    assert (
        chinese_forms.main(["--queries", str(judged), "--vault", str(vault), "--copy", str(copy)])
        == 0
    )
    assert (copy / "學習方法.md").read_text(encoding="utf-8").startswith("# 學習方法")
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    overall = next(row for row in rows if row and row[0] == "overall")
    assert overall[2:] == ["1.000"] * 4  # each question finds its note, in either form
