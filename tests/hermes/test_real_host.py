"""With the real Hermes host installed (``hermes-agent`` from PyPI, in a dedicated environment).

Its ``agent`` package replaces contextlab's stand-in: plugins written for the host subclass *its*
``agent.context_engine.ContextEngine`` (an older ABC without ``select_context``, ``clone_for_agent``
and the other newer hooks). Every bundled engine and a plugin written exactly as the host's guide
shows must still load, replay and pass ``contextlab check``; the hook dispatch must skip the host
ABC's defaults as it skips contextlab's; and ``hermes.compressor`` replays the real compressor.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest

from tests.hermes.conftest import REPO, run_python
from tests.plugin_helpers import HOST_GUIDE_PLUGIN, write_plugin

BUNDLED = ["mask_window", "clear_tool_uses", "summary", "hybrid", "lcm", "retrieval"]


def test_the_real_agent_package_wins_and_every_engine_loads(hermes_python: Path) -> None:
    out = run_python(
        hermes_python,
        """
        import json, agent, agent.context_engine as ce
        from contextlab.compat import host_engine_class
        from contextlab.engine import ContextEngine, overrides
        from contextlab.plugins import Registry
        registry = Registry()
        loaded = {}
        for info in registry.list():
            row = {"available": info.available, "error": info.error}
            if info.available:
                engine = registry.load(info.name)
                row["real_abc"] = isinstance(engine, ce.ContextEngine)
                row["ours"] = isinstance(engine, ContextEngine)
                row["hooks"] = sorted(h for h in ("select_context", "on_turn_complete", "prune_tool_results_only",
                    "should_compress_preflight", "on_session_start", "get_tool_schemas") if overrides(engine, h))
            loaded[info.name] = row
        print(json.dumps({"shim": getattr(agent, "__contextlab_shim__", False), "agent": agent.__file__,
                          "host_abc": host_engine_class() is ce.ContextEngine, "engines": loaded}))
        """,
    )
    assert out["shim"] is False and "site-packages" in out["agent"]
    assert out["host_abc"] is True
    engines = out["engines"]
    for name in [*BUNDLED, "compressor", "passthrough", "hermes.compressor"]:
        if name == "retrieval" and not engines[name]["available"]:
            assert "bm25s" in engines[name]["error"]  # the [retrieval] extra is not part of [hermes]
            continue
        assert engines[name]["available"], (name, engines[name])
    for name in ["mask_window", "clear_tool_uses", "summary", "hybrid", "lcm"]:
        assert engines[name]["real_abc"] and not engines[name]["ours"], name  # they subclass the host's ABC
    assert engines["compressor"]["ours"] and not engines["compressor"]["real_abc"]
    assert engines["hermes.compressor"]["real_abc"]
    # Hook dispatch: what an engine defines counts, what it inherits from either ABC does not.
    assert engines["mask_window"]["hooks"] == ["select_context"]
    assert engines["clear_tool_uses"]["hooks"] == ["prune_tool_results_only"]
    assert "get_tool_schemas" in engines["lcm"]["hooks"]
    assert engines["passthrough"]["hooks"] == []
    assert engines["hermes.compressor"]["hooks"] == ["on_session_start"]  # the real compressor's own hook


def test_a_guide_plugin_on_the_real_abc_loads_replays_and_passes_check(hermes_python: Path, tmp_path: Path) -> None:
    write_plugin(tmp_path, "guide_lcm", HOST_GUIDE_PLUGIN)
    out = run_python(
        hermes_python,
        f"""
        import json, agent.context_engine as ce
        from contextlab import plugins, replay
        from contextlab.conformance_data import coding_session
        from contextlab.testing import check_engine
        plugins.add_plugin_path({str(tmp_path)!r})
        engine = plugins.load_engine("guide_lcm")
        result = replay("datasets/coding-agent-short.jsonl.gz", "guide_lcm", context_length=16000)
        quick = [coding_session(turns=3, loops=4)]
        reports = {{name: check_engine(name, transcripts=quick, threads=2).to_dict()
                   for name in ("guide_lcm", "mask_window", "clear_tool_uses", "summary", "hybrid", "lcm")}}
        print(json.dumps({{"real_abc": isinstance(engine, ce.ContextEngine), "status": result.status,
                          "requests": int(result.summary["requests"]), "reports": reports}}))
        """,
    )
    assert out["real_abc"] is True
    assert out["status"] == "ok" and out["requests"] == 21
    for name, report in out["reports"].items():
        # The guide's engine never compacts (its compress is a no-op), so it may fail only that rule.
        allowed = {"compacts_under_threshold"} if name == "guide_lcm" else set()
        assert {f["rule"] for f in report["failures"]} <= allowed, (name, report["failures"])


def test_hermes_compressor_replays_every_bundled_dataset_offline(hermes_python: Path) -> None:
    out = run_python(
        hermes_python,
        """
        import json
        import agent.context_compressor as cc
        calls = []
        def no_network(*args, **kwargs):
            calls.append(kwargs.get("task"))
            raise RuntimeError("the network must not be used")
        cc.call_llm = no_network  # installed before contextlab routes the compressor's summary call
        from contextlab import replay
        from contextlab.datasets import DATASETS
        rows = {}
        for name, window in (("coding-agent-short", 16000), ("support-agent", 64000), ("coding-agent", 128000)):
            result = replay(f"datasets/{name}.jsonl.gz", "hermes.compressor", context_length=window)
            events = result.compactions
            committed = events[events["outcome"] == "committed"] if len(events) else events
            rows[name] = {"status": result.status, "requests": int(result.summary["requests"]),
                          "compactions": int(result.summary["compactions"]),
                          "violations": int(result.summary["violations"]),
                          "overflows": int(result.summary["overflows"]),
                          "engine": result.summary["engine"]}
        print(json.dumps({"rows": rows, "network_calls": calls, "datasets": sorted(DATASETS)}))
        """,
        timeout=1500,
    )
    assert out["network_calls"] == []
    assert set(out["rows"]) == set(out["datasets"])
    for name, row in out["rows"].items():
        assert row["status"] == "ok", (name, row)
        assert row["engine"] == "hermes.compressor"
        assert row["violations"] == 0 and row["overflows"] == 0, (name, row)
    assert out["rows"]["coding-agent"]["compactions"] >= 1
    assert out["rows"]["coding-agent-short"]["compactions"] >= 1


def test_the_summary_comes_from_contextlabs_summarizer(hermes_python: Path) -> None:
    out = run_python(
        hermes_python,
        """
        import json
        from contextlab.engines import resolve_engine
        from contextlab.datasets import load_dataset
        engine = resolve_engine("hermes.compressor", {"context_length": 16000})
        engine.update_model("gpt-4o", 16000)
        t = load_dataset("coding-agent-short")
        out = engine.compress([dict(m) for m in t.messages], force=True)
        summary = next(m["content"] for m in out if "summary" in str(m.get("content", "")).lower()[:400])
        print(json.dumps({"before": len(t.messages), "after": len(out), "summary": summary[:3000],
                          "error": getattr(engine, "_last_summary_error", None)}))
        """,
    )
    assert out["after"] < out["before"]
    assert out["error"] is None
    # The extractive summarizer fills the host's headings from the turns (no "summary unavailable").
    assert "## " in out["summary"] or "Goal" in out["summary"]
    assert "unavailable" not in out["summary"].lower()


@pytest.mark.parametrize("layout", ["context_engine", "plugins"])
def test_cli_plugin_path_and_config_with_the_real_host(hermes_python: Path, tmp_path: Path, layout: str) -> None:
    root = tmp_path / "plugins" / "context_engine" if layout == "context_engine" else tmp_path / "plugins"
    write_plugin(root, "guide_lcm", HOST_GUIDE_PLUGIN)
    given = root if layout == "context_engine" else tmp_path / "plugins"
    config = tmp_path / "config.yaml"
    config.write_text("context:\n  engine: guide_lcm\nmodel:\n  context_length: 16000\n")
    out = run_python(
        hermes_python,
        f"""
        import io, json, contextlib
        from contextlab.cli import main
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            code = main(["replay", "datasets/coding-agent-short.jsonl.gz", "--plugin-path", {str(given)!r},
                         "--config", {str(config)!r}, "--json"])
        print(json.dumps({{"code": code, "summary": json.loads(buffer.getvalue())}}))
        """,
    )
    assert out["code"] == 0
    assert out["summary"]["engine"] == "guide_lcm"
    assert out["summary"]["context_length"] == 16000  # model.context_length from the config


def test_the_differential_benchmark_lists_where_the_two_compressors_differ(hermes_python: Path, tmp_path: Path) -> None:
    out = tmp_path / "diff.csv"
    done = subprocess.run(
        [
            str(hermes_python),
            "benchmarks/hermes_differential.py",
            "datasets/coding-agent-short.jsonl.gz",
            "--context-length",
            "16000",
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("hermes-agent 0.19.0 vs contextlab")
    assert "coding-agent-short (port rules newest): 21 requests; decisions differ at" in done.stdout
    rows = pd.read_csv(out)
    assert len(rows) == 42 and {"rules", "port_compressed", "hermes_compressed", "token_delta"} <= set(rows.columns)
    newest, old = rows[rows["rules"] == "newest"], rows[rows["rules"] == "0.19.0"]
    # The listed differences are the rows whose decisions differ, nothing else.
    listed = int(done.stdout.split("decisions differ at ")[1].split(",")[0])
    assert listed == int(newest["decision_differs"].sum())
    # With every version-gated rule switched back to 0.19.0, nothing is left unexplained: the port
    # decides what the real 0.19.0 compressor decides and sends the same prompt tokens.
    assert int(old["decision_differs"].sum()) == 0 and (old["token_delta"] == 0).all()
    assert int(old["port_compressed"].sum()) == int(old["hermes_compressed"].sum()) >= 1


def test_the_user_turn_a_compaction_keeps_is_the_real_hosts(hermes_python: Path) -> None:
    """contextlab's guard (``contextlab.host.user_turn``) against the real host's
    ``_ensure_compressed_has_user_turn`` on the cases its rules tell apart: a summary merged into the
    newest ask, a role-flipped summary, scaffolding only, tool rows, a trailing todo snapshot."""
    cases = run_python(
        hermes_python,
        """
        import copy, json
        from agent.conversation_compression import _ensure_compressed_has_user_turn
        from contextlab import hermes_texts as t
        from contextlab.host.user_turn import ensure_user_turn
        summary = t.SUMMARY_PREFIX + " work so far\\n\\n" + t.END_MARKER
        ask = {"role": "user", "content": "Fix the login bug", "message_uid": "u1"}
        later = {"role": "user", "content": "and add a test", "message_uid": "u2"}
        calls = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                 "function": {"name": "read", "arguments": "{}"}}]}
        result = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
        reply = {"role": "assistant", "content": "done"}
        todo = {"role": "user", "content": "[Your active task list was preserved across context compression]\\n- x",
                "_todo_snapshot_synthetic": True}
        merged = {"role": "user", "content": summary + "\\n\\n" + later["content"], "_compressed_summary": True}
        flipped = {"role": "user", "content": summary, "_compressed_summary": True}
        before = [ask, reply, later, calls, result]
        cases = {
            "merged into the newest ask": [merged, calls, result, reply],
            "role-flipped summary first": [flipped, calls, result],
            "summary then tool rows then reply": [flipped, calls, result, reply, calls, result],
            "assistant summary only": [{"role": "assistant", "content": summary}],
            "trailing todo snapshot": [{"role": "assistant", "content": summary}, todo],
            "ask survives": [flipped, later, calls, result],
            "no human anywhere": [{"role": "assistant", "content": summary}],
        }
        out = {}
        for name, compacted in cases.items():
            source = before if name != "no human anywhere" else [todo, reply]
            theirs = copy.deepcopy(compacted)
            _ensure_compressed_has_user_turn(copy.deepcopy(source), theirs)
            ours = ensure_user_turn(copy.deepcopy(compacted), copy.deepcopy(source))
            strip = lambda rows: [{k: v for k, v in m.items() if k != "_db_persisted"} for m in rows]
            out[name] = [strip(theirs), strip(ours)]
        print(json.dumps(out))
        """,
    )
    for name, (theirs, ours) in cases.items():
        assert ours == theirs, name


@pytest.mark.parametrize(
    ("session", "requests", "store", "compactions"),
    [
        ("fa812bfe-b295-4cca-9c2f-fdf01028cb46", 157, True, 6),
        # Compactions here barely clear the threshold: with the CLI's session store each commit ends
        # the session for the compressor (commit_memory_session -> on_session_end), which clears its
        # ineffective strikes, so it compacts 23 times; a host without one stops it at 18.
        ("ae4a77f8-aedd-4bc1-888f-c94edc91af04", 217, True, 23),
        ("ae4a77f8-aedd-4bc1-888f-c94edc91af04", 217, False, 18),
    ],
)
def test_a_real_session_compacts_as_the_real_host_compacts_it(
    hermes_python: Path,
    shared_transcripts: Path,
    tmp_path: Path,
    session: str,
    requests: int,
    store: bool,
    compactions: int,
) -> None:
    """Claude Code sessions at 32K, where compactions within long tool loops barely free anything:
    the real compressor's preflight deferral and anti-thrash verdict depend on what the host sets on
    the engine after each commit (awaiting real usage, the compacted rough size, the completed-boundary
    record) and on the session hooks of the boundary. With them, the port under the 0.19.0 rules
    decides what the real 0.19.0 compressor decides, request by request, with the same prompt tokens."""
    out = tmp_path / "diff.csv"
    path = shared_transcripts / "claude-code" / f"{session}.jsonl"
    args = ["--context-length", "32000", "--rules", "0.19.0", "--out", str(out)]
    if not store:
        args.append("--no-session-store")
    done = subprocess.run(
        [str(hermes_python), "benchmarks/hermes_differential.py", str(path), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = pd.read_csv(out)
    assert len(rows) == requests
    assert int(rows["hermes_compressed"].sum()) == compactions
    assert int(rows["decision_differs"].sum()) == 0 and (rows["token_delta"] == 0).all()


def test_the_preflight_deferral_is_the_real_compressors(hermes_python: Path) -> None:
    """The port's deferral state (``should_defer_preflight_to_real_usage`` and the two rough baselines
    ``update_from_response`` and the host keep) against the real 0.19.0 compressor's, on seeded
    random sequences of host events around the threshold: a committed compaction (what the host sets
    on the engine), a provider usage report, and a rough preflight estimate. Every answer and both
    baselines must agree after every event."""
    found = run_python(
        hermes_python,
        """
        import json, random
        from contextlab.engines.hermes_compressor import hermes_compressor_class
        from contextlab.plugins import load_engine
        window = 64_000
        theirs = hermes_compressor_class()(context_length=window)
        ours = load_engine("compressor", {"context_length": window, "hermes_rules": "0.19.0"})
        assert theirs.threshold_tokens == ours.threshold_tokens, (theirs.threshold_tokens, ours.threshold_tokens)
        threshold = ours.threshold_tokens
        rng = random.Random(20261204)
        log, kinds = [], set()
        for step in range(3_000):
            near = threshold + rng.randint(-9_000, 9_000)
            event = rng.choice(["commit", "usage", "usage", "defer", "defer", "defer"])
            answers = []
            for engine in (theirs, ours):
                if event == "commit":  # upstream's compress_context after a committed pass
                    engine.last_compression_rough_tokens = near
                    engine.last_prompt_tokens = -1
                    engine.last_completion_tokens = 0
                    engine.awaiting_real_usage_after_compression = True
                    answers.append(None)
                elif event == "usage":
                    engine.update_from_response({"prompt_tokens": near - 4_000, "completion_tokens": 10})
                    answers.append(None)
                else:
                    answers.append(engine.should_defer_preflight_to_real_usage(near))
                answers.append([engine.last_rough_tokens_when_real_prompt_fit, engine.last_compression_rough_tokens,
                                engine.awaiting_real_usage_after_compression, engine.last_real_prompt_tokens])
            if event == "defer":
                kinds.add(answers[0])
            if answers[:2] != answers[2:]:
                log.append([step, event, near, answers])
        print(json.dumps({"differ": log[:5], "count": len(log), "kinds": sorted(kinds)}))
        """,
    )
    assert found["kinds"] == [False, True]  # the sequences reach both answers
    assert found["count"] == 0, found["differ"]


def test_the_tail_anchor_of_the_0_19_0_rules_is_the_real_compressors(hermes_python: Path) -> None:
    """Under ``hermes_rules="0.19.0"`` the tail keeps the newest user row the real 0.19.0 compressor
    anchors on (``_find_last_user_message_idx``: any user row whose content is not a summary), on
    rows the newer rules tell apart: blank, image-only, a todo snapshot, a continuation marker, a
    summary by metadata only, a summary by content, a merged summary."""
    found = run_python(
        hermes_python,
        """
        import json
        from contextlab import hermes_texts as t
        from contextlab.engines.compressor import assembly, boundaries
        from contextlab.engines.hermes_compressor import hermes_compressor_class
        real = hermes_compressor_class()(context_length=64_000)
        rows = {
            "blank": {"role": "user", "content": "  "},
            "image": {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]},
            "todo": {"role": "user", "content": t.TODO_HEADER + "\\n- [ ] a"},
            "marker": {"role": "user", "content": t.CONTINUATION_USER[0]},
            "flag only": {"role": "user", "content": "plain words", t.SUMMARY_KEY: True},
            "summary": {"role": "user", "content": t.SUMMARY_PREFIX + "\\nold work"},
            "merged": {"role": "user",
                       "content": t.PRIOR_HEADER + "\\nask\\n\\n" + t.PRIOR_DELIMITER + "\\n" + t.SUMMARY_PREFIX},
        }
        out = {}
        for name, row in rows.items():
            messages = [{"role": "user", "content": "the ask"}, {"role": "assistant", "content": "ok"}, row,
                        {"role": "assistant", "content": "next"}]
            ours = boundaries.last_real_user(messages, 0, assembly.is_user_anchor_0_19_0)
            out[name] = [real._find_last_user_message_idx(messages, 0), -1 if ours is None else ours]
        print(json.dumps(out))
        """,
    )
    assert all(theirs == ours for theirs, ours in found.values()), found
    assert found["todo"][0] == 2 and found["summary"][0] == 0  # the cases do tell the rules apart


def test_requests_carry_tool_arguments_and_surrogates_as_the_real_host_sends_them(hermes_python: Path) -> None:
    """The wire form against the real 0.19.0 sanitizers: malformed tool-call arguments repaired as its
    ``_repair_tool_call_arguments`` repairs them (every cut of a flat object, and the fixed cases on
    which 0.19.0 and the newer bracket rule agree: docs/host-loop.md), and lone surrogates replaced
    where its ``_sanitize_messages_surrogates`` replaces them."""
    found = run_python(
        hermes_python,
        r"""
        import copy, json, random
        from agent.message_sanitization import _repair_tool_call_arguments, _sanitize_messages_surrogates
        from contextlab.messages import wire_message
        from contextlab.tool_arguments import repaired_arguments
        cases = ["", "  ", "None", '{"cmd": "ls\n-la"}', '{"a": [1, 2,]}', '{"a": 1,}', '[1, 2', '{"a": 1}}}',
                 "not json", "{'a': 1}", '{"a": "never closed']
        rng = random.Random(20261204)
        for _ in range(300):
            flat = {f"k{i}": rng.choice(["v", 12, True, None, "x y", "t\tab"]) for i in range(rng.randint(1, 4))}
            whole = json.dumps(flat, separators=rng.choice([(",", ":"), (", ", ": ")]))
            cases.append(whole[: rng.randint(0, len(whole))])
        repairs = [[c, _repair_tool_call_arguments(c, "t"), repaired_arguments(c)] for c in cases]
        half = "\ud83d"
        messages = [
            {"role": "user", "content": f"fix {half} now"},
            {"role": "assistant", "content": [{"type": "text", "text": f"part {half}"}], "name": f"n{half}",
             "reasoning_content": f"why {half}", "extra": {"deep": [f"x{half}", 1]},
             "tool_calls": [{"id": f"c{half}", "type": "function",
                             "function": {"name": f"t{half}", "arguments": '{"a":1}'}}]},
            {"role": "tool", "tool_call_id": f"c{half}", "content": f"out {half}"},
        ]
        theirs = copy.deepcopy(messages)
        _sanitize_messages_surrogates(theirs)
        ours = [wire_message(m, echo_reasoning=True) for m in messages]  # an echo route keeps reasoning_content
        print(json.dumps({"repairs": [r for r in repairs if r[1] != r[2]][:5], "cases": len(repairs),
                          "swept_equal": ours == theirs, "ours": repr(ours)[:400], "theirs": repr(theirs)[:400]},
                         ensure_ascii=True))
        """,
    )
    assert found["cases"] > 300
    assert found["repairs"] == []
    assert found["swept_equal"], (found["ours"], found["theirs"])


def test_secret_redaction_is_the_real_hosts(hermes_python: Path, shared_transcripts: Path) -> None:
    """``contextlab.redact`` against the real 0.19.0 ``redact_sensitive_text``,
    string for string: the rule pieces of ``tests/engines/redaction_reference.py`` in random texts, each
    fixed case of that file, and every distinct message and tool-call text of the recorded
    transcripts (their Django settings, config files and `.env` dumps)."""
    found = run_python(
        hermes_python,
        f"""
        import glob, json, random
        from agent.redact import redact_sensitive_text
        from contextlab.redact import redact_uncached
        from contextlab.messages import content_text
        from contextlab.transcripts import load_transcripts
        from tests.engines.redaction_reference import CASES, PIECES
        rng = random.Random(20261205)
        from contextlab.redact import _PREFIXED_KEYS
        keys = [p + body for p, _ in _PREFIXED_KEYS for body in ("AbC12xy_-=z", "Z" * 16, "a1" * 16, "1-")]
        pieces = PIECES + keys + ["\\u00e9", "\\u2192", "ſecret=", "K", "İ"]
        texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(20000)] + keys
        texts += [text for text, _expected in CASES]
        recorded = []
        for path in sorted(glob.glob({str(shared_transcripts)!r} + "/**/*.json*", recursive=True)):
            try:
                transcripts = load_transcripts(path)
            except Exception:
                continue  # a file that is not a transcript (a results table)
            for t in transcripts:
                for m in t.messages:
                    recorded.append(content_text(m))
                    calls = m.get("tool_calls") or []
                    recorded += [str((c.get("function") or {{}}).get("arguments", "")) for c in calls]
        texts += list(dict.fromkeys(recorded))
        differ = [t for t in texts if redact_uncached(t) != redact_sensitive_text(t)]
        print(json.dumps({{"texts": len(texts), "recorded": len(set(recorded)),
                          "masked": sum(redact_sensitive_text(t) != t for t in texts), "differ": differ[:3]}}))
        """,
    )
    assert found["recorded"] > 10_000
    assert found["masked"] > 5_000
    assert found["differ"] == []


def test_reasoning_on_the_wire_is_the_real_hosts(hermes_python: Path) -> None:
    """``contextlab.reasoning`` against the real 0.19.0 host: the echo route (its three
    ``_needs_*_tool_reasoning`` checks) for every pairing of providers, models and base URLs, and for
    random rows the reasoning keys of the request copy (``copy_reasoning_content_for_api``, then the
    pops of ``reasoning`` and ``finish_reason``) and the thinking-only verdict on that copy."""
    found = run_python(
        hermes_python,
        r"""
        import itertools, json, random, types
        from run_agent import AIAgent
        from agent.agent_runtime_helpers import copy_reasoning_content_for_api
        from contextlab.messages import wire_message
        from contextlab.reasoning import is_thinking_only, needs_reasoning_echo
        providers = ["", "openrouter", "deepseek", "DeepSeek", "kimi-coding", "KIMI-CODING", "kimi-coding-cn",
                     "xiaomi", "Xiaomi", "custom", "anthropic"]
        models = ["", "gpt-4o", "deepseek-v4-pro", "DeepSeek-Chat", "moonshotai/kimi-k2", "xiaomi/MiMo-V2",
                  "claude-sonnet-4"]
        urls = ["", "https://api.deepseek.com/v1", "https://x.api.deepseek.com", "https://api.moonshot.ai/v1",
                "moonshot.cn", "https://evil.example/moonshot.ai", "https://moonshot.ai.evil",
                "https://api.kimi.com/coding", "https://api.xiaomimimo.com/v1", "xiaomimimo.com:8443",
                "HTTPS://API.DEEPSEEK.COM.", "https://openrouter.ai/api/v1"]
        routes, echoes, route_differ = 0, 0, []
        for provider, model, url in itertools.product(providers, models, urls):
            agent = types.SimpleNamespace(provider=provider, model=model, base_url=url)
            theirs = (AIAgent._needs_kimi_tool_reasoning(agent) or AIAgent._needs_deepseek_tool_reasoning(agent)
                      or AIAgent._needs_mimo_tool_reasoning(agent))
            routes += 1
            echoes += bool(theirs)
            if needs_reasoning_echo(provider, model, url) != bool(theirs):
                route_differ.append([provider, model, url])
        rng = random.Random(20261205)
        absent = object()
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        choices = {
            "role": ["assistant"] * 6 + ["user", "tool"],
            "content": ["", " ", "text", None, absent, [{"type": "thinking", "thinking": "t"}],
                        [{"type": "text", "text": "  "}], [{"type": "text", "text": "shown"}]],
            "reasoning_content": [absent, "", " ", "a thought", None, 5],
            "reasoning": [absent, "", "   ", "another thought", None],
            "reasoning_details": [absent, [], [{"type": "reasoning.text", "text": "t", "signature": "s"}]],
            "tool_calls": [absent, [], [call]],
            "finish_reason": [absent, "stop", "tool_calls"],
        }
        keys = ("reasoning", "reasoning_content", "reasoning_details", "finish_reason")
        rows, row_differ, thinking = 0, [], 0
        for _ in range(4000):
            row = {k: v for k, options in choices.items() if (v := rng.choice(options)) is not absent}
            if row["role"] == "tool":
                row["tool_call_id"] = "c1"
            for echo in (False, True):
                copy = dict(row)
                host = types.SimpleNamespace(_needs_thinking_reasoning_pad=lambda echo=echo: echo)
                copy_reasoning_content_for_api(host, row, copy)
                copy.pop("reasoning", None)
                copy.pop("finish_reason", None)
                ours = wire_message(row, echo_reasoning=echo)
                theirs_only = AIAgent._is_thinking_only_assistant(copy)
                thinking += theirs_only
                rows += 1
                if [copy.get(k, absent) for k in keys] != [ours.get(k, absent) for k in keys] or (
                    is_thinking_only(ours) != theirs_only
                ):
                    row_differ.append([repr(row), echo, repr(copy), repr(ours)])
        print(json.dumps({"routes": routes, "echoes": echoes, "route_differ": route_differ[:5], "rows": rows,
                          "thinking_only": thinking, "row_differ": row_differ[:3]}))
        """,
    )
    assert found["route_differ"] == []
    assert found["routes"] > 900 and 300 < found["echoes"] < found["routes"]
    assert found["row_differ"] == []
    assert found["rows"] == 8000 and found["thinking_only"] > 100


def test_the_request_sanitizers_are_the_real_hosts(hermes_python: Path) -> None:
    """``sanitize_request`` over the wire rows against the real 0.19.0 pre-call sanitizers
    (``sanitize_api_messages``, then ``drop_thinking_only_and_merge_users``) on random requests:
    orphaned results dropped, unanswered calls answered with the host's stub right after their row,
    thinking-only turns dropped and the user rows around them merged. Lists with adjacent user rows
    before any drop are left out: 0.19.0 merges only after a drop, newer upstream (and contextlab)
    always."""
    found = run_python(
        hermes_python,
        r"""
        import copy, json, random
        from agent.agent_runtime_helpers import drop_thinking_only_and_merge_users, sanitize_api_messages
        from contextlab.messages import sanitize_request, wire_message
        rng = random.Random(20261206)
        compared, stubbed, merged, differ = 0, 0, 0, []
        for _ in range(3000):
            rows, pending = [{"role": "system", "content": "sys"}], []
            for b in range(rng.randint(1, 9)):
                kind = rng.choice(["user", "user", "text", "calls", "calls", "thinking", "orphan"])
                if kind == "user":
                    rows.append({"role": "user", "content": rng.choice(["ask", "go on", "", "more"])})
                elif kind == "text":
                    rows.append({"role": "assistant", "content": "answer"})
                elif kind == "thinking":
                    rows.append({"role": "assistant", "content": "", "reasoning_details": [{"type": "t"}]})
                elif kind == "orphan":
                    rows.append({"role": "tool", "tool_call_id": f"ghost{b}", "content": "lost"})
                else:
                    ids = [f"c{b}_{i}" for i in range(rng.randint(1, 3))]
                    calls = [{"id": i, "type": "function", "function": {"name": rng.choice(["read", "grep"]),
                              "arguments": "{}"}} for i in ids]
                    rows.append({"role": "assistant", "content": rng.choice(["", "let me look"]), "tool_calls": calls})
                    rows += [{"role": "tool", "tool_call_id": i, "content": f"out {i}"} for i in ids
                             if rng.random() < 0.7]
            kept = [r for r in rows if not (r["role"] == "tool" and r["tool_call_id"].startswith("ghost"))]
            if any(a["role"] == b["role"] == "user" for a, b in zip(kept, kept[1:])):
                continue
            theirs = drop_thinking_only_and_merge_users(sanitize_api_messages(copy.deepcopy(rows)))
            theirs = [wire_message(m) for m in theirs]
            ours = sanitize_request([wire_message(m) for m in rows])
            ours = [{k: v for k, v in m.items() if not k.startswith("_")} for m in ours]
            compared += 1
            stubbed += any(m.get("content", "").startswith("[Result unavailable") for m in theirs)
            merged += len(theirs) < len(rows) - sum(r["role"] == "tool" and r["tool_call_id"].startswith("ghost")
                                                     for r in rows)
            if ours != theirs:
                differ.append([json.dumps(rows), json.dumps(theirs), json.dumps(ours)])
        print(json.dumps({"compared": compared, "stubbed": stubbed, "merged": merged, "differ": differ[:2]}))
        """,
    )
    assert found["differ"] == []
    assert found["compared"] > 1000 and found["stubbed"] > 300 and found["merged"] > 100


def test_the_history_repair_is_the_real_hosts(hermes_python: Path) -> None:
    """``repair_history`` against the real 0.19.0 repair the loop runs on its persisted history
    before each request (``sanitize_tool_call_arguments``, then ``repair_message_sequence``), on
    random histories: arguments that are not JSON or are blank, results marked or added, adjacent
    assistant rows (Codex interims, verification candidates), stray and duplicate results, adjacent
    user rows (text, lists, ``None``, ``api_content``). The rows, the host's repair count, the
    watch's verdict and the rows given (never changed) are all compared."""
    found = run_python(
        hermes_python,
        r"""
        import copy, json, random
        from agent.agent_runtime_helpers import repair_message_sequence, sanitize_tool_call_arguments
        from contextlab import hermes_texts
        from contextlab.host.repair import RepairWatch, repair_history
        marker = hermes_texts.text("corrupted_arguments_marker")
        rng = random.Random(20261206)
        kinds = ["user", "user", "user_list", "user_none", "text", "text", "interim", "candidate",
                 "calls", "calls", "calls", "orphan", "duplicate", "system"]
        arguments = ['{"path": "a.py"}', "{}", "", None, "  ", '{"path": "a.py"', "not json", '{"x": 1,}']
        compared = repaired = clean = 0
        seen = set()
        differ = []
        for _ in range(4000):
            rows, last_ids = [], []
            for b in range(rng.randint(1, 10)):
                kind = rng.choice(kinds)
                if kind == "user":
                    row = {"role": "user", "content": rng.choice(["ask", "go on", "", "more"])}
                    if rng.random() < 0.2:
                        row["api_content"] = "sent " + row["content"]
                    rows.append(row)
                elif kind == "user_list":
                    rows.append({"role": "user", "content": [{"type": "text", "text": "see"}]})
                elif kind == "user_none":
                    rows.append({"role": "user", "content": None})
                elif kind in ("text", "interim", "candidate"):
                    row = {"role": "assistant", "content": rng.choice(["answer", " padded ", "", None])}
                    if kind == "interim":
                        row["finish_reason"] = "incomplete"
                    elif kind == "candidate":
                        row["finish_reason"] = "verification_required"
                    if rng.random() < 0.3:
                        row["reasoning_content"] = rng.choice(["", "think"])
                    rows.append(row)
                elif kind == "orphan":
                    ghost = rng.choice([f"ghost{b}", None, ""])
                    rows.append({"role": "tool", "tool_call_id": ghost, "content": "lost"})
                elif kind == "duplicate" and last_ids:
                    rows.append({"role": "tool", "tool_call_id": rng.choice(last_ids), "content": "again"})
                elif kind == "system":
                    rows.append({"role": "system", "content": "note"})
                else:
                    last_ids = [f"c{b}_{i}" for i in range(rng.randint(1, 3))]
                    calls = [{"id": i, "type": "function", "function": {"name": rng.choice(["read", "grep", None]),
                              "arguments": rng.choice(arguments)}} for i in last_ids]
                    for call in calls:
                        if call["function"]["name"] is None and rng.random() < 0.5:
                            del call["function"]["name"]  # the host names such a call's result ""
                    rows.append({"role": "assistant", "content": rng.choice(["", "let me look", None]),
                                 "tool_calls": calls})
                    for i in last_ids:
                        if rng.random() < 0.75:
                            rows.append({"role": "tool", "tool_call_id": i,
                                         "content": rng.choice(["out", "", None, [{"type": "text", "text": "t"}]])})
            given = copy.deepcopy(rows)
            theirs = copy.deepcopy(rows)
            count = sanitize_tool_call_arguments(theirs) + repair_message_sequence(None, theirs)
            ours = repair_history(rows, marker)
            watch = RepairWatch()
            for row in rows:
                watch.feed(row)
            compared += 1
            repaired += theirs != given
            clean += theirs == given
            seen.update(k for k in ("arguments", "blank_arguments", "merged_assistants", "dropped_results",
                                    "merged_users") if getattr(ours, k))
            if ours.rows != theirs or ours.repairs != count or watch.dirty != (theirs != given) or rows != given:
                differ.append([json.dumps(given), json.dumps(theirs), json.dumps(ours.rows), count, ours.repairs])
        print(json.dumps({"compared": compared, "repaired": repaired, "clean": clean, "seen": sorted(seen),
                          "differ": differ[:2]}))
        """,
    )
    assert found["differ"] == []
    assert found["compared"] == 4000 and found["repaired"] > 1000 and found["clean"] > 300
    assert found["seen"] == ["arguments", "blank_arguments", "dropped_results", "merged_assistants", "merged_users"]


