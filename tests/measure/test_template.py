"""The faithfulness check ignores the fixed text an engine's template adds (issue 13 item 7)."""

from __future__ import annotations

from typing import Any

from contextlab import replay
from contextlab.engine import Message
from contextlab.hermes_texts import SUMMARY_PREFIX
from contextlab.measure.faithfulness import check_summaries
from contextlab.measure.template import host_texts, template_texts
from contextlab.measure.text import identifiers
from tests.measure.test_probe import planted
from tests.toy_engines import KeepLastEngine


def test_the_host_prefix_names_files_no_source_mentions() -> None:
    # The premise: without the template cut, the prefix alone yields two "unsupported" ids.
    assert {"MEMORY.md", "USER.md"} <= set(identifiers(SUMMARY_PREFIX))
    assert SUMMARY_PREFIX in host_texts()
    summary = f"{SUMMARY_PREFIX}\nWorked on src/app/main.py."
    source = "user: please look at src/app/main.py"
    assert set(check_summaries([summary], source).unsupported) == {"MEMORY.md", "USER.md"}
    assert check_summaries([summary], source, template=template_texts()).unsupported == []


def test_only_the_template_is_cut_and_an_engine_can_declare_its_own() -> None:
    class Declares:
        template_texts = ("## Files touched (see tracker at docs/TRACKER.md)",)

    summary = f"{SUMMARY_PREFIX}\n## Files touched (see tracker at docs/TRACKER.md)\nEdited src/a/b.py and MEMORY.md"
    found = check_summaries([summary], "edited src/a/b.py", template=template_texts(Declares()))
    # MEMORY.md written by the engine outside its template is still a claim: still unsupported.
    assert found.unsupported == ["MEMORY.md"]
    assert "docs/TRACKER.md" not in found.unsupported


class PrefixedSummaryEngine(KeepLastEngine):
    """Writes the host's summary prefix above a summary of what it dropped (as the compressor does)."""

    def compress(self, messages: list[Message], *args: Any, **kwargs: Any) -> list[Message]:
        kept = super().compress(messages, *args, **kwargs)
        if kept is messages:
            return messages
        return [{"role": "user", "content": f"{SUMMARY_PREFIX}\ncache shard 42 offline"}, *kept[1:]]


def test_a_replay_reports_no_unsupported_identifier_from_the_prefix() -> None:
    result = replay(planted(), PrefixedSummaryEngine(threshold_tokens=900, keep=3))
    assert result.summary["summaries_checked"] > 0
    findings = result.frames["faithfulness"]
    assert findings.empty, findings
    assert result.summary["summary_unsupported_identifiers"] == 0
