"""Calibration: replay a real transcript as it was recorded and compare simulated with recorded cache reads.

The replay is the control (no engine intervention) with the recording's real compactions applied:
from the first request after a compaction on, the request holds the compaction summary and what
followed it, not the history before it (a Claude Code ``compact_boundary`` replaces the history by
the summary that follows it). The fixed prefix a log omits (Claude Code's system prompt and tool
schemas) is estimated from the first call: recorded prompt total minus the counted request, after a
tokenizer scale fitted over all requests (recorded total ≈ prefix + scale · counted tokens).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contextlab.api import replay
from contextlab.cache.observer import CacheObserver
from contextlab.cache.policies import Policy, make_policy
from contextlab.cache.profiles import CacheProfile, make_profile
from contextlab.cache.usage import NormalizedUsage, parse_usage
from contextlab.engine import Message
from contextlab.engines.passthrough import PassthroughEngine
from contextlab.errors import ConfigError
from contextlab.host.settings import HostSettings
from contextlab.host.turns import plan_turns
from contextlab.transcripts import Transcript, load_transcript
from contextlab.transcripts.model import COMPACT_SUMMARY_KIND

CALIBRATION_COLUMNS = [
    "request",
    "message_index",
    "timestamp",
    "recorded_total",
    "recorded_read",
    "recorded_write",
    "simulated_total",
    "simulated_read",
    "simulated_write",
    "read_error",
]


class RecordedCompactions(PassthroughEngine):
    """The control engine plus the recording's own compactions, applied per request.

    Each request keeps the system prompt and everything from the latest compaction summary on.
    Summaries are recognised by the importer's ``display_kind`` mark or by their text.
    """

    def __init__(
        self,
        summaries: frozenset[str] = frozenset(),
        context_length: int = 0,
        threshold_percent: float = 0.75,
    ) -> None:
        super().__init__(context_length, threshold_percent)
        self.summaries = summaries

    @property
    def name(self) -> str:
        return "recorded-compactions"

    def _is_summary(self, message: Message) -> bool:
        if message.get("role") != "user":
            return False
        if message.get("display_kind") == COMPACT_SUMMARY_KIND:
            return True
        content = message.get("content")
        return isinstance(content, str) and content in self.summaries

    def select_context(
        self,
        request_messages: list[Message],
        *,
        conversation_messages: list[Message] | None = None,
        incoming_message: Message | None = None,
        budget_tokens: int = 0,
    ) -> list[Message] | None:
        for i in range(len(request_messages) - 1, -1, -1):
            if self._is_summary(request_messages[i]):
                head = [m for m in request_messages[:i] if m.get("role") == "system"][:1]
                return head + request_messages[i:]
        return None


@dataclass
class Calibration:
    """The outcome of calibrating one transcript.

    Attributes:
        frame: One row per request (:data:`CALIBRATION_COLUMNS`).
        summary: Session figures (shares, MAE, prefix estimate, scale, worst requests).
        trace: The simulated replay's trace.
    """

    frame: pd.DataFrame
    summary: dict[str, Any]
    trace: pd.DataFrame = field(repr=False)

    def worst(self, n: int = 5) -> pd.DataFrame:
        """The ``n`` requests where simulation and recording disagree most."""
        order = self.frame["read_error"].abs().sort_values(ascending=False, kind="stable").index[:n]
        return self.frame.loc[order]


def recorded_usage(transcript: Transcript) -> list[tuple[int, NormalizedUsage | None]]:
    """(assistant message index, parsed usage or None) for every request, in replay order."""
    out: list[tuple[int, NormalizedUsage | None]] = []
    for turn in plan_turns(transcript.messages):
        for step in turn.steps:
            usage = transcript.usage.get(step.assistant_index)
            parsed: NormalizedUsage | None = None
            if usage is not None:
                if usage.raw:
                    parsed = parse_usage(usage.raw, where=f"{transcript.source}: message {step.assistant_index}")
                else:
                    parsed = NormalizedUsage(
                        "recorded",
                        usage.prompt_tokens,
                        usage.cache_read_tokens,
                        usage.cache_write_tokens,
                        usage.input_tokens,
                        usage.completion_tokens,
                        usage.reasoning_tokens,
                    )
            out.append((step.assistant_index, parsed))
    return out


def guess_provider(transcript: Transcript) -> tuple[str, str]:
    """(profile spec, policy name) matching how the recording was produced."""
    model = (transcript.model or "").lower()
    if transcript.source_format == "claude-code" or "claude" in model:
        return f"anthropic:{transcript.model or 'claude-opus-4-6'}", "claude_code"
    if "gemini" in model:
        return f"gemini:{model.rsplit('/', 1)[-1]}", "none"
    if "deepseek" in model:
        return f"deepseek:{model.rsplit('/', 1)[-1]}", "none"
    if "gpt" in model or model.startswith("o"):
        return f"openai:{model.rsplit('/', 1)[-1]}", "none"
    return "prefix", "none"


def _settings(transcript: Transcript, overhead: int) -> HostSettings:
    # A window no recording reaches: the calibration replay must never compact on its own.
    return HostSettings(context_length=10_000_000, compression_enabled=False, fixed_overhead_tokens=overhead)


def calibrate(
    transcript: Transcript | str | Path,
    provider: str | CacheProfile | None = None,
    *,
    policy: str | Policy | None = None,
    index: int = 0,
    fit_scale: bool = True,
    fit_hit_prob: bool = True,
    **profile_options: Any,
) -> Calibration:
    """Replay ``transcript`` as recorded and compare simulated with recorded cache reads per request.

    Args:
        transcript: A transcript or a path.
        provider: Profile spec (``anthropic:claude-opus-4-6``) or instance; default guessed from the model.
        policy: Placement policy; default ``claude_code`` for Claude Code logs, else ``none``.
        index: Which conversation of a multi-conversation file.
        fit_scale: Fit a tokenizer scale (provider tokens per counted token) over all requests.
        fit_hit_prob: For best-effort providers (Gemini), fit ``hit_prob`` as the share of requests
            the recording served from cache among those the simulation could serve.
        **profile_options: Passed to the profile (e.g. ``granularity=2048`` for Gemini).

    Raises:
        ConfigError: The transcript has no recorded usage to calibrate against.
    """
    if not isinstance(transcript, Transcript):
        transcript = load_transcript(transcript, index)
    guessed_provider, guessed_policy = guess_provider(transcript)
    spec = provider if provider is not None else guessed_provider
    chosen_policy = make_policy(policy if policy is not None else guessed_policy)
    recorded = recorded_usage(transcript)
    if not any(u is not None for _, u in recorded):
        raise ConfigError(f"{transcript.source or transcript.transcript_id}: no recorded usage to calibrate against")
    summaries = frozenset(e.summary for e in transcript.events if e.summary)
    engine = RecordedCompactions(summaries)

    # Pass 1: counted tokens per request without any prefix, to fit the prefix and the scale.
    counted = replay(transcript, engine, _settings(transcript, 0)).trace["prompt_tokens"].to_numpy(dtype=float)
    totals = np.array([u.total_in if u is not None else np.nan for _, u in recorded], dtype=float)
    known = ~np.isnan(totals)
    scale = 1.0
    if fit_scale and known.sum() >= 3 and np.ptp(counted[known]) > 0:
        slope, _ = np.polyfit(counted[known], totals[known], 1)
        scale = float(min(2.0, max(0.5, slope)))
    first = int(np.argmax(known))
    prefix = max(0, round(totals[first] - scale * counted[first]))

    def simulate(options: dict[str, Any]) -> tuple[CacheProfile, pd.DataFrame, pd.DataFrame]:
        if isinstance(spec, CacheProfile):
            profile = spec.clone()
            profile.token_scale = scale
        else:
            profile = make_profile(spec, token_scale=scale, **options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # calibration compares cache reads; cost is not used
            observer = CacheObserver(profile, chosen_policy)
        trace = replay(transcript, engine, _settings(transcript, prefix), observers=[observer]).trace
        return profile, trace, _frame(recorded, trace)

    profile, trace, frame = simulate(profile_options)
    fitted_hit_prob = None
    if fit_hit_prob and hasattr(profile, "hit_prob") and "hit_prob" not in profile_options:
        # Best-effort providers: the share of requests the recording missed although a prefix was there.
        served = frame.dropna(subset=["recorded_read"])
        served = served[served["simulated_read"] > 0]
        if len(served):
            fitted_hit_prob = round(float((served["recorded_read"] > 0).mean()), 4)
            profile, trace, frame = simulate({**profile_options, "hit_prob": fitted_hit_prob})
    summary = _summarize(transcript, frame, profile, chosen_policy, prefix, scale, totals[first], counted[first])
    summary["hit_prob"] = getattr(profile, "hit_prob", None)
    summary["hit_prob_fitted"] = fitted_hit_prob is not None
    return Calibration(frame, summary, trace)


def _frame(recorded: list[tuple[int, NormalizedUsage | None]], trace: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for i, ((message_index, usage), (_, row)) in enumerate(zip(recorded, trace.iterrows(), strict=True)):
        rows.append(
            {
                "request": i,
                "message_index": message_index,
                "timestamp": row["timestamp"],
                "recorded_total": usage.total_in if usage else np.nan,
                "recorded_read": usage.cache_read if usage else np.nan,
                "recorded_write": usage.cache_write if usage else np.nan,
                "simulated_total": int(row["cache_read_tokens"] + row["cache_write_tokens"] + row["uncached_tokens"]),
                "simulated_read": int(row["cache_read_tokens"]),
                "simulated_write": int(row["cache_write_tokens"]),
            }
        )
    frame = pd.DataFrame(rows, columns=CALIBRATION_COLUMNS[:-1])
    frame["read_error"] = frame["simulated_read"] - frame["recorded_read"]
    return frame


def _summarize(
    transcript: Transcript,
    frame: pd.DataFrame,
    profile: CacheProfile,
    policy: Policy,
    prefix: int,
    scale: float,
    first_total: float,
    first_counted: float,
) -> dict[str, Any]:
    known = frame.dropna(subset=["recorded_total"])
    rec_share = float(known["recorded_read"].sum() / known["recorded_total"].sum()) if len(known) else 0.0
    sim_share = float(known["simulated_read"].sum() / known["simulated_total"].sum()) if len(known) else 0.0
    worst = known.reindex(known["read_error"].abs().sort_values(ascending=False, kind="stable").index[:3])
    return {
        "transcript": transcript.transcript_id,
        "model": transcript.model,
        "profile": profile.label,
        "policy": policy.name,
        "requests": len(frame),
        "requests_with_usage": len(known),
        "compactions_applied": len([e for e in transcript.events if e.summary]),
        "unseen_prefix_tokens": prefix,
        "first_call_recorded_tokens": int(first_total),
        "first_call_counted_tokens": int(first_counted),
        "token_scale": round(scale, 4),
        "recorded_read_share": rec_share,
        "simulated_read_share": sim_share,
        "share_error_pp": 100.0 * (sim_share - rec_share),
        "read_mae_tokens": float(known["read_error"].abs().mean()) if len(known) else 0.0,
        "recorded_write_share": float(known["recorded_write"].sum() / known["recorded_total"].sum())
        if len(known)
        else 0.0,
        "simulated_write_share": float(known["simulated_write"].sum() / known["simulated_total"].sum())
        if len(known)
        else 0.0,
        "worst_requests": ",".join(
            f"{int(request)}:{int(error):+d}"
            for request, error in zip(worst["request"], worst["read_error"], strict=True)
        ),
    }


def calibrate_many(
    paths: list[Path], provider: str | None = None, *, progress: bool | None = False, **options: Any
) -> tuple[pd.DataFrame, list[Calibration]]:
    """Calibrate several transcripts; one summary row each (a failing file gets its error instead).
    ``progress`` shows one bar over the files (None: on unless the environment turns bars off)."""
    from contextlab.progress import progress_bar

    results: list[Calibration] = []
    rows: list[dict[str, Any]] = []
    bar = progress_bar(len(paths), "calibrate", unit="transcript", enabled=progress if len(paths) > 1 else False)
    for path in paths:
        try:
            cal = calibrate(path, provider, **options)
        except ConfigError as error:
            rows.append({"transcript": path.name, "error": str(error)})
            continue
        finally:
            bar.update(1)
        results.append(cal)
        rows.append(cal.summary)
    bar.close()
    return pd.DataFrame(rows), results
