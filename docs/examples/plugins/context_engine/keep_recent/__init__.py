"""Keeps the first message and the last 12 once the threshold is crossed (a host-style plugin, no plugin.yaml)."""

from agent.context_engine import ContextEngine


class KeepRecent(ContextEngine):
    @property
    def name(self):
        return "keep_recent"

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or self.last_prompt_tokens) >= self.threshold_tokens

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        cut = max(1, len(messages) - 12)
        while cut < len(messages) and messages[cut]["role"] != "user":
            cut += 1  # start the kept tail at a user message: no orphaned tool results
        if cut >= len(messages) or cut <= 1:
            return messages  # the input object means "nothing to do"
        self.compression_count += 1
        return messages[:1] + messages[cut:]


def register(ctx):
    ctx.register_context_engine(KeepRecent())
