"""The offline extractive summarizer: sections, budget, focus, iterative updates, determinism."""

from __future__ import annotations

import json

from contextlab.engines.summarizers import (
    ENGINES_TEMPLATE,
    HOST_TEMPLATE,
    ExtractiveSummarizer,
    SummaryRequest,
)
from contextlab.engines.summarizers.extractive import (
    NO_USER_TURNS,
    error_fingerprint,
    extract,
    parse_summary,
    render,
)


def call(call_id: str, name: str, **args: object) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def span() -> list[dict[str, object]]:
    return [
        {
            "role": "user",
            "content": "Please fix the failing test in src/app/main.py. We must not change the API.",
        },
        {
            "role": "assistant",
            "content": "I will read the file first because the traceback points there.",
            "tool_calls": [call("c1", "read_file", path="src/app/main.py")],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "def main():\n    return 1\n"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("c2", "terminal", command="pytest -x tests")],
        },
        {
            "role": "tool",
            "tool_call_id": "c2",
            "content": ("E   AssertionError: expected 2 got 1\nFAILED tests/test_main.py::test_main\nexit code 1"),
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("c3", "write_file", path="src/app/main.py")],
        },
        {"role": "tool", "tool_call_id": "c3", "content": "written"},
        {"role": "user", "content": "Now also update the changelog for v1.4.2 (ticket #812)."},
        {
            "role": "assistant",
            "content": "Done.\n\nThe fix is in commit 9f3c2ab1 and the changelog mentions #812.",
        },
    ]


def test_host_template_sections_in_order_and_content() -> None:
    body = ExtractiveSummarizer().summarize(SummaryRequest(turns=span(), budget_tokens=2000, template=HOST_TEMPLATE))
    headings = [h for h, _ in parse_summary(body)]
    assert headings == HOST_TEMPLATE.headings
    sections = dict(parse_summary(body))
    assert sections["Goal"] == ["Please fix the failing test in src/app/main.py. We must not change the API."]
    assert "We must not change the API." in sections["Constraints & Preferences"]
    actions = sections["Completed Actions"]
    assert actions[0] == "READ src/app/main.py — ok (2 lines) [tool: read_file]"
    assert actions[1].startswith("RUN pytest -x tests — error: E AssertionError")
    # Last op per path wins.
    assert sections["Relevant Files"] == ["write src/app/main.py"]
    # User asks verbatim, newest first.
    asks = sections["Historical Pending User Asks"]
    assert asks[0].startswith("[t7] Now also update the changelog") and asks[1].startswith("[t0] Please fix")
    assert {"9f3c2ab1", "#812", "v1.4.2", "src/app/main.py"} <= set(sections["Critical Context"])
    assert sections["Active State"] == ["The fix is in commit 9f3c2ab1 and the changelog mentions #812."]


def test_engines_template_order() -> None:
    body = ExtractiveSummarizer().summarize(SummaryRequest(turns=span(), budget_tokens=2000, template=ENGINES_TEMPLATE))
    assert [h for h, _ in parse_summary(body)] == [
        "User requests",
        "Files and artifacts",
        "Errors",
        "Decisions",
        "Identifier index",
        "Timeline",
        "Current state",
    ]
    timeline = dict(parse_summary(body))["Timeline"]
    assert timeline[0].startswith("[t0] user: Please fix")
    assert timeline[3].startswith("[t3] assistant/terminal: terminal(")


def test_error_fingerprints_deduplicate() -> None:
    assert error_fingerprint("ERROR: job 1234 failed at 0xdeadbeef") == error_fingerprint(
        "ERROR: job 99 failed at 0xfeedface12"
    )
    messages = [
        {"role": "user", "content": "run it"},
        {
            "role": "tool",
            "tool_call_id": "x",
            "content": "ERROR: job 1 failed\nERROR: job 2 failed\nERROR: disk full",
        },
    ]
    errors = [it.text for it in extract(messages)["errors"]]
    assert errors == ["ERROR: job 2 failed", "ERROR: disk full"]