def test_every_repair_of_a_replay_is_the_real_hosts(hermes_python: Path) -> None:
    """Each repair a replay makes (from the watch's resume point only) against the real 0.19.0 repair
    of the whole history at that moment, on the bundled sessions and a Claude Code log, through
    engines whose compactions the host then repairs. contextlab's own bookkeeping keys (uids) are
    left out of the comparison: the real host does not keep them."""
    found = run_python(
        hermes_python,
        r"""
        import copy, json
        from agent.agent_runtime_helpers import repair_message_sequence, sanitize_tool_call_arguments
        import contextlab
        from contextlab.host import history
        whole = history.repair_history
        seen = {"repairs": 0, "walked": 0, "rows": 0, "differ": []}

        def plain(rows):
            return [{k: v for k, v in r.items() if not k.startswith("_") and k != "message_uid"} for r in rows]

        def checked(rows, marker, start=0):
            ours = whole(rows, marker, start)
            theirs = copy.deepcopy(list(rows))
            count = sanitize_tool_call_arguments(theirs) + repair_message_sequence(None, theirs)
            seen["repairs"] += 1
            seen["walked"] += len(rows) - start
            seen["rows"] += len(rows)
            if plain(ours.rows) != plain(theirs) or ours.repairs != count:
                seen["differ"].append([len(rows), start, count, ours.repairs])
            return ours

        history.repair_history = checked
        log = "../shared/transcripts/claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
        for path, engine, window in [
            ("datasets/coding-agent.jsonl.gz", "compressor", 128_000),
            ("datasets/support-agent.jsonl.gz", "summary", 64_000),
            (log, "compressor", 32_000),
            (log, "clear_tool_uses", 32_000),
        ]:
            result = contextlab.replay(path, engine, context_length=window, probes=False)
            assert result.status == "ok", result.error
        print(json.dumps(seen))
        """,
    )
    assert found["differ"] == []
    # Repairs of a compaction output can start near its head; those of appended rows walk a few rows.
    assert found["repairs"] >= 30 and found["walked"] * 4 < found["rows"]


