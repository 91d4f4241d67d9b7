"""The support-agent dataset: a customer-support assistant working through a queue of tickets.

Each ticket (one user turn) is pasted by the support lead; the agent looks up the customer and the
order, consults long knowledge-base articles (the same article is fetched again and again, with
identical output), acts (refunds, replacements), updates the ticket and drafts the reply. The lead
gives standing instructions and decisions along the way; refund and tracking ids come back in tool
output; the agent promises follow-ups. Later tickets need those facts verbatim.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contextlab.datasets.session import Call, SessionBuilder, function_tool
from contextlab.datasets.vocab import ADJECTIVES, NOUNS, code, person, pick
from contextlab.transcripts.model import GoldFact, Transcript

SYSTEM_PROMPT = """You are the support assistant of Northwind Outfitters, an online outdoor-gear shop.
You help the support lead work through the ticket queue. Use the tools to look up customers and
orders, consult the knowledge base before quoting any policy, and never promise what policy does
not allow. Refunds go through issue_refund; every ticket ends with update_ticket and a reply drafted
with send_reply. Be warm and brief with customers. Follow the lead's standing instructions for the
whole session."""

TOOLS: list[dict[str, Any]] = [
    function_tool("lookup_customer", "Find a customer by e-mail.", {"email": {"type": "string"}}, ["email"]),
    function_tool(
        "get_order",
        "Fetch an order with items, shipments and payments.",
        {"order_id": {"type": "string"}},
        ["order_id"],
    ),
    function_tool(
        "search_kb",
        "Search the knowledge base; returns the best article in full.",
        {"query": {"type": "string"}},
        ["query"],
    ),
    function_tool(
        "issue_refund",
        "Refund part or all of an order.",
        {"order_id": {"type": "string"}, "amount": {"type": "number"}, "reason": {"type": "string"}},
        ["order_id", "amount", "reason"],
    ),
    function_tool(
        "update_ticket",
        "Set a ticket's status and add an internal note.",
        {"ticket_id": {"type": "string"}, "status": {"type": "string"}, "note": {"type": "string"}},
        ["ticket_id", "status"],
    ),
    function_tool(
        "send_reply",
        "Send a reply to the customer on a ticket.",
        {"ticket_id": {"type": "string"}, "body": {"type": "string"}},
        ["ticket_id", "body"],
    ),
]

PRODUCTS = (
    "Ridgeline 45L backpack",
    "Cirrus down jacket",
    "Tundra trekking poles",
    "Basalt hiking boots",
    "Aurora 2P tent",
    "Drift sleeping pad",
    "Canyon water filter",
    "Summit headlamp",
    "Fjord rain shell",
)
PROBLEMS = (
    ("arrived damaged", "damage"),
    ("never arrived", "lost"),
    ("is the wrong size", "exchange"),
    ("stopped working after a week", "defect"),
    ("was charged twice", "billing"),
    ("arrived late for my trip", "late"),
)
CUSTOMER_SENTENCES = (
    "I ordered it for a trip that starts next week.",
    "This is the second time this happens with your shop.",
    "The box itself looked fine when it arrived.",
    "I already sent two e-mails and got no answer.",
    "My partner ordered the same thing and had no problem.",
    "I'd rather get a replacement than my money back, if possible.",
    "The tracking page has not changed for days.",
    "I attached photos to my first message.",
    "I've been a customer for years and never had an issue before.",
    "Please call me if that is easier; e-mail is fine too.",
)
POLICY_SENTENCES = (
    "Photos are required for damage claims above the standard threshold.",
    "Carrier claims are opened by the logistics team, not by agents.",
    "Store credit may be offered instead of a refund when the customer agrees.",
    "Partial refunds do not close the return window.",
    "Repeat contacts within 14 days are routed to the same agent where possible.",
    "Exceptions must be noted on the ticket with the approver's name.",
)
LEAD_SENTENCES = (
    "Ping me if anything is unclear.",
    "It came up in the weekly review.",
    "Thanks for keeping the queue moving.",
)
REPLY_SENTENCES = (
    "Thank you for your patience while we looked into this.",
    "If anything else comes up, just reply to this e-mail.",
    "We have also shared your feedback with our logistics team.",
    "You don't need to send the item back.",
)


def _say(rng: random.Random, sentences: tuple[str, ...], n: int) -> str:
    return " ".join(pick(rng, sentences) for _ in range(n))


KB_TOPICS = (
    "damaged items",
    "lost shipments",
    "exchanges and sizing",
    "warranty and defects",
    "billing disputes",
    "delivery delays",
    "VIP programme",
    "refund limits",
)


@dataclass
class _Probe:
    due: int
    fact: GoldFact
    run: Callable[[GoldFact], None]


class SupportSession:
    """Generates one support session of ``tickets`` user turns."""

    def __init__(self, seed: int, tickets: int) -> None:
        self.rng = random.Random(f"support-{seed}")
        self.tickets = tickets
        self.b = SessionBuilder(self.rng)
        self.kb = {topic: self._article(topic) for topic in KB_TOPICS}
        self.probes: list[_Probe] = []
        self.turn = 0
        self.fact_no = 0

    def generate(self, transcript_id: str) -> Transcript:
        self._standing_instructions()
        while self.turn < self.tickets:
            due = [p for p in self.probes if p.due <= self.turn]
            if due:
                self.probes.remove(due[0])
                due[0].run(due[0].fact)
            elif self.turn and self.turn % 9 == 0:
                self._new_instruction()
            else:
                self.ticket()
            self.turn += 1
        for probe in list(self.probes):
            probe.run(probe.fact)
        return self.b.transcript(
            transcript_id,
            SYSTEM_PROMPT,
            TOOLS,
            "gpt-4o",
            {"generator": "contextlab.datasets.support", "tickets": self.turn},
        )

    def _fact_id(self, category: str) -> str:
        self.fact_no += 1
        return f"{category}-{self.fact_no:03d}"

    def _later(self, fact: GoldFact, run: Callable[[GoldFact], None]) -> None:
        self.probes.append(_Probe(self.turn + self.rng.randrange(2, 10), fact, run))

    # ------------------------------------------------------------------ content

    def _article(self, topic: str) -> str:
        rng = self.rng
        lines = [
            f"# Policy: {topic}",
            f"Article KB-{rng.randrange(100, 999)} · last reviewed "
            f"2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 28):02d}",
            "",
        ]
        for section in range(rng.randrange(9, 15)):
            lines.append(f"## {section + 1}. {pick(rng, ADJECTIVES).capitalize()} {pick(rng, NOUNS)} cases")
            for _ in range(rng.randrange(4, 8)):
                days, pct = rng.randrange(7, 60), rng.choice((10, 15, 20, 25, 50, 100))
                lines.append(
                    f"- Within {days} days of delivery, customers may receive up to {pct}% back for "
                    f"{pick(rng, PRODUCTS).lower()}s "
                    f"when the {pick(rng, NOUNS)} is {pick(rng, ADJECTIVES)}. Agents must record the "
                    f"{pick(rng, NOUNS)} "
                    "reference and the carrier scan before approving; exceptions need a team lead. "
                    f"{_say(rng, POLICY_SENTENCES, 2)}"
                )
            lines.append("")
        return "\n".join(lines)

    def _customer(self) -> dict[str, Any]:
        name = person(self.rng)
        return {
            "name": name,
            "email": f"{name.lower().replace(' ', '.')}@example.org",
            "customer_id": code(self.rng, "CUS", 6),
            "tier": pick(self.rng, ("standard", "standard", "VIP")),
            "since": f"20{self.rng.randrange(15, 25)}-{self.rng.randrange(1, 13):02d}",
        }

    def _order(self, customer: dict[str, Any]) -> dict[str, Any]:
        items: list[dict[str, Any]] = [
            {
                "sku": code(self.rng, "SKU", 5),
                "name": pick(self.rng, PRODUCTS),
                "qty": self.rng.randrange(1, 3),
                "price": round(self.rng.uniform(19, 420), 2),
                "warehouse": pick(self.rng, ("AMS-2", "FRA-1", "MAD-3")),
                "returnable_until": f"2026-0{self.rng.randrange(1, 10)}-{self.rng.randrange(10, 29)}",
            }
            for _ in range(self.rng.randrange(1, 4))
        ]
        return {
            "order_id": code(self.rng, "NW", 7),
            "customer_id": customer["customer_id"],
            "items": items,
            "total": round(sum(i["price"] * i["qty"] for i in items), 2),
            "shipments": [
                {
                    "carrier": pick(self.rng, ("UPS", "DHL", "PostNL")),
                    "tracking": code(self.rng, "1Z", 9),
                    "status": pick(self.rng, ("delivered", "in transit", "exception")),
                }
            ],
            "payments": [{"method": pick(self.rng, ("visa", "mastercard", "paypal")), "captured": True}],
        }

    # ------------------------------------------------------------------ turns

    def _standing_instructions(self) -> None:
        promo = code(self.rng, "SHIPVIP", 4)
        at = self.b.user(
            "Morning! Queue is long today. Standing instruction: VIP customers with any delivery "
            "problem get "
            f"free express shipping on their next order with code {promo}. Mention it in the reply."
        )
        fact = self.b.plant(self._fact_id("recall"), promo, at, "recall", True)
        self._later(fact, self._probe_vip)
        self.b.step("Understood, I'll include that code for VIP customers with delivery problems.")
        limit = f"refunds above {self.rng.choice((150, 200, 250))} EUR need sign-off from {person(self.rng)}"
        at = self.b.user(f"Also, decision from this morning's sync: {limit}. Don't issue those yourself.")
        fact = self.b.plant(self._fact_id("decision"), limit, at, "decision", True)
        self._later(fact, self._probe_limit)
        self.b.step("Noted. I'll escalate refunds over that amount instead of issuing them.")

    def _new_instruction(self) -> None:
        tag = f"{pick(self.rng, ADJECTIVES)}-{pick(self.rng, NOUNS)}-{self.rng.randrange(10, 99)}"
        at = self.b.user(
            f"Quick update from the team lead: from now on tag every escalated ticket with the label {tag} "
            f"so the {pick(self.rng, NOUNS)} team can find them. {_say(self.rng, LEAD_SENTENCES, 1)}"
        )
        fact = self.b.plant(self._fact_id("recall"), tag, at, "recall", self.rng.random() < 0.75)
        if fact.needed_later:
            self._later(fact, self._probe_tag)
        self.b.step(f"Got it: escalations get the {tag} label from now on.")

    def _probe_tag(self, fact: GoldFact) -> None:
        ticket_id = code(self.rng, "T", 5)
        self.b.user(
            f"Ticket {ticket_id}: angry customer, third contact about the same broken zipper. Escalate it please."
        )
        index = self.b.step(
            "Escalating with the label we agreed on.",
            [
                Call(
                    "update_ticket",
                    {"ticket_id": ticket_id, "status": "escalated", "note": f"label: {fact.text}"},
                    '{"ok": true}',
                )
            ],
        )
        self.b.use(fact, index)

    def ticket(self) -> None:
        customer = self._customer()
        order = self._order(customer)
        product, (problem, topic_key) = pick(self.rng, order["items"])["name"], pick(self.rng, PROBLEMS)
        ticket_id = code(self.rng, "T", 5)
        body = (
            f"Ticket {ticket_id} from {customer['email']}:\n> Hi, my order {order['order_id']} "
            f"({product}) {problem}. "
            f"{_say(self.rng, CUSTOMER_SENTENCES, self.rng.randrange(2, 6))} I'd like this sorted "
            "before the weekend. "
            f"Thanks, {customer['name'].split()[0]}"
        )
        self.b.user(body, gap=(20.0, 400.0))
        self.b.step(
            "Looking up the customer.",
            [Call("lookup_customer", {"email": customer["email"]}, json.dumps(customer, indent=2))],
        )
        self.b.step(None, [Call("get_order", {"order_id": order["order_id"]}, json.dumps(order, indent=2))])
        tracking = order["shipments"][0]["tracking"]
        topic = {
            "damage": "damaged items",
            "lost": "lost shipments",
            "exchange": "exchanges and sizing",
            "defect": "warranty and defects",
            "billing": "billing disputes",
            "late": "delivery delays",
        }[topic_key]
        self.b.step("Checking the policy before I answer.", [Call("search_kb", {"query": topic}, self.kb[topic])])
        if self.rng.random() < 0.4:
            self.b.step(
                "And the refund limits article.",
                [Call("search_kb", {"query": "refund limits"}, self.kb["refund limits"])],
            )
        amount = round(min(order["total"], self.rng.uniform(15, 140)), 2)
        refund_id = code(self.rng, "RF", 6)
        self.b.step(
            f"Policy allows a partial refund here; issuing {amount} EUR.",
            [
                Call(
                    "issue_refund",
                    {"order_id": order["order_id"], "amount": amount, "reason": topic_key},
                    json.dumps(
                        {
                            "refund_id": refund_id,
                            "status": "accepted",
                            "amount": amount,
                            "eta_days": self.rng.randrange(3, 10),
                        }
                    ),
                )
            ],
        )
        if self.rng.random() < 0.4:
            fact = self.b.plant(
                self._fact_id("artifact"),
                refund_id,
                self.b.last_tool_index,
                "artifact",
                self.rng.random() < 0.7,
            )
            if fact.needed_later:
                self._later(fact, functools.partial(self._probe_refund, customer=customer, ticket_id=ticket_id))
        note = f"Refunded {amount} EUR ({refund_id}); tracking {tracking}."
        self.b.step(
            None,
            [
                Call(
                    "update_ticket",
                    {"ticket_id": ticket_id, "status": "pending-customer", "note": note},
                    '{"ok": true}',
                )
            ],
        )
        reply = (
            f"Hi {customer['name'].split()[0]},\n\nI'm sorry your {product} {problem}. I've refunded "
            f"{amount} EUR "
            f"(reference {refund_id}); you'll see it within a few days. "
            f"{_say(self.rng, REPLY_SENTENCES, 2)}\n\nBest,\nNorthwind Support"
        )
        self.b.step(None, [Call("send_reply", {"ticket_id": ticket_id, "body": reply}, '{"sent": true}')])
        summary = f"{ticket_id} handled: refunded {amount} EUR and replied."
        if self.rng.random() < 0.3:
            plan = f"follow up on {ticket_id} once the warehouse confirms the restock"
            index = self.b.step(summary + f" I'll {plan}.")
            fact = self.b.plant(self._fact_id("continuation"), plan, index, "continuation", self.rng.random() < 0.7)
            if fact.needed_later:
                self._later(fact, self._probe_followup)
        else:
            self.b.step(summary)

    # ------------------------------------------------------------------ probes

    def _probe_vip(self, fact: GoldFact) -> None:
        customer = {**self._customer(), "tier": "VIP"}
        ticket_id = code(self.rng, "T", 5)
        self.b.user(
            f"Ticket {ticket_id} from {customer['email']}:\n> My parcel is stuck in transit for two "
            f"weeks now. {_say(self.rng, CUSTOMER_SENTENCES, 2)}"
        )
        self.b.step(None, [Call("lookup_customer", {"email": customer["email"]}, json.dumps(customer, indent=2))])
        self.b.step(
            "VIP with a delivery problem: the standing instruction applies.",
            [Call("search_kb", {"query": "VIP programme"}, self.kb["VIP programme"])],
        )
        index = self.b.step(
            None,
            [
                Call(
                    "send_reply",
                    {
                        "ticket_id": ticket_id,
                        "body": "Hi, sorry about the delay! Your next order ships express for free "
                        f"with code {fact.text}.",
                    },
                    '{"sent": true}',
                )
            ],
        )
        self.b.use(fact, index)
        self.b.step(f"{ticket_id}: replied with the VIP express code.")

    def _probe_limit(self, fact: GoldFact) -> None:
        ticket_id = code(self.rng, "T", 5)
        self.b.user(
            f"Ticket {ticket_id}: customer wants a full refund of 389.00 EUR for a returned tent. Can you process it?"
        )
        index = self.b.step(
            f"That is over the limit: {fact.text}, so I won't issue it myself. I'll escalate.",
            [
                Call(
                    "update_ticket",
                    {"ticket_id": ticket_id, "status": "escalated", "note": "needs sign-off"},
                    '{"ok": true}',
                )
            ],
        )
        self.b.use(fact, index)

    def _probe_refund(self, fact: GoldFact, customer: dict[str, Any], ticket_id: str) -> None:
        self.b.user(
            f"{customer['name']} wrote back on {ticket_id}: 'Where is my refund? I don't see it.' What do we tell them?"
        )
        index = self.b.step(
            f"The refund was issued as {fact.text}; I'll share the reference and the usual timeline.",
            [
                Call(
                    "send_reply",
                    {
                        "ticket_id": ticket_id,
                        "body": f"Your refund {fact.text} was accepted and should arrive within 10 days.",
                    },
                    '{"sent": true}',
                )
            ],
        )
        self.b.use(fact, index)

    def _probe_followup(self, fact: GoldFact) -> None:
        self.b.user("The warehouse just confirmed the restock. Please continue with the follow-up you planned.")
        index = self.b.step(f"Doing what I said: I'll {fact.text} now.")
        self.b.use(fact, index)
        ticket_id = fact.text.split()[3]
        self.b.step(
            None,
            [
                Call(
                    "update_ticket",
                    {
                        "ticket_id": ticket_id,
                        "status": "solved",
                        "note": "restock confirmed, replacement shipped",
                    },
                    '{"ok": true}',
                )
            ],
        )