def long_span(n: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(n):
        topic = "database migration" if i % 10 == 0 else f"widget styling pass {i}"
        out.append({"role": "user", "content": f"Step {i}: please look at the {topic} and report."})
        out.append({"role": "assistant", "content": f"I will check the {topic} because it matters. Result {i} ok."})
    return out


def test_budget_is_honoured() -> None:
    for budget in (300, 800, 2000):
        body = ExtractiveSummarizer().summarize(
            SummaryRequest(turns=long_span(200), budget_tokens=budget, template=HOST_TEMPLATE)
        )
        assert (len(body) + 3) // 4 <= budget
        # Still a complete checklist: every heading present even when trimmed hard.
        assert [h for h, _ in parse_summary(body)] == HOST_TEMPLATE.headings


def test_user_requests_capped_at_30_percent() -> None:
    body = ExtractiveSummarizer().summarize(
        SummaryRequest(turns=long_span(200), budget_tokens=2000, template=ENGINES_TEMPLATE)
    )
    asks = dict(parse_summary(body))["User requests"]
    assert sum(len(a) + 6 for a in asks) <= 0.30 * 2000 * 4
    assert asks[0].startswith("[t398] Step 199")  # newest kept, newest first


def test_focus_topic_gets_most_of_the_budget() -> None:
    plain = ExtractiveSummarizer().summarize(
        SummaryRequest(turns=long_span(200), budget_tokens=1500, template=ENGINES_TEMPLATE)
    )
    focused = ExtractiveSummarizer().summarize(
        SummaryRequest(
            turns=long_span(200),
            budget_tokens=1500,
            template=ENGINES_TEMPLATE,
            focus_topic="database migration",
        )
    )

    def focus_share(body: str) -> float:
        lines = [line for _, lines in parse_summary(body) for line in lines]
        hit = sum(len(line) for line in lines if "database migration" in line)
        return hit / max(1, sum(len(line) for line in lines))

    assert focus_share(focused) >= 0.6
    assert focus_share(focused) > 2 * focus_share(plain)
    assert (len(focused) + 3) // 4 <= 1500


def test_iterative_update_keeps_previous_items() -> None:
    first = ExtractiveSummarizer().summarize(
        SummaryRequest(turns=span()[:7], budget_tokens=2000, template=HOST_TEMPLATE)
    )
    second_span = [
        {"role": "user", "content": "Next, rename config.yaml to settings.yaml."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("c9", "terminal", command="git mv config.yaml settings.yaml")],
        },
        {"role": "tool", "tool_call_id": "c9", "content": "exit code 0"},
    ]
    updated = ExtractiveSummarizer().summarize(
        SummaryRequest(
            turns=second_span,
            budget_tokens=2000,
            template=HOST_TEMPLATE,
            previous_summary=first,
            first_index=20,
        )
    )
    sections = dict(parse_summary(updated))
    # The goal is the original one; actions accumulate in order; the snapshot is the newest ask.
    assert sections["Goal"][0].startswith("Please fix the failing test")
    actions = sections["Completed Actions"]
    assert actions[0].startswith("READ src/app/main.py") and actions[-1].startswith("RUN git mv config.yaml")
    assert "Next, rename config.yaml" in sections["Historical Task Snapshot"][0]
    assert any(a.startswith("[t20] Next, rename") for a in sections["Historical Pending User Asks"])
    assert any(a.startswith("[t0] Please fix") for a in sections["Historical Pending User Asks"])


def test_regenerate_mode_cuts_carried_lines() -> None:
    previous = "## Decisions\n- " + "x" * 300 + "\n"
    body = ExtractiveSummarizer().summarize(
        SummaryRequest(
            turns=span()[:1],
            budget_tokens=2000,
            template=ENGINES_TEMPLATE,
            previous_summary=previous,
            merge_mode="regenerate",
        )
    )
    carried = dict(parse_summary(body))["Decisions"]
    assert carried == ["x" * 117 + "..."]


def test_no_user_turns_snapshot() -> None:
    items = extract([{"role": "assistant", "content": "hello there, working"}])
    assert items["snapshot"][0].text == NO_USER_TURNS


def test_deterministic_and_redacted() -> None:
    messages = [
        *span(),
        {"role": "user", "content": "my key is sk-abcdefghijklmnopqrstuvwx\npassword=hunter22"},
    ]
    request = SummaryRequest(turns=messages, budget_tokens=2000, template=HOST_TEMPLATE)
    a = ExtractiveSummarizer().summarize(request)
    b = ExtractiveSummarizer().summarize(request)
    assert a == b
    assert "sk-abcdefghijklmnopqrstuvwx" not in a and "hunter22" not in a
    assert render(extract(messages), HOST_TEMPLATE, 2000) == a


def test_default_budget_clamp() -> None:
    from contextlab.engines.summarizers.extractive import default_budget

    assert [default_budget(t) for t in (0, 10_000, 30_000, 80_000)] == [2_000, 2_000, 6_000, 10_000]
