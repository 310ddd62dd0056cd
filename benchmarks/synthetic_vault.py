"""Deterministic synthetic Obsidian-style vaults for speed benchmarks at any size.

Real vaults we may redistribute top out at a few thousand notes, so scaling claims (10k, 100k
notes) need generated ones. A generated vault is only useful if it stresses the same code paths
as a real one, so this mimics real shape rather than filling files with noise: nested folders,
a skewed note-size distribution (median ~3 KB, a tail to 40 KB, ~5 KB on average), YAML
frontmatter in its several spellings, H1-H3 headings, nested inline tags, wikilinks with aliases
and heading anchors, daily notes, code blocks, callouts, tables and ~5% Chinese or Japanese
notes. Words follow a Zipf-like distribution over a fixed vocabulary, and each area and
sub-folder has its own topic words, so :data:`SYNTHETIC_QUERIES` have real relevant sets.

The vocabulary, areas and queries are fixed; ``seed`` only changes which notes exist and what
they say, so the same queries stay meaningful for every seed and size.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import random
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

GENERATOR_VERSION = 1
"""Bump whenever output changes, so cached vaults made by an older generator are rebuilt."""

# --------------------------------------------------------------------------------------------
# Vocabulary: fixed, independent of the seed.
# --------------------------------------------------------------------------------------------

_FUNCTION_WORDS = """
the of and to a in is that for it on with as was this be by are not or at from have an but
they which you we his her their has had one were all can there been if more when will would
who so no she other its may these than them what some into only could then do any about also
how our over such out up new most should where after just because each those very through
much before while both under between same why own off here until during
""".split()

_CONTENT_WORDS = """
time people way year work day thing part place case point group problem fact system program
question number week company area world home hand room story result change night study book
idea team level office door health person art war history party morning reason research girl
guy moment air teacher force education foot boy age policy process music market sense nation
plan college interest death experience effect use class control care field development role
effort rate heart drug show leader light voice wife police mind price report decision son view
relationship town road arm difference value building action model season society tax director
position player record paper space ground form event official matter center couple site project
activity star table need court oil situation cost industry figure street image phone data
picture practice piece land product doctor wall patient worker news test movie north love
support technology step baby computer type attention film tree source organization hair window
evidence population site benefit opinion surface rule treatment character series ability
subject network memory term growth choice kind list weight analysis method approach detail
issue idea note draft summary outline context update follow review check fix open close start
finish write read learn build ship move keep make take give find think know want look come
help try feel become leave call ask seem turn show play run hold bring happen include continue
set change lead understand watch follow stop create speak allow add spend grow offer remember
consider appear buy wait serve die send expect stay fall cut reach kill remain suggest raise
pass sell require decide return explain hope develop carry break receive agree support hit
produce eat cover catch draw choose cause point listen realize place close involve increase
good great small large big high old long little important different young right early bad
able late hard major better economic strong possible whole free military true federal
international full special easy clear recent certain personal open red difficult available
likely short single medical current wrong private past foreign fine common poor natural
significant similar hot dead central happy serious ready simple left physical general
environmental financial blue democratic dark various entire close legal religious cold final
main green nice huge popular traditional cultural quick slow simple careful rough quiet
""".split()

_SYLLABLES = (
    "ka ri to mu sen va lo pe di na ko bel tar mi so ru fen gal dor is an el ur om ix "
    "zen tho pra vil que mor bra cle dun fia gor hes jun kel lum nor pil qua ros sil tev"
).split()


def _make_pseudo_words(count: int) -> list[str]:
    """Invent rare words (names, jargon) that give the vocabulary a realistic long tail."""
    rng = random.Random(20240611)
    known = set(_FUNCTION_WORDS) | set(_CONTENT_WORDS)
    words: list[str] = []
    while len(words) < count:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in known:
            known.add(word)
            words.append(word)
    return words


def _dedupe(words: list[str]) -> list[str]:
    return list(dict.fromkeys(words))


_PSEUDO_WORDS = _make_pseudo_words(3200)
VOCABULARY: list[str] = _dedupe(_FUNCTION_WORDS + _CONTENT_WORDS) + _PSEUDO_WORDS
"""General vocabulary, most frequent first (function words, content words, then rare words)."""


def _zipf_cum_weights(n: int, exponent: float = 1.07) -> list[float]:
    return list(itertools.accumulate(1.0 / (rank + 2.7) ** exponent for rank in range(n)))


_VOCAB_CUM = _zipf_cum_weights(len(VOCABULARY))

# --------------------------------------------------------------------------------------------
# Areas (top-level folders) with sub-topics, tags and hub notes.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Subtopic:
    name: str
    words: tuple[str, ...]
    tags: tuple[str, ...]


@dataclass(frozen=True)
class _Area:
    name: str
    weight: float
    words: tuple[str, ...]
    tags: tuple[str, ...]
    subtopics: tuple[_Subtopic, ...]
    hubs: tuple[tuple[str, int], ...]  # (title, index of its subtopic)
    code_rate: float = 0.01
    cjk_rate: float = 0.03
    zh: tuple[str, ...] = ()
    ja: tuple[str, ...] = ()


def _sub(name: str, words: str, tags: str) -> _Subtopic:
    return _Subtopic(name, tuple(words.split(",")), tuple(tags.split()))


_AREAS: tuple[_Area, ...] = (
    _Area(
        "Engineering",
        18,
        tuple(
            "deploy,config,server,log,error,fix,bug,release,version,dependency,performance,"
            "design,code review,service".split(",")
        ),
        ("engineering", "eng/howto"),
        (
            _sub(
                "Kubernetes",
                "kubernetes,deployment,rollback,pod,helm,cluster,container,ingress,namespace,"
                "replica,manifest,rollout",
                "eng/k8s runbook",
            ),
            _sub(
                "Databases",
                "postgres,replication,lag,index,vacuum,schema,migration,query,transaction,"
                "replica,wal,redis",
                "eng/database",
            ),
            _sub(
                "Infrastructure",
                "terraform,state,module,provider,network,vpc,load balancer,dns,certificate,ansible",
                "eng/infra",
            ),
            _sub(
                "Incidents",
                "incident,postmortem,outage,alert,pager,timeline,mitigation,root cause,severity,"
                "customer impact",
                "incident eng/oncall",
            ),
            _sub(
                "Services",
                "api,endpoint,redis,cache,latency,throughput,queue,worker,timeout,retry,"
                "authentication,token,oauth",
                "eng/service",
            ),
            _sub(
                "Tooling",
                "python,rust,typescript,compiler,linter,refactor,benchmark,profiler,build,ci,test",
                "eng/tooling",
            ),
            _sub(
                "Frontend",
                "react,component,css,layout,browser,render,accessibility,bundle",
                "eng/frontend",
            ),
        ),
        (
            ("Kubernetes Runbook", 0),
            ("Postgres Replication", 1),
            ("Incident Process", 3),
            ("Architecture Overview", 4),
        ),
        code_rate=0.16,
        cjk_rate=0.07,
        zh=("数据库", "部署", "服务器", "性能", "延迟", "缓存", "优化", "测试"),
        ja=("データベース", "設計", "実装", "テスト", "性能", "改善", "サーバー"),
    ),
    _Area(
        "Research",
        10,
        tuple("data,analysis,method,approach,result,model,idea,question,paper".split(",")),
        ("research", "ml"),
        (
            _sub(
                "Retrieval",
                "retrieval,ranking,bm25,query,relevance,corpus,index,reranker,lexical,hybrid",
                "ml/retrieval",
            ),
            _sub(
                "Evaluation",
                "evaluation,ndcg,recall,precision,benchmark,metric,judgment,baseline,significance,"
                "ablation,ranking",
                "ml/eval",
            ),
            _sub(
                "Models",
                "transformer,attention,embedding,model,tokenizer,layer,parameter,fine-tuning,"
                "distillation",
                "ml/models",
            ),
            _sub(
                "Training",
                "training,dataset,gradient,loss,optimizer,learning rate,batch,epoch,overfitting,"
                "checkpoint",
                "ml/training",
            ),
            _sub(
                "Papers",
                "paper,citation,abstract,author,conference,arxiv,review,related work",
                "paper",
            ),
            _sub(
                "Experiments",
                "experiment,hypothesis,result,run,seed,variance,plot,notebook",
                "experiment",
            ),
        ),
        (("Retrieval Evaluation", 1), ("Embedding Models", 2), ("Experiment Log", 5)),
        code_rate=0.08,
        cjk_rate=0.08,
        zh=("机器学习", "模型", "训练", "检索", "排序", "向量", "数据", "评估"),
        ja=("機械学習", "モデル", "学習", "検索", "ランキング", "評価", "論文"),
    ),
    _Area(
        "Projects",
        12,
        tuple(
            "milestone,deliverable,risk,owner,status,scope,timeline,stakeholder,requirement,"
            "review,demo,deadline,priority,launch".split(",")
        ),
        ("project", "status/active", "status/done", "status/blocked"),
        (
            _sub(
                "Atlas",
                "atlas,launch,timeline,roadmap,milestone,migration,customer,decision",
                "project/atlas",
            ),
            _sub("Beacon", "beacon,dashboard,analytics,metric,onboarding,launch", "project/beacon"),
            _sub("Cobalt", "cobalt,billing,invoice,pricing,subscription", "project/cobalt"),
            _sub("Ember", "ember,mobile,app,release,notification", "project/ember"),
            _sub("Falcon", "falcon,search,indexing,crawler,latency", "project/falcon"),
            _sub("Granite", "granite,storage,backup,archive,compliance", "project/granite"),
            _sub(
                "Proposals",
                "proposal,budget,scope,requirement,stakeholder,estimate",
                "proposal",
            ),
        ),
        (("Atlas Roadmap", 0), ("Beacon Launch Plan", 1), ("Project Index", 6)),
        code_rate=0.03,
        cjk_rate=0.07,
        zh=("项目", "计划", "进度", "风险", "团队", "需求", "客户", "预算"),
        ja=("プロジェクト", "計画", "予算", "進捗", "リスク", "チーム"),
    ),
    _Area(
        "Meetings",
        14,
        tuple(
            "agenda,minutes,decision,attendees,followup,discussion,sync,notes,action item".split(
                ","
            )
        ),
        ("meeting", "decision"),
        (
            _sub("Standups", "standup,update,blocker,yesterday,today,progress", "meeting/standup"),
            _sub("Retros", "retro,went well,improve,action item,feedback", "meeting/retro"),
            _sub(
                "Planning",
                "planning,quarterly,priority,roadmap,estimate,capacity,okr",
                "meeting/planning",
            ),
            _sub("One-on-ones", "career,feedback,growth,goal,mentor", "meeting/1on1"),
            _sub(
                "Customers",
                "customer,call,demo,request,feedback,contract,renewal",
                "meeting/customer",
            ),
        ),
        (("Weekly Review", 0), ("Decision Log", 2)),
        cjk_rate=0.07,
        zh=("会议", "纪要", "讨论", "决定", "进度", "问题"),
        ja=("会議", "議事録", "確認", "対応", "決定", "共有"),
    ),
    _Area(
        "Reading",
        8,
        tuple("quote,idea,insight,reading,review,rating,chapter".split(",")),
        ("reading", "reading/highlights", "quote"),
        (
            _sub("Books", "book,chapter,author,novel,summary,highlight", "book"),
            _sub("Articles", "article,essay,blog,argument,source,link", "article"),
            _sub("Philosophy", "stoicism,philosophy,virtue,seneca,ethics,meaning", "philosophy"),
            _sub(
                "Productivity",
                "productivity,habit,focus,attention,zettelkasten,note-taking,workflow",
                "productivity",
            ),
        ),
        (("Reading List", 0), ("Zettelkasten Method", 3)),
        cjk_rate=0.06,
        zh=("读书", "笔记", "总结", "作者", "章节"),
        ja=("本", "読書", "メモ", "著者", "感想"),
    ),
    _Area(
        "Recipes",
        5,
        tuple("recipe,ingredient,cup,gram,minute,heat,salt,pan".split(",")),
        ("recipe", "cooking"),
        (
            _sub(
                "Bread",
                "sourdough,starter,hydration,levain,flour,dough,crumb,crust,bake,oven,proof",
                "recipe/bread",
            ),
            _sub("Soups", "broth,ramen,miso,soup,stock,simmer,noodle", "recipe/soup"),
            _sub("Fermentation", "fermentation,kimchi,sauerkraut,brine,jar,salt", "fermentation"),
            _sub("Asian", "curry,rice,tofu,soy,ginger,garlic,wok", "recipe/asian"),
            _sub("Pasta", "pasta,tomato,basil,garlic,parmesan,sauce", "recipe/pasta"),
        ),
        (("Sourdough Basics", 0), ("Meal Plan", 3)),
    ),
    _Area(
        "Travel",
        4,
        tuple("flight,hotel,booking,reservation,itinerary,budget,trip,day".split(",")),
        ("travel", "trip"),
        (
            _sub(
                "Japan",
                "kyoto,tokyo,osaka,ryokan,temple,shinkansen,onsen,itinerary",
                "travel/japan",
            ),
            _sub("Portugal", "lisbon,porto,hotel,tram,pastel,fado,itinerary", "travel/portugal"),
            _sub("Germany", "berlin,munich,museum,train,beer", "travel/germany"),
            _sub("Hiking", "hiking,trail,summit,elevation,boots,tent", "travel/hiking"),
            _sub("Packing", "packing,passport,visa,adapter,luggage,checklist", "packing"),
        ),
        (("Japan Trip", 0), ("Packing List", 4)),
        cjk_rate=0.12,
        zh=("旅行", "北京", "上海", "酒店", "行程"),
        ja=("東京", "京都", "旅行", "計画", "ホテル", "温泉"),
    ),
    _Area(
        "Health",
        5,
        tuple("heart rate,zone,training,week,plan,log".split(",")),
        ("health", "fitness"),
        (
            _sub(
                "Running",
                "running,marathon,interval,tempo,pace,mileage,long run,race",
                "fitness/running",
            ),
            _sub(
                "Strength",
                "squat,deadlift,bench press,workout,sets,reps,mobility",
                "fitness/strength",
            ),
            _sub("Sleep", "sleep,caffeine,bedtime,rest,circadian,nap", "health/sleep"),
            _sub("Nutrition", "nutrition,protein,calorie,meal,carb,hydration", "health/nutrition"),
            _sub("Injuries", "injury,recovery,physio,knee,stretching,pain", "health/injury"),
        ),
        (("Marathon Plan", 0), ("Training Log", 1)),
    ),
    _Area(
        "Finance",
        4,
        tuple("account,payment,month,year,amount,bank".split(",")),
        ("finance",),
        (
            _sub("Budget", "budget,expense,category,spending,savings", "finance/budget"),
            _sub(
                "Taxes",
                "tax,deadline,deduction,return,receipt,invoice,filing",
                "finance/tax",
            ),
            _sub(
                "Investments",
                "index fund,portfolio,dividend,allocation,rebalance,etf,bond",
                "finance/invest",
            ),
            _sub("Housing", "mortgage,rent,interest rate,insurance", "finance/housing"),
        ),
        (("Annual Budget", 0), ("Tax Checklist", 1)),
    ),
    _Area(
        "Home",
        4,
        tuple("house,room,kitchen,weekend,tool".split(",")),
        ("home",),
        (
            _sub(
                "Garden",
                "garden,compost,soil,seedling,irrigation,pruning,tomato,basil,mulch",
                "garden",
            ),
            _sub(
                "Renovation",
                "renovation,contractor,paint,tile,plumbing,permit,quote",
                "home/renovation",
            ),
            _sub(
                "Maintenance",
                "maintenance,filter,furnace,gutter,lawn,schedule",
                "home/maintenance",
            ),
        ),
        (("Garden Plan", 0), ("Home Maintenance", 2)),
    ),
    _Area(
        "People",
        6,
        tuple("contact,email,phone,met,introduced".split(",")),
        ("person",),
        (
            _sub("Work", "colleague,team,manager,role,company,project", "people/work"),
            _sub("Friends", "friend,birthday,dinner,gift,coffee", "people/friends"),
            _sub("Family", "family,birthday,holiday,visit,call", "people/family"),
        ),
        (("People Index", 0),),
    ),
    _Area(
        "Inbox",
        3,
        tuple("idea,todo,later,link,check,maybe,random".split(",")),
        ("inbox", "todo"),
        (),
        (),
    ),
)

_DAILY_WEIGHT = 12.0
_CODENAMES = ("Atlas", "Beacon", "Cobalt", "Ember", "Falcon", "Granite")
_FIRST_NAMES = (
    "Alice Bruno Chen Dana Elif Farid Greta Hiro Ines Jonas Kemal Lena Marco Nadia Omar Priya "
    "Quentin Rosa Sven Tomoko Umar Vera Wei Ximena Yusuf Zoe Aiko Bram Clara Diego Eva Felix "
    "Hana Ivan Julia Kofi Lucia Mateo Noor Oskar"
).split()
_LAST_NAMES = (
    "Nakamura Okafor Silva Schmidt Kowalski Haddad Lindqvist Moreau Rossi Tanaka Novak Hughes "
    "Petrov Garcia Kim Larsen Mendes Yilmaz Zhang Ito Dubois Fischer Ahmed Costa Berg Sato "
    "Walsh Romero Becker Ivanova Park Quinn Reyes Stein Torres Ueda Varga Wong Young Ziegler"
).split()
_GENERIC_HEADINGS = (
    "Overview",
    "Background",
    "Context",
    "Notes",
    "Details",
    "Open Questions",
    "Next Steps",
    "Decisions",
    "Action Items",
    "References",
    "Summary",
    "Ideas",
    "Problems",
    "Resources",
    "Timeline",
    "Log",
    "Tasks",
    "Follow-ups",
    "Key Points",
    "Highlights",
    "Lessons Learned",
    "Risks",
)
_TITLE_SUFFIXES = (
    "Notes",
    "Plan",
    "Overview",
    "Checklist",
    "Ideas",
    "Review",
    "Log",
    "Guide",
    "FAQ",
    "Summary",
    "Draft",
    "Questions",
)
_CHILD_FOLDERS = (
    "Archive",
    "Drafts",
    "Reference",
    "2022",
    "2023",
    "2024",
    "Notes",
    "Specs",
    "Ideas",
    "Old",
    "Q1",
    "Q2",
    "Q3",
    "Q4",
    "Research",
    "Templates",
)
_STATUSES = ("active", "draft", "done", "archived", "someday", "in-progress")
_CODE_LANGS = ("python", "bash", "sql", "yaml", "json", "typescript", "rust")
_ZH_FUNCTION = (
    "的 了 和 在 是 一个 这个 可以 已经 还有 关于 因为 所以 我们 需要 今天 明天 问题 "
    "解决方案 讨论 决定 时间 文档 设计 实现 总结 计划 进度"
).split()
_JA_PARTICLES = ("は", "を", "に", "が", "と", "で", "の", "について", "のため")
_JA_GENERIC = (
    "今日 明日 確認 対応 問題 解決 チーム レビュー 予定 資料 共有 設計 実装 メモ 課題 改善 "
    "目標 結果"
).split()
_JA_ENDINGS = ("です。", "します。", "しました。", "を確認する。", "が必要です。", "でした。")

SYNTHETIC_QUERIES: list[str] = [
    # keyword
    "kubernetes deployment rollback",
    "postgres replication lag",
    "sourdough starter hydration",
    "marathon interval pace",
    "terraform state module",
    "transformer attention embedding",
    "kyoto ryokan itinerary",
    "compost seedling soil",
    "index fund dividend portfolio",
    "incident postmortem outage",
    # questions
    "how do I rollback a failed kubernetes deployment?",
    "what hydration should the sourdough levain have?",
    "which hotel did we book in lisbon?",
    "how to evaluate retrieval ranking with ndcg and recall",
    "what did we decide about the atlas launch timeline?",
    "when is the tax deadline for the invoice?",
    "why is the redis cache latency so high?",
    # tags
    "#project/atlas",
    "#recipe/bread",
    "#meeting/standup",
    "#travel/japan",
    "#fitness/running",
    # mentions
    "[[Kubernetes Runbook]]",
    "[[Atlas Roadmap]]",
    "[[Sourdough Basics]]",
    "[[Weekly Review]]",
    # CJK
    "机器学习 模型 训练",
    "项目计划 风险",
    "東京 京都 旅行",
    "データベース 設計",
    "会議 議事録",
]
"""Fixed queries over the generator's vocabulary: keywords, questions, tags, mentions, CJK.

