"""Engines built from the previous request give exactly what the whole-request computations give."""

from __future__ import annotations

import importlib
import random
import re
from typing import Any

import bm25s
import numpy as np
from engine_helpers import load, tool_session

from contextlab.engines import parts
from contextlab.engines.masking import IncrementalMask


def _ranking() -> Any:
    engine = load("retrieval")
    return importlib.import_module(type(engine).__module__ + ".ranking")


def test_incremental_bm25_scores_equal_bm25s_through_adds_and_removes() -> None:
    ranking = _ranking()
    rng = random.Random(3)
    words = [f"w{i}" for i in range(50)]
    for trial in range(120):
        index, live, gone = ranking.BM25Index(), {}, {}
        for step in range(rng.randint(1, 20)):
            if live and rng.random() < 0.3:
                key = rng.choice(list(live))
                index.remove(key)
                gone[key] = live.pop(key)
            elif gone and rng.random() < 0.2:  # a removed document comes back (a new slot)
                key = rng.choice(list(gone))
                live[key] = gone.pop(key)
                index.add(key, live[key])
            else:
                key = f"{trial}-{step}"
                live[key] = [rng.choice(words) for _ in range(rng.randint(0, 30))]
                index.add(key, live[key])
            if not live or rng.random() < 0.4:
                continue  # query after some steps: cached term arrays are extended or dropped between
            keys = list(live)
            rng.shuffle(keys)
            terms = sorted({rng.choice([*words, "absent"]) for _ in range(rng.randint(1, 6))})
            reference = bm25s.BM25()
            reference.index([live[k] or [""] for k in keys], show_progress=False)
            assert index.scores(keys, terms) == [float(s) for s in reference.get_scores(terms)]
            assert ranking.rank_indexed(index, keys, terms) == ranking.rank_groups([live[k] for k in keys], terms)


def test_score_order_equals_the_rounded_python_sort() -> None:
    ranking = _ranking()
    rng = random.Random(5)
    for _ in range(400):
        n = rng.randint(0, 60)
        scale = rng.choice([1e-12, 1e-10, 1e-9, 3e-9, 1e-6, 1.0, 20.0])
        pool = [rng.random() * scale for _ in range(rng.randint(1, 8))]
        # Few distinct values, some exactly on or next to a rounding boundary of 1e-9.
        pool += [k * 1e-9 + 5e-10 + d for k in range(3) for d in (-1e-18, 0.0, 1e-18)]
        scores = [float(np.float32(rng.choice(pool))) if rng.random() < 0.5 else rng.choice(pool) for _ in range(n)]
        expected = sorted(range(n), key=lambda i: (-round(scores[i], 9), -i))
        assert ranking.score_order(scores) == expected


def test_index_slots_follow_growing_keys_and_re_added_documents() -> None:
    ranking = _ranking()
    index = ranking.BM25Index()
    texts = {key: [key, "x"] for key in "abcd"}

    def check(keys: list[str]) -> None:
        reference = bm25s.BM25()
        reference.index([texts[k] for k in keys], show_progress=False)
        assert index.scores(keys, ["x", "a"]) == [float(s) for s in reference.get_scores(["x", "a"])]

    for key in "ab":
        index.add(key, texts[key])
    check(["a", "b"])
    for key in "cd":
        index.add(key, texts[key])
    check(["a", "b", "c", "d"])  # the keys grew: only the new ones are looked up
    check(["b", "a", "c", "d"])  # reordered
    index.remove("a")
    texts["a"] = ["z"]
    index.add("a", texts["a"])  # a new slot and new text: the scores follow it, not the old slot
    check(["b", "a", "c", "d"])


def test_tokenize_equals_bm25s_tokenize() -> None:
    ranking = _ranking()
    rng = random.Random(7)
    pieces = [
        "The",
        "parser",
        "state",
        "isn't",
        "reset",
        "file_3.py",
        "ÉTÉ",
        "a",
        "I",
        "x2",
        "--",
        "été",
        "Ωmega",
        "42",
    ]
    texts = ["", "the a an", *(" ".join(rng.choices(pieces, k=rng.randint(1, 30))) for _ in range(300))]
    for text in texts:
        found = bm25s.tokenize([text], stopwords=ranking.STOPWORDS, return_ids=False, show_progress=False)
        assert ranking.tokenize(text) == [t for t in found[0] if t]


def test_query_terms_memo_gives_the_joined_texts_terms() -> None:
    ranking = _ranking()
    memo: dict[str, frozenset[str]] = {}
    rows = tool_session(6)
    incoming = {"role": "user", "content": "Why does file_3.py fail? The parser-state isn't reset"}
    assert ranking.query_terms(incoming, rows, memo) == ranking.query_terms(incoming, rows)
    assert memo  # texts are remembered for the next request


def test_incremental_mask_equals_mask_view_as_the_request_grows() -> None:
    rows = [{"role": "system", "content": "s"}, *tool_session(40, users=4)]
    for options in (
        {"window_m": 3, "polling": 1},
        {"window_m": 5, "polling": 4, "keep_first_observation": False},
        {"window_m": 2, "polling": 1, "exempt_tools": ("read_file",)},
    ):
        mask = IncrementalMask(**options)  # type: ignore[arg-type]
        for end in range(1, len(rows) + 1, 3):
            assert mask.view(rows[:end]) == parts.mask_view(rows[:end], **options)  # type: ignore[arg-type]
        # A request that does not extend the previous one (a compaction) is masked from scratch.
        shorter = rows[:1] + rows[20:]
        assert mask.view(shorter) == parts.mask_view(shorter, **options)  # type: ignore[arg-type]


def test_word_runs_equal_bm25s_pattern_without_spaces() -> None:
    ranking = _ranking()
    rng = random.Random(8)
    pieces = [*"aZ9_ .-'\u0301\u00e9\u03a9\u0660\u2028\t", "x2", "ÉTÉ", "__", "٣٤"]
    plain = re.compile(r"(?u)\b\w\w+\b").findall
    for _ in range(3000):
        text = "".join(rng.choices(pieces, k=rng.randint(0, 25)))
        assert ranking._SPLIT(text) == plain(text), text