def test_the_tool_rows_the_host_makes_are_the_real_hosts(hermes_python: Path) -> None:
    """``ToolResultMaker`` against the real 0.19.0 path a tool's output takes into the history
    (``agent/tool_executor.py``: ``maybe_persist_tool_result`` with the window-scaled budget, then
    ``make_tool_result_message``, then ``enforce_turn_budget`` over the batch), on random batches of
    outputs of random sizes and tool names at several windows. The rows must be equal once each
    spill's header is normalized: newer upstream adds a recovery line and writes to the profile's
    ``cache/spillover`` where 0.19.0 writes to the sandbox's ``/tmp/hermes-results``; the preview,
    the sizes and the file name must agree."""
    found = run_python(
        hermes_python,
        r"""
        import copy, json, random, re
        from agent.tool_dispatch_helpers import make_tool_result_message
        from tools.budget_config import budget_for_context_window
        from tools.tool_result_storage import enforce_turn_budget, maybe_persist_tool_result
        from contextlab.host.tool_results import ToolResultBudget, ToolResultMaker

        class Sandbox:  # a local sandbox whose writes succeed, as the host's terminal env's do
            def execute(self, command, timeout=None, stdin_data=None):
                return {"returncode": 0, "output": ""}

        def normal(text):
            if not isinstance(text, str) or "<persisted-output>" not in text:
                return text
            text = re.sub(r"Recovery: [^\n]*\n", "", text)
            return re.sub(r"Full output saved to: \S*/", "Full output saved to: ", text)

        rng = random.Random(20261206)
        names = ["terminal", "read_file", "search_files", "web_search", "web_extract", "browser_snapshot",
                 "Bash", "Read", "patch"]
        words = ["alpha", "beta\n", "untrusted_tool_result", "UNTRUSTED_TOOL_RESULT", "é", "\n\n", "line of output\n"]
        differ, spilled, wrapped, compared = [], 0, 0, 0
        for _ in range(1500):
            window = rng.choice([8_000, 16_000, 32_000, 64_000])
            calls, outputs = [], []
            for k in range(rng.randint(1, 4)):
                call_id = rng.choice([f"call_{k}", f"call {k}/x", f"toolu_{k:03d}"])
                name = rng.choice(names)
                size = rng.choice([0, 10, 31, 32, 40, 2_000, 9_000, 20_000, 40_000, 90_000])
                text = "".join(rng.choice(words) for _ in range(size // 6 + 1))[:size]
                calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}})
                outputs.append({"role": "tool", "tool_call_id": call_id, "content": text})
            assistant = {"role": "assistant", "content": "", "tool_calls": calls}
            budget = budget_for_context_window(window)
            theirs = []
            for call, output in zip(calls, outputs):
                content = maybe_persist_tool_result(output["content"], call["function"]["name"], call["id"],
                                                    env=Sandbox(), config=budget)
                theirs.append(make_tool_result_message(call["function"]["name"], content, call["id"]))
            enforce_turn_budget(theirs, env=Sandbox(), config=budget)
            theirs = [{k: normal(v) if k == "content" else v for k, v in row.items() if not k.startswith("_")}
                      for row in theirs]
            maker = ToolResultMaker(ToolResultBudget.for_window(window))
            ours = [{k: normal(v) if k == "content" else v for k, v in row.items()}
                    for row in maker.make(assistant, copy.deepcopy(outputs))]
            compared += 1
            spilled += maker.spilled
            wrapped += any("<untrusted_tool_result" in str(r["content"]) for r in ours)
            if ours != theirs:
                differ.append([window, json.dumps(theirs)[:1500], json.dumps(ours)[:1500]])
        print(json.dumps({"compared": compared, "spilled": spilled, "wrapped": wrapped, "differ": differ[:2]}))
        """,
    )
    assert found["differ"] == []
    assert found["compared"] == 1500 and found["spilled"] > 500 and found["wrapped"] > 200


