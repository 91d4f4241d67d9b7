"""Head/tail cut logic (host-contract.md §2d steps 1 and 3)."""

from __future__ import annotations

from builders import call

from contextlab import hermes_texts as texts
from contextlab.engines.compressor import assembly, pruning
from contextlab.engines.compressor import boundaries as bd
from contextlab.messages import validate_messages


def u(text: str = "ask") -> dict[str, object]:
    return {"role": "user", "content": text}


def a(text: str = "reply") -> dict[str, object]:
    return {"role": "assistant", "content": text}


def ac(call_id: str) -> dict[str, object]:
    return {"role": "assistant", "content": None, "tool_calls": [call(call_id, "read_file", path="x")]}


def t(call_id: str, size: int = 10) -> dict[str, object]:
    return {"role": "tool", "tool_call_id": call_id, "content": "r" * size}


def test_min_tail_formula() -> None:
    assert bd.min_tail(1, 20) == 0
    assert bd.min_tail(2, 20) == 2
    assert bd.min_tail(4, 20) == 3
    assert bd.min_tail(100, 20) == 8
    assert bd.min_tail(100, 5) == 5
    assert bd.min_tail(100, 1) == 3


def test_align_forward_skips_tool_rows() -> None:
    messages = [u(), ac("c"), t("c"), t("c"), a()]
    assert bd.align_forward(messages, 2) == 4
    assert bd.align_forward(messages, 1) == 1


def test_align_backward_never_splits_a_tool_group() -> None:
    messages = [u(), ac("c"), t("c"), t("c"), u(), a()]
    assert bd.align_backward(messages, 3) == 1  # inside the group: the group goes to the tail
    assert bd.align_backward(messages, 2) == 1  # right after the call
    assert bd.align_backward(messages, 5) == 5


def long_history(turns: int, size: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(turns):
        out += [u(f"ask {i}"), ac(f"c{i}"), t(f"c{i}", size), a(f"answer {i}")]
    return out


def test_tail_cut_by_budget_soft_ceiling_and_rewalk() -> None:
    messages = long_history(20, 4_000)  # each tool row ≈ 1,010 budget tokens, others ≈ 12–40
    n = len(messages)
    cut = bd.tail_cut_by_tokens(messages, 3, 2_000, protect_last_n=20)
    # The walk may use up to 1.5 × 2,000 tokens: two full turns plus part of a third fit.
    assert messages[cut]["role"] == "user" or messages[cut - 1]["role"] != "assistant"
    tail_cost = sum(bd.message_budget_tokens(m) for m in messages[cut:])
    assert tail_cost <= 3_000 + 1_100
    assert n - cut >= 8  # min tail
    # Everything fits the soft ceiling: re-walk with the raw budget.
    small = long_history(3, 10)
    assert bd.tail_cut_by_tokens(small, 0, 10_000, protect_last_n=20) >= 1


def test_tail_keeps_last_user_and_last_assistant_reply() -> None:
    # The last ask sits behind tool output bigger than the budget: anchored back into the tail,
    # together with the last visible assistant reply before it.
    messages = [*long_history(5, 100), u("final ask"), ac("z1"), t("z1", 4_000), ac("z2"), t("z2", 100)]
    cut = bd.tail_cut_by_tokens(messages, 3, 600, protect_last_n=20)
    assert messages[20]["content"] == "final ask" and messages[19]["content"] == "answer 4"
    assert cut <= 19
    assert validate_messages(messages[cut:]) == []


def test_oversized_active_turn_keeps_its_ask_in_the_tail() -> None:
    """0000416b has no active-turn split: the latest ask is anchored into the tail even when the turn
    after it alone exceeds the soft ceiling; the last visible reply (and its tool group) join it."""
    messages = [*long_history(5, 100), u("final ask"), ac("z1"), t("z1", 40_000), ac("z2"), t("z2", 40_000)]
    cut = bd.tail_cut_by_tokens(messages, 3, 1_000, protect_last_n=20)
    assert messages[20]["content"] == "final ask" and messages[19]["content"] == "answer 4"
    assert cut == 17 and validate_messages(messages[cut:]) == []


def test_whole_history_within_budget_falls_back_to_the_minimum_tail() -> None:
    """When even the raw-budget re-walk keeps everything, the cut falls back to ``n - min_tail``
    (8 messages here), never to a cut glued to the head that would make compress a no-op."""
    messages = long_history(6, 10)  # 3 head rows + 6 short turns, all far under the budget
    n = len(messages)
    cut = bd.tail_cut_by_tokens(messages, 3, 100_000, protect_last_n=20)
    assert cut >= n - 8 - 1 and cut > 4


def test_walk_reaches_the_head_boundary_row() -> None:
    """Upstream walks down to ``head_end`` inclusive: a history that fits only when that row is
    counted still takes the re-walk path (off-by-one against a walk that stops above it)."""
    messages = long_history(2, 10)
    costs = [bd.message_budget_tokens(m) for m in messages]
    head_end = 3
    budget = sum(costs[head_end:])  # exactly the compressible region
    cut = bd.tail_cut_by_tokens(messages, head_end, budget, protect_last_n=3)
    assert head_end < cut < len(messages)


def test_soft_ceiling_is_one_and_a_half_budgets_uncapped() -> None:
    """0000416b: ``int(budget × 1.5)`` whatever the window (no 20%-of-window cap)."""
    assert bd.soft_ceiling(10_000) == 15_000
    assert bd.soft_ceiling(2_720) == 4_080


def test_count_floor_binds_in_the_walk() -> None:
    """The walk cannot stop before ``min_tail`` rows are behind it, however large they are."""
    messages = long_history(6, 4_000)
    cut = bd.tail_cut_by_tokens(messages, 3, 10, protect_last_n=20)
    assert len(messages) - cut >= 8


def test_last_user_in_head_pushes_cut_past_its_reply() -> None:
    messages = [u("only ask"), ac("c"), t("c", 40_000), a("done"), ac("d"), t("d", 40_000)]
    cut = bd.tail_cut_by_tokens(messages, 0, 1_000, protect_last_n=3)
    assert cut >= 3  # never split the user turn from its assistant + tools


def test_min_tail_user_messages() -> None:
    messages = long_history(10, 4_000)
    one = bd.tail_cut_by_tokens(messages, 3, 1_000, protect_last_n=20)
    three = bd.tail_cut_by_tokens(messages, 3, 1_000, protect_last_n=20, min_tail_user_messages=3)
    users = [i for i in range(three, len(messages)) if messages[i]["role"] == "user"]
    assert three < one and len(users) >= 3


def test_pull_back_to_bridge() -> None:
    messages = [u("a"), a("b"), u("c"), ac("x"), t("x"), u("latest")]
    assert bd.pull_back_to_bridge(messages, 0, 5) == 3
    assert bd.pull_back_to_bridge(messages, 3, 5) == 5  # the middle would become empty
    assert bd.pull_back_to_bridge(messages, 0, 4) == 4  # not on the latest ask


# --------------------------------------------------------------------------- which user rows are real turns

IMAGE_ONLY = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]}
TODO = {"role": "user", "content": texts.TODO_HEADER + "\n- [ ] write the test"}