Every query targets words, tags or hub notes that exist at any seed once a vault has a few
hundred notes, so latency is measured on queries with non-trivial result sets.
"""


# --------------------------------------------------------------------------------------------
# Generation.
# --------------------------------------------------------------------------------------------


@dataclass
class _Folder:
    path: str
    area: _Area | None
    subtopic: _Subtopic | None
    depth: int
    words: tuple[str, ...] = ()
    weight: float = 1.0
    children: set[str] = field(default_factory=set)


@dataclass
class _Note:
    path: str
    title: str
    kind: str  # home | hub | daily | meeting | person | note | template
    folder: _Folder
    subtopic: _Subtopic | None
    size: int
    lang: str  # en | zh | ja
    date: dt.date


def _title_case(words: list[str]) -> str:
    parts = _dedupe(" ".join(words).split())  # "customer" + "customer impact" -> one "Customer"
    return " ".join(w[:1].upper() + w[1:] for w in parts)


class _Builder:
    """Holds the RNG and the vault plan while notes are laid out and written."""

    def __init__(self, n_notes: int, seed: int) -> None:
        self.rng = random.Random(f"vaultsearch-synthetic:{seed}")
        self.n_notes = n_notes
        self.folders: list[_Folder] = []
        self.notes: list[_Note] = []
        self.titles: set[str] = set()
        self.area_titles: dict[str, list[str]] = {}
        self.all_titles: list[str] = []
        self._cum_cache: dict[int, list[float]] = {}
        self.n_daily = 0
        self.daily_dates: list[dt.date] = []
        self.daily_folders: dict[int, _Folder] = {}
        self.extra_folders: list[str] = []
        self.templates = _Folder("Templates", None, None, 1, weight=0.0)

    # -- helpers ---------------------------------------------------------------------------

    def _zipf_pick(self, items: tuple[str, ...] | list[str]) -> str:
        cum = self._cum_cache.get(len(items))
        if cum is None:
            cum = self._cum_cache[len(items)] = _zipf_cum_weights(len(items), 0.9)
        return self.rng.choices(items, cum_weights=cum)[0]

    def _unique_title(self, title: str) -> str:
        candidate = title
        for i in itertools.count(2):
            if candidate.lower() not in self.titles:
                break
            candidate = f"{title} {i}"
        self.titles.add(candidate.lower())
        return candidate

    def _random_date(self) -> dt.date:
        return dt.date(2020, 1, 1) + dt.timedelta(days=self.rng.randrange(5 * 365))

    def _size(self, median: float, sigma: float) -> int:
        return int(min(40_000, max(150, self.rng.lognormvariate(math.log(median), sigma))))

    # -- layout ----------------------------------------------------------------------------

    def plan_folders(self) -> None:
        """Create area folders, then spend the folder budget on nested sub-folders."""
        rng = self.rng
        n_daily = round(
            self.n_notes * _DAILY_WEIGHT / (_DAILY_WEIGHT + sum(a.weight for a in _AREAS))
        )
        self.n_daily = n_daily
        self.daily_dates = self._daily_dates(n_daily)
        years = sorted({d.year for d in self.daily_dates})
        for area in _AREAS:
            self.folders.append(_Folder(area.name, area, None, 1, weight=1.5))
        fixed = ["Templates", "Attachments", "Journal", "Journal/Daily"]
        fixed += [f"Journal/Daily/{y}" for y in years]
        self.daily_folders = {
            y: _Folder(f"Journal/Daily/{y}", None, None, 3, weight=0.0) for y in years
        }
        target = min(300, max(30, round(self.n_notes / 33)))
        budget = max(0, target - len(_AREAS) - len(fixed))
        area_weights = [a.weight for a in _AREAS]
        next_sub = dict.fromkeys((a.name for a in _AREAS), 0)
        for _ in range(budget):
            area = rng.choices(_AREAS, weights=area_weights)[0]
            in_area = [f for f in self.folders if f.area is area]
            deep = [f for f in in_area if 2 <= f.depth < 4]
            i = next_sub[area.name]
            sub: _Subtopic | None
            if i < len(area.subtopics) and (rng.random() < 0.7 or not deep):
                parent = in_area[0]
                chosen = area.subtopics[i]
                next_sub[area.name] += 1
                name, sub = chosen.name, chosen
            else:
                parent = rng.choice(deep or in_area)
                sub = parent.subtopic
                pool = [*_CHILD_FOLDERS, *(_title_case([w]) for w in area.words)]
                if sub is not None:
                    pool += [_title_case([w]) for w in sub.words]
                free = [p for p in pool if p not in parent.children]
                name = rng.choice(free) if free else _title_case([rng.choice(_PSEUDO_WORDS)])
                if name in parent.children:
                    continue
            parent.children.add(name)
            self.folders.append(
                _Folder(
                    f"{parent.path}/{name}",
                    area,
                    sub,
                    parent.depth + 1,
                    words=tuple(rng.sample(_PSEUDO_WORDS[1500:], 3)) + parent.words[:2],
                    weight=min(10.0, rng.paretovariate(1.3)),
                )
            )
        self.extra_folders = fixed

    def _daily_dates(self, count: int) -> list[dt.date]:
        day = dt.date(2021, 1, 1)
        dates = []
        for _ in range(count):
            dates.append(day)
            day += dt.timedelta(days=2 if self.rng.random() < 0.25 else 1)
        return dates

    def plan_notes(self) -> None:
        """Decide every note's path, title, kind, size and language before writing any."""
        rng = self.rng
        budget = self.n_notes
        root = _Folder("", None, None, 0)
        if budget > 0:
            self._add_note(root, "Home", "home", sub=None, size=self._size(2500, 0.3), lang="en")
            budget -= 1
        for name in ("Daily Template", "Meeting Template", "Book Template"):
            if budget > 20:
                self._add_note(self.templates, name, "template", sub=None, size=400, lang="en")
                budget -= 1
        for area in _AREAS:
            area_root = next(f for f in self.folders if f.path == area.name)
            for title, sub_index in area.hubs:
                if budget > 20:
                    self._add_note(
                        area_root,
                        title,
                        "hub",
                        sub=area.subtopics[sub_index],
                        size=self._size(9000, 0.5),
                        lang="en",
                    )
                    budget -= 1
        n_daily = min(self.n_daily, budget)
        for day in self.daily_dates[:n_daily]:
            note = self._add_note(
                self.daily_folders[day.year],
                day.isoformat(),
                "daily",
                sub=None,
                size=self._size(1300, 0.6),
                lang="en",
            )
            note.date = day
        budget -= n_daily
        area_weights = [a.weight for a in _AREAS]
        by_area = {a.name: [f for f in self.folders if f.area is a] for a in _AREAS}
        for _ in range(budget):
            area = rng.choices(_AREAS, weights=area_weights)[0]
            folders = by_area[area.name]
            folder = rng.choices(folders, weights=[f.weight for f in folders])[0]
            sub = folder.subtopic
            if sub is None and area.subtopics:
                sub = rng.choice(area.subtopics)
            lang = "en"
            if rng.random() < area.cjk_rate:
                lang = "zh" if rng.random() < 0.5 else "ja"
            kind = {"Meetings": "meeting", "People": "person"}.get(area.name, "note")
            title = self._make_title(area, sub, kind, lang)
            size = self._size(3400, 0.98) if kind != "person" else self._size(1200, 0.6)
            self._add_note(folder, title, kind, sub=sub, size=size, lang=lang)

    def _make_title(self, area: _Area, sub: _Subtopic | None, kind: str, lang: str) -> str:
        rng = self.rng
        if kind == "person":
            return f"{rng.choice(_FIRST_NAMES)} {rng.choice(_LAST_NAMES)}"
        if lang != "en" and rng.random() < 0.6:
            pool = area.zh if lang == "zh" else area.ja
            pool = pool or (tuple(_ZH_FUNCTION[-10:]) if lang == "zh" else tuple(_JA_GENERIC))
            return "".join(rng.sample(pool, min(len(pool), rng.randint(2, 3))))
        topic = sub.words if sub else area.words
        if kind == "meeting":
            subject = rng.choice(_CODENAMES) if rng.random() < 0.6 else _title_case([topic[0]])
            name = sub.name.rstrip("s") if sub else "Meeting"
            return f"{self._random_date().isoformat()} {subject} {name}"
        words = [self._zipf_pick(topic)]
        r = rng.random()
        if r < 0.35:
            words.append(self._zipf_pick(topic if rng.random() < 0.5 else area.words))
        elif r < 0.6:
            words.append(rng.choice(_CONTENT_WORDS))
        elif r < 0.8:
            words.append(rng.choice(_PSEUDO_WORDS))  # reads like a name or a bit of jargon
        if rng.random() < 0.35:
            words.append(rng.choice(_CONTENT_WORDS))
        if rng.random() < 0.5:
            words.append(rng.choice(_TITLE_SUFFIXES))
        return _title_case(_dedupe(words))

    def _add_note(
        self,
        folder: _Folder,
        title: str,
        kind: str,
        *,
        sub: _Subtopic | None,
        size: int,
        lang: str,
    ) -> _Note:
        title = self._unique_title(title)
        path = f"{folder.path}/{title}.md" if folder.path else f"{title}.md"
        note = _Note(path, title, kind, folder, sub, size, lang, self._random_date())
        self.notes.append(note)
        self.all_titles.append(title)
        area_name = folder.area.name if folder.area else ""
        self.area_titles.setdefault(area_name, []).append(title)
        return note

    # -- text ------------------------------------------------------------------------------

    def _topic_word(self, note: _Note) -> str:
        rng = self.rng
        area = note.folder.area
        r = rng.random()
        if note.subtopic is not None and r < 0.55:
            return self._zipf_pick(note.subtopic.words)
        if note.folder.words and r < 0.7:
            return rng.choice(note.folder.words)
        if area is not None:
            return self._zipf_pick(area.words)
        return rng.choice(_CONTENT_WORDS)

    def _link(self, note: _Note) -> str:
        rng = self.rng
        area = note.folder.area
        r = rng.random()
        if area is not None and area.hubs and r < 0.35:
            target = rng.choice(area.hubs)[0]
        elif area is not None and r < 0.75:
            target = rng.choice(self.area_titles[area.name])
        else:
            target = rng.choice(self.all_titles)
        if target.lower() not in self.titles:  # a hub skipped in a tiny vault
            target = rng.choice(self.all_titles)
        r = rng.random()
        if r < 0.1:
            return f"[[{target}|{self._topic_word(note)}]]"
        if r < 0.17:
            return f"[[{target}#{rng.choice(_GENERIC_HEADINGS)}]]"
        if r < 0.19:
            return f"![[{target}]]"
        return f"[[{target}]]"

    def _tag(self, note: _Note) -> str:
        rng = self.rng
        area = note.folder.area
        if note.subtopic is not None and rng.random() < 0.6:
            return "#" + rng.choice(note.subtopic.tags)
        if area is not None:
            return "#" + rng.choice(area.tags)
        return "#" + rng.choice(("inbox", "idea", "review", "daily"))

    def _words(self, note: _Note, n: int) -> list[str]:
        rng = self.rng
        words = rng.choices(VOCABULARY, cum_weights=_VOCAB_CUM, k=n)
        for i in range(n):
            if rng.random() < 0.2:
                words[i] = self._topic_word(note)
        return words

    def _sentence(self, note: _Note, lo: int = 6, hi: int = 20) -> str:
        rng = self.rng
        words = self._words(note, rng.randint(lo, hi))
        r = rng.random()
        if r < 0.09:
            words.insert(rng.randrange(len(words) + 1), self._link(note))
        elif r < 0.12:
            i = rng.randrange(len(words))
            words[i] = f"`{words[i].replace(' ', '_')}`"
        elif r < 0.15:
            i = rng.randrange(len(words))
            words[i] = f"**{words[i]}**"
        if rng.random() < 0.04:
            words.append(self._tag(note))
        text = " ".join(words)
        return text[:1].upper() + text[1:] + ("?" if rng.random() < 0.05 else ".")

    def _cjk_sentence(self, note: _Note) -> str:
        rng = self.rng
        area = note.folder.area
        n = rng.randint(4, 10)
        if note.lang == "zh":
            pool = (area.zh if area and area.zh else ()) + tuple(_ZH_FUNCTION)
            parts = [self._zipf_pick(pool) for _ in range(n)]
            if n > 5:
                parts.insert(n // 2, "，")
            out = "".join(parts)
        else:
            pool = (area.ja if area and area.ja else ()) + tuple(_JA_GENERIC)
            out = "".join(
                self._zipf_pick(pool) + rng.choice(_JA_PARTICLES) for _ in range(n // 2 + 1)
            )
            out += rng.choice(("、", "")) + self._zipf_pick(pool)
        r = rng.random()
        if r < 0.15:
            out += f" {self._topic_word(note)} "
        elif r < 0.22:
            out += self._link(note)
        end = "。" if note.lang == "zh" else rng.choice(_JA_ENDINGS)
        return out + end

    def _paragraph(self, note: _Note) -> str:
        count = self.rng.randint(2, 6)
        if note.lang != "en" and self.rng.random() < 0.8:
            return "".join(self._cjk_sentence(note) for _ in range(count))
        return " ".join(self._sentence(note) for _ in range(count))

    def _heading(self, note: _Note) -> str:
        rng = self.rng
        if note.lang != "en" and rng.random() < 0.5:
            return self._cjk_sentence(note).rstrip("。")[:12]
        if rng.random() < 0.5:
            return rng.choice(_GENERIC_HEADINGS)
        return _title_case(_dedupe([self._topic_word(note) for _ in range(rng.randint(1, 3))]))

    def _bullets(self, note: _Note, task: bool = False) -> str:
        rng = self.rng
        lines: list[str] = []
        for _ in range(rng.randint(3, 8)):
            prefix = ("- [x] " if rng.random() < 0.4 else "- [ ] ") if task else "- "
            if rng.random() < 0.15:
                body = self._link(note)
            elif note.lang != "en" and rng.random() < 0.7:
                body = self._cjk_sentence(note)
            else:
                body = self._sentence(note, 3, 10).rstrip(".?")
            indent = "  " if not task and lines and rng.random() < 0.2 else ""
            lines.append(indent + prefix + body)
        return "\n".join(lines)

    def _code(self, note: _Note) -> str:
        rng = self.rng

        def ident() -> str:
            return self._topic_word(note).replace(" ", "_").replace("-", "_")

        lang = rng.choice(_CODE_LANGS)
        lines: list[str] = []
        for _ in range(rng.randint(3, 14)):
            a, b, c = ident(), ident(), ident()
            if lang == "python":
                lines.append(rng.choice((f"def {a}_{b}({c}):", f"    return {a}.{b}({c})")))
            elif lang == "bash":
                cmd = rng.choice(("kubectl", "git", "docker", "terraform", "psql", "make", "curl"))
                lines.append(f"{cmd} {a} --{b} {c}")
            elif lang == "sql":
                sql = f"SELECT {a}, {b} FROM {c} WHERE {a} > {rng.randint(1, 99)};"  # noqa: S608
                lines.append(sql)  # note text for a synthetic vault, never executed
            elif lang == "yaml":
                lines.append(f"{a}:\n  {b}: {c}")
            elif lang == "json":
                lines.append(f'{{"{a}": "{b}", "{c}": {rng.randint(0, 999)}}}')
            elif lang == "typescript":
                lines.append(f"const {a} = await {b}.{c}();")
            else:
                lines.append(f"fn {a}({b}: &{c.title()}) -> Result<()> {{ Ok(()) }}")
        return f"```{lang}\n" + "\n".join(lines) + "\n```"

    def _table(self, note: _Note) -> str:
        rng = self.rng
        cols = [_title_case([self._topic_word(note)]) for _ in range(3)]
        rows = ["| " + " | ".join(cols) + " |", "|---|---|---|"]
        for _ in range(rng.randint(2, 5)):
            rows.append("| " + " | ".join(self._topic_word(note) for _ in range(3)) + " |")
        return "\n".join(rows)

    def _callout(self, note: _Note) -> str:
        kind = self.rng.choice(("note", "tip", "warning", "info", "question"))
        return f"> [!{kind}] {self._heading(note)}\n> {self._sentence(note)}"

    def _frontmatter(self, note: _Note) -> str:
        rng = self.rng
        area = note.folder.area
        lines = ["---"]
        if rng.random() < 0.6:
            lines.append(f"title: {note.title}")
        if rng.random() < 0.2:
            alias = _title_case([self._topic_word(note), self._topic_word(note)])
            if rng.random() < 0.5:
                lines.append(f"aliases: [{alias}]")
            else:
                lines += ["aliases:", f"  - {alias}", f"  - {note.title.lower()}"]
        tag_pool = list(area.tags) if area else ["note"]
        if note.subtopic is not None:
            tag_pool += note.subtopic.tags
        if note.kind == "daily":
            tag_pool = ["daily", "journal"]
        r = rng.random()
        if r < 0.75:
            tags = _dedupe(rng.sample(tag_pool, min(len(tag_pool), rng.randint(1, 3))))
            style = rng.random()
            if style < 0.4:
                lines.append(f"tags: [{', '.join(tags)}]")
            elif style < 0.75:
                lines += ["tags:", *(f"  - {t}" for t in tags)]
            elif style < 0.9:
                lines.append(f"tags: {' '.join(tags)}")
            else:
                lines.append(f'tags: "#{tags[0]}"')
        if rng.random() < 0.8:
            created = note.date.isoformat()
            if rng.random() < 0.3:
                created += f"T{rng.randrange(24):02d}:{rng.randrange(60):02d}:00"
            lines.append(f"created: {created}")
        if note.kind in ("note", "hub") and rng.random() < 0.4:
            lines.append(f"status: {rng.choice(_STATUSES)}")
        lines.append("---")
        return "\n".join(lines) if len(lines) > 2 else ""

    def _body(self, note: _Note) -> str:
        rng = self.rng
        parts: list[str] = []
        if note.kind == "template":
            return (
                "---\ntags: [template]\ncreated: {{date}}\n---\n# {{title}}\n\n"
                "## Notes\n\n## Tasks\n- [ ] \n"
            )
        has_frontmatter = note.kind in ("hub", "person") or rng.random() < 0.75
        if has_frontmatter:
            fm = self._frontmatter(note)
            if fm:
                parts.append(fm)
        if note.kind != "daily" and rng.random() < 0.7:
            parts.append(f"# {note.title}")
        if note.kind == "home":
            hubs = [t for a in _AREAS for t, _ in a.hubs if t.lower() in self.titles]
            parts.append("Start here. " + " ".join(f"[[{h}]]" for h in hubs))
        elif note.kind == "daily":
            parts.append("## Log")
        elif note.kind == "meeting":
            people = self.area_titles.get("People", [])
            attendees = rng.sample(people, min(len(people), rng.randint(2, 5)))
            parts.append("## Attendees\n" + "\n".join(f"- [[{p}]]" for p in attendees))
            parts.append("## Agenda\n" + self._bullets(note))
        parts.append(self._paragraph(note))
        size = sum(len(p.encode("utf-8")) for p in parts)
        area = note.folder.area
        code_rate = area.code_rate if area else 0.01
        in_h2 = False
        while size < note.size:
            r = rng.random()
            if r < 0.13:
                block = f"## {self._heading(note)}"
                in_h2 = True
            elif r < 0.19 and in_h2:
                block = f"### {self._heading(note)}"
            elif r < 0.31:
                block = self._bullets(note)
            elif r < 0.36:
                block = self._bullets(note, task=True)
            elif r < 0.36 + code_rate:
                block = self._code(note)
            elif r < 0.40 + code_rate:
                block = self._callout(note) if rng.random() < 0.5 else f"> {self._sentence(note)}"
            elif r < 0.415 + code_rate:
                block = self._table(note)
            else:
                block = self._paragraph(note)
            parts.append(block)
            size += len(block.encode("utf-8")) + 2
        return "\n\n".join(parts) + "\n"

    # -- output ----------------------------------------------------------------------------

    def write(self, root: Path) -> None:
        """Write all notes plus the non-note files real vaults carry (config, trash, canvas)."""
        for folder in self.extra_folders + [f.path for f in self.folders]:
            (root / folder).mkdir(parents=True, exist_ok=True)
        for note in self.notes:
            path = root / note.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self._body(note), encoding="utf-8")
        obsidian = root / ".obsidian"
        obsidian.mkdir(exist_ok=True)
        (obsidian / "app.json").write_text('{"alwaysUpdateLinks": true}\n', encoding="utf-8")
        (obsidian / "workspace.json").write_text('{"main": {}}\n', encoding="utf-8")
        trash = root / ".trash"
        trash.mkdir(exist_ok=True)
        # Dot-folders must be skipped; this deleted note would match common queries if not.
        (trash / "Old Kubernetes Rollback Notes.md").write_text(
            "# Old Kubernetes Rollback Notes\n\nkubernetes deployment rollback postgres "
            "replication lag sourdough starter hydration #project/atlas\n",
            encoding="utf-8",
        )
        canvas = {"nodes": [{"id": "1", "type": "file", "file": "Home.md"}], "edges": []}
        (root / "Attachments" / "Overview.canvas").write_text(
            json.dumps(canvas) + "\n", encoding="utf-8"
        )


def generate_vault(root: Path, n_notes: int, seed: int = 0) -> None:
    """Write a deterministic synthetic vault of ``n_notes`` markdown notes under ``root``.

    The same ``(n_notes, seed)`` always produces byte-identical files, so benchmark numbers
    from different machines or runs are comparable.

    Args:
        root: Directory to create; must not exist yet or be empty, so we never mix a new
            vault into an old one.
        n_notes: Number of ``.md`` notes outside dot-folders.
        seed: Changes which notes exist and what they say; vocabulary and queries stay fixed.

    Raises:
        FileExistsError: If ``root`` exists and is not empty.
        ValueError: If ``n_notes`` is negative.
    """
    if n_notes < 0:
        raise ValueError("n_notes must be >= 0")
    if root.exists() and any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty")
    root.mkdir(parents=True, exist_ok=True)
    builder = _Builder(n_notes, seed)
    builder.plan_folders()
    builder.plan_notes()
    builder.write(root)


def _describe(root: Path) -> str:
    sizes = sorted(p.stat().st_size for p in root.rglob("*.md") if ".trash" not in p.parts)
    folders = sum(1 for p in root.rglob("*") if p.is_dir() and not p.name.startswith("."))
    if not sizes:
        return f"{root}: empty vault"
    return (
        f"{root}: {len(sizes)} notes, {folders} folders, {sum(sizes) / 2**20:.1f} MB, "
        f"median {statistics.median(sizes) / 1024:.1f} KB, mean {statistics.mean(sizes) / 1024:.1f}"
        f" KB, max {sizes[-1] / 1024:.1f} KB, >=10 KB: {sum(s >= 10240 for s in sizes)}"
    )


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: generate one vault and print its shape.

    Args:
        argv: Arguments (defaults to ``sys.argv[1:]``).

    Returns:
        Process exit code.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("out_dir", type=Path, help="directory to create (must be empty)")
    parser.add_argument("--notes", type=int, default=1000, help="number of notes (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    try:
        generate_vault(args.out_dir, args.notes, args.seed)
    except (FileExistsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(_describe(args.out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