def test_the_assistant_content_the_host_keeps_is_the_real_hosts(hermes_python: Path) -> None:
    """``host_content`` against the real 0.19.0 steps ``build_assistant_message`` takes with a
    reply's content (``flatten_message_text``, the surrogate sweep, ``strip_think_blocks``, strip,
    ``redact_sensitive_text``), on random contents built from reasoning and tool-call tags in every
    case, unterminated blocks, ``<function name=...>`` at and off line starts, secrets, text parts,
    images, ``None``."""
    found = run_python(
        hermes_python,
        r"""
        import json, random
        from agent.agent_runtime_helpers import strip_think_blocks
        from agent.message_content import flatten_message_text
        from agent.redact import redact_sensitive_text
        from run_agent import _sanitize_surrogates
        from contextlab.host.assistant_rows import host_content

        def theirs(content):
            text = _sanitize_surrogates(flatten_message_text(content))
            if text:
                text = strip_think_blocks(None, text).strip()
            if text:
                text = redact_sensitive_text(text)
            return text

        rng = random.Random(20261206)
        pieces = ["<think>", "</think>", "<THINK>", "<thinking>", "</thinking>", "<reasoning>", "</Reasoning>",
                  "<REASONING_SCRATCHPAD>", "</REASONING_SCRATCHPAD>", "<thought>", "</thought>",
                  "<tool_call>", "</tool_call>", '<tool_calls id="1">', "</tool_calls>", "<tool_result>",
                  "</tool_result>", "<function_call>", "</function_call>", '<function name="f">', "</function>",
                  "<function>", "\n", "\r", ". ", "  ", "plan", "answer", "x", "<", ">", "sk-abc123def456ghi789jkl",
                  "ghp_" + "a" * 36, "password=hunter2", "é", "\ud83d", "\t"]
        differ, stripped = [], 0
        for _ in range(6000):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
            shape = rng.random()
            if shape < 0.15:
                content = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "u"}},
                           {"type": "text", "text": rng.choice(["", "\n\n", "more"])}]
            elif shape < 0.2:
                content = None
            else:
                content = text
            ours = host_content(content)
            real = theirs(content)
            stripped += real != (content if isinstance(content, str) else None)
            if ours != real:
                differ.append([json.dumps(content), real, ours])
        print(json.dumps({"differ": differ[:3], "changed": stripped}))
        """,
    )
    assert found["differ"] == []
    assert found["changed"] > 2000