def test_an_image_is_user_input_and_a_todo_snapshot_is_not() -> None:
    """Upstream ``0000416b``: only empty content, an empty list or whitespace text parts are blank; the
    todo snapshot, a continuation marker and a summary are compaction scaffolding."""
    blank_parts = {"role": "user", "content": [" ", {"type": "text", "text": "\n"}, {"type": "input_text", "text": ""}]}
    assert all(assembly.is_blank_user(m) for m in (u(" "), u(""), {"role": "user", "content": None}, blank_parts))
    assert not assembly.is_blank_user(IMAGE_ONLY) and assembly.is_real_user_turn(IMAGE_ONLY)
    assert (
        assembly.is_actionable_user(TODO) and assembly.is_synthetic_user(TODO) and not assembly.is_real_user_turn(TODO)
    )
    marker = u(texts.CONTINUATION_USER[0])
    summary = {"role": "user", "content": texts.SUMMARY_PREFIX + "\nearlier"}
    assert not any(assembly.is_real_user_turn(m) for m in (marker, summary, u("  ")))
    assert assembly.is_real_user_turn(u("fix the bug"))


def test_the_tail_keeps_the_newest_real_ask_not_a_todo_snapshot_or_an_echo() -> None:
    messages = [u("start"), a(), u("fix the login bug"), ac("c1"), t("c1"), a("done"), TODO]
    assert bd.last_real_user(messages) == 2
    # 0.19.0 anchors on any user row that is not a summary: here the todo snapshot.
    assert bd.last_real_user(messages, 0, assembly.is_user_anchor_0_19_0) == 6
    with_image = [u("look at this"), IMAGE_ONLY, a("ok")]
    assert bd.last_real_user(with_image) == 1


def test_an_image_after_the_ask_is_not_removed_as_a_blank_echo() -> None:
    echo = [u("look at this"), u("  "), a("ok")]
    assert pruning.remove_platform_echoes(echo, 0) == [echo[0], echo[2]]
    image = [u("look at this"), IMAGE_ONLY, a("ok")]
    assert pruning.remove_platform_echoes(image, 0) == image