def test_the_tool_loop_warnings_are_the_real_hosts(hermes_python: Path) -> None:
    """``ToolLoopGuard``'s warnings against the real 0.19.0 ``ToolCallGuardrailController.after_call``
    (with ``_detect_tool_failure`` deciding what failed and ``append_toolguard_guidance`` appending
    the text), on random turns of calls to read-only and other tools with repeated arguments and
    outputs: plain text, ``Error ...`` lines, JSON with and without errors. The tools exclude those
    whose success counts as progress and the stall guards are off: those are newer upstream's rules,
    which 0.19.0 lacks (``tests/host/test_tool_guard.py`` covers them)."""
    found = run_python(
        hermes_python,
        r"""
        import json, random
        from agent.display import _detect_tool_failure
        from agent.tool_guardrails import ToolCallGuardrailController, append_toolguard_guidance
        from contextlab.host.tool_guard import ToolLoopGuard

        rng = random.Random(61)
        tools = ["read_file", "search_files", "web_extract", "lookup", "Read"]
        argument_pool = [{"path": "a.py"}, {"limit": 5, "path": "b.py"}, {"query": "é"}]
        outputs = ["ok", "file body\n" * 80, "Error: not found", '{"error": "boom"}', '{"result": 1, "b": 2}',
                   '{"b": 2, "result": 1}', '{"success": false, "message": "nope"}', "the call failed", "[]"]
        differ, warned, compared = [], 0, 0
        for turn in range(600):
            theirs, ours = ToolCallGuardrailController(), ToolLoopGuard(stall_guards=False)
            for k in range(rng.randint(1, 16)):
                name, args, out = rng.choice(tools), rng.choice(argument_pool), rng.choice(outputs)
                failed, _ = _detect_tool_failure(name, out)
                expected = append_toolguard_guidance(out, theirs.after_call(name, args, out, failed=failed))
                got = ours.observe(name, json.loads(json.dumps(args)), out, f"call_{k}")
                compared += 1
                warned += expected != out
                if got != expected and len(differ) < 5:
                    differ.append([turn, k, name, args, out, got, expected])
        print(json.dumps({"differ": differ, "warned": warned, "compared": compared}))
        """,
    )
    assert found["differ"] == []
    assert found["compared"] > 4_000 and found["warned"] > 200


def test_the_0_19_0_rough_estimate_is_the_real_hosts(hermes_python: Path) -> None:
    """``contextlab.tokens.legacy_message_chars`` and ``legacy_messages_tokens`` (the host loop's and
    the compressor's estimates under ``hermes_version="0.19.0"``) against the real 0.19.0
    ``_estimate_message_chars`` and ``estimate_messages_tokens_rough`` on random rows: text and part
    lists with images, ``_multimodal`` tool results, Anthropic block stashes, store stamps, tool calls
    with the host's ids, reasoning, non-ASCII and CJK text (counted by characters in 0.19.0)."""
    found = run_python(
        hermes_python,
        r"""
        import json, random
        from agent.model_metadata import _estimate_message_chars, estimate_messages_tokens_rough
        from contextlab.tokens import legacy_message_chars, legacy_messages_tokens

        rng = random.Random(61206)
        words = ["read", "the file", "é", "日本語", "\n", "  ", "{\"a\": 1}", "x" * 50, "'quoted'", '"dq"']

        def text():
            return "".join(rng.choice(words) for _ in range(rng.randint(0, 12)))

        def row():
            role = rng.choice(["user", "assistant", "tool"])
            shape = rng.random()
            if shape < 0.2:
                content = [{"type": "text", "text": text()}, {"type": "image_url", "image_url": {"url": "data:x"}}]
            elif shape < 0.3:
                content = {"_multimodal": True, "text_summary": text(),
                           "content": [{"type": "image", "source": "s"}, {"type": "text", "text": text()}]}
            elif shape < 0.35:
                content = None
            else:
                content = text()
            out = {"role": role, "content": content}
            if role == "assistant":
                out.update(reasoning=rng.choice([None, text()]), finish_reason=rng.choice(["stop", "tool_calls"]))
                if rng.random() < 0.5:
                    out["tool_calls"] = [{"id": "call_1", "call_id": "call_1", "response_item_id": "fc_1",
                                          "type": "function", "function": {"name": "f", "arguments": text()}}]
                if rng.random() < 0.1:
                    out["_anthropic_content_blocks"] = [{"type": "image"}, {"type": "text", "text": text()}]
            if role == "tool":
                out.update(name="f", tool_name="f", tool_call_id="call_1")
            if rng.random() < 0.5:
                out["_db_persisted"] = True
            return out

        differ, compared = [], 0
        for _ in range(300):
            rows = [row() for _ in range(rng.randint(1, 8))]
            ours = legacy_messages_tokens(rows)
            real = estimate_messages_tokens_rough(rows)
            compared += len(rows)
            chars = [(legacy_message_chars(r)[0], _estimate_message_chars(r)) for r in rows]
            if ours != real or any(a != b for a, b in chars):
                differ.append([ours, real, chars])
        print(json.dumps({"differ": differ[:2], "compared": compared}))
        """,
    )
    assert found["differ"] == []
    assert found["compared"] > 1000
