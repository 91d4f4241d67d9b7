"""The coding-agent dataset: a long session of a tool-using agent working on a generated repository.

Tasks (one user turn each): bug fixes (search, read, failing tests, edits as diffs, re-runs), build
investigations (long logs with a few ERROR lines), features, reviews (long diffs, commit logs) and
follow-ups that need something said or seen earlier. Files are re-read and commands re-run with
identical output, as real agents do. Gold facts are planted in user, assistant and tool messages
and, when ``needed_later``, used verbatim by a later request.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contextlab.datasets.codebase import Failure, Module, Project
from contextlab.datasets.session import Call, SessionBuilder, function_tool
from contextlab.datasets.vocab import NOUNS, VERBS, code, filler, hexid, pick, slug
from contextlab.transcripts.model import GoldFact, Transcript

SYSTEM_PROMPT = """You are a coding agent working in the {name} repository at /srv/{name}.
You can read and search files, apply edits, write files and run terminal commands through tools.
Work in small verified steps: look before you edit, run the relevant tests after every change, and
report what you changed and why. Never rewrite files wholesale when a focused edit will do. Keep the
user's decisions and constraints in mind for the whole session; ask when something is ambiguous.
Conventions: Python 3.11, pytest, ruff; commits use the form "<area>: <summary> (<ticket>)"."""

TOOLS: list[dict[str, Any]] = [
    function_tool(
        "read_file",
        "Read a text file with line numbers.",
        {"path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}},
        ["path"],
    ),
    function_tool(
        "search_files",
        "Search file contents for a literal pattern.",
        {"pattern": {"type": "string"}, "path": {"type": "string"}},
        ["pattern"],
    ),
    function_tool(
        "patch",
        "Replace one exact occurrence of old_string with new_string in a file.",
        {"path": {"type": "string"}, "old_string": {"type": "string"}, "new_string": {"type": "string"}},
        ["path", "old_string", "new_string"],
    ),
    function_tool(
        "write_file",
        "Create or overwrite a file.",
        {"path": {"type": "string"}, "content": {"type": "string"}},
        ["path", "content"],
    ),
    function_tool(
        "terminal",
        "Run a shell command in the repository and return its output.",
        {"command": {"type": "string"}, "timeout": {"type": "integer"}},
        ["command"],
    ),
]

SYMPTOMS = (
    "returns duplicates when the input has repeated ids",
    "drops the last record when a limit is set",
    "raises ServiceError even when strict is off",
    "is much slower since the last release",
    "sorts records in the wrong order for ties",
    "ignores the timeout we configured",
)
OPENINGS = ("Looks like", "QA reports that", "I noticed", "Since this morning", "A customer says")


@dataclass
class _Probe:
    """A fact waiting for the later task that needs it."""

    due: int
    fact: GoldFact
    run: Callable[[GoldFact], None]


class CodingSession:
    """Generates one coding-agent session of about ``tasks`` user turns."""

    def __init__(self, seed: int, tasks: int, modules: int, project: str = "orbit") -> None:
        self.rng = random.Random(f"coding-{seed}")
        self.tasks = tasks
        self.project = Project(self.rng, project, modules)
        self.b = SessionBuilder(self.rng)
        self.probes: list[_Probe] = []
        self.task_no = 0
        self.fact_no = 0
        self.read_before: list[str] = []

    # ------------------------------------------------------------------ driver

    def generate(self, transcript_id: str) -> Transcript:
        kinds = [self.bugfix, self.bugfix, self.build, self.feature, self.review]
        while self.task_no < self.tasks:
            due = [p for p in self.probes if p.due <= self.task_no]
            if due:
                probe = due[0]
                self.probes.remove(probe)
                probe.run(probe.fact)
            else:
                pick(self.rng, kinds)()
            self.task_no += 1
        for probe in list(self.probes):  # sessions end with the follow-ups still owed
            probe.run(probe.fact)
        return self.b.transcript(
            transcript_id,
            SYSTEM_PROMPT.format(name=self.project.name),
            TOOLS,
            "gpt-4o",
            {"generator": "contextlab.datasets.coding", "project": self.project.name, "tasks": self.task_no},
        )

    def _fact_id(self, category: str) -> str:
        self.fact_no += 1
        return f"{category}-{self.fact_no:03d}"

    def _later(self, fact: GoldFact, run: Callable[[GoldFact], None]) -> None:
        self.probes.append(_Probe(self.task_no + self.rng.randrange(2, 14), fact, run))

    def _needed(self) -> bool:
        return self._chance(0.65)

    def _chance(self, p: float) -> bool:
        """A seeded coin; short sessions plant facts densely so that every category shows up."""
        draw = self.rng.random()
        return draw < (0.9 if self.tasks < 10 else p)

    # ------------------------------------------------------------------ shared steps

    def _say(self, text: str) -> str:
        """Assistant prose: the point, then some of the reasoning agents narrate between calls."""
        return f"{text} {filler(self.rng, self.rng.randrange(1, 5))}"

    def _read(self, path: str, text: str | None = None) -> None:
        self.read_before.append(path)
        self.b.step(
            self._say(text or f"Reading {path}."),
            [Call("read_file", {"path": path}, self.project.read(path))],
        )

    def _reread_something(self) -> None:
        """Agents re-read files they already saw; unchanged files give identical output."""
        if self.read_before and self.rng.random() < 0.35:
            path = pick(self.rng, self.read_before)
            self.b.step(
                "Let me re-check the current version of that file.",
                [Call("read_file", {"path": path}, self.project.read(path))],
            )

    def _tests(self, module: Module, failures: list[Failure]) -> None:
        log = self.project.pytest_log(self.rng, [module], failures, self.rng.uniform(0.8, 30.0))
        self.b.step(
            self._say(f"Running the tests for {module.path}."),
            [Call("terminal", {"command": f"python -m pytest {module.test_path} -v"}, log)],
        )

    def _full_suite(self, failures: list[Failure]) -> None:
        modules = self.project.modules
        log = self.project.pytest_log(self.rng, modules, failures, self.rng.uniform(40.0, 240.0))
        self.b.step(
            "Running the whole suite to make sure nothing else broke.",
            [Call("terminal", {"command": "python -m pytest -v"}, log)],
        )

    def _edit(self, module: Module, target: str | None = None) -> str:
        """A focused one-line code edit in ``module`` (in function ``target`` when it has an editable
        line); returns the function it touched."""
        text = self.project.files[module.path]
        order = [f for f in module.functions if f.name == target]
        order += [pick(self.rng, module.functions) for _ in range(40)]
        for function in order:
            candidates = [
                line for line in function.lines[function.body_start :] if line.strip() and text.count(line + "\n") == 1
            ]
            self.rng.shuffle(candidates)
            old = new = None
            for line in candidates:
                new = _mutate(self.rng, line)
                if new is not None and new + "\n" not in text:
                    old = line
                    break
            if old is None or new is None:
                continue
            diff = self.project.edit(module.path, old, new)
            self.b.step(
                self._say(f"The problem is in `{function.name}`: this line is the culprit."),
                [Call("patch", {"path": module.path, "old_string": old, "new_string": new}, diff)],
            )
            return function.name
        raise RuntimeError(f"no editable line found in {module.path}")

    # ------------------------------------------------------------------ task kinds

    def bugfix(self) -> None:
        module = self.project.module(self.rng)
        function = pick(self.rng, module.functions)
        request = (
            f"{pick(self.rng, OPENINGS)} `{function.name}` in {module.path} {pick(self.rng, SYMPTOMS)}. Can you fix it?"
        )
        recall = None
        if self._chance(0.3):
            recall = slug(self.rng)
            request += f" FYI, the staging cluster for this work is {recall}; deploy there when the fix is in."
        at = self.b.user(request)
        if recall:
            fact = self.b.plant(self._fact_id("recall"), recall, at, "recall", self._needed())
            if fact.needed_later:
                self._later(fact, self._probe_deploy)
        self.b.step(
            "I'll start by finding where it is defined and used.",
            [Call("search_files", {"pattern": function.name}, self.project.search(function.name))],
        )
        self._read(module.path)
        case = pick(self.rng, ["handles_ties", "respects_limit", "dedupes_ids", "honours_timeout"])
        test = f"test_{function.name}_{case}"
        error_code = code(self.rng, "ORB-E")
        raised = self.project.raised_message(module.path, function.name, self.rng)
        error = f"ServiceError: {raised} [{error_code}]"
        self._tests(module, [Failure(module, test, error, function.name)])
        if self._chance(0.35):
            fact = self.b.plant(
                self._fact_id("artifact"), error_code, self.b.last_tool_index, "artifact", self._needed()
            )
            if fact.needed_later:
                self._later(fact, self._probe_error_code)
        if self.rng.random() < 0.5:
            self._read(module.test_path, "Checking what the failing test expects.")
        self._reread_something()
        self._edit(module, function.name)
        if self.rng.random() < 0.35:
            retry = error.replace("ServiceError: ", "ServiceError: (after retry) ", 1)
            self._tests(module, [Failure(module, test, retry, function.name)])
            self._edit(module, function.name)
        self._tests(module, [])
        if self.rng.random() < 0.3:
            self._full_suite([])
        self._summary(module, function.name)

    def build(self) -> None:
        at = self.b.user(
            pick(
                self.rng,
                (
                    "The nightly build failed. Can you find out why and fix it?",
                    "CI is red on main again; please look at the build log.",
                    "The release build broke after the dependency bump. Investigate please.",
                ),
            )
        )
        del at
        module = self.project.module(self.rng)
        error_code = code(self.rng, "BLD")
        errors = [f"{error_code}: checksum mismatch while bundling {module.path}"]
        errors += [
            f"{code(self.rng, 'BLD')}: {pick(self.rng, VERBS)} step exited with status {self.rng.randrange(1, 3)}"
            for _ in range(self.rng.randrange(0, 3))
        ]
        log = self.project.build_log(self.rng, self.rng.randrange(150, 420), errors)
        self.b.step(
            "Let me run the build to reproduce.",
            [Call("terminal", {"command": "make build 2>&1 | tail -n 400", "timeout": 900}, log)],
        )
        fact = self.b.plant(self._fact_id("artifact"), error_code, self.b.last_tool_index, "artifact", self._needed())
        if fact.needed_later:
            self._later(fact, self._probe_error_code)
        self.b.step(
            f"The first real error is {error_code}. Searching for related code.",
            [
                Call(
                    "search_files",
                    {"pattern": module.functions[0].name},
                    self.project.search(module.functions[0].name),
                )
            ],
        )
        self._read(module.path)
        self._reread_something()
        self._edit(module)
        log = self.project.build_log(self.rng, self.rng.randrange(60, 160), [])
        self.b.step(
            "Rebuilding.",
            [Call("terminal", {"command": "make build 2>&1 | tail -n 400", "timeout": 900}, log)],
        )
        self._summary(module, module.functions[0].name)

    def feature(self) -> None:
        module = self.project.module(self.rng)
        verb, noun = pick(self.rng, VERBS), pick(self.rng, NOUNS)
        name = f"{verb}_{noun}_window"
        at = self.b.user(
            f"Please add a `{name}` helper to {module.path} that works like the existing functions "
            f"but takes a time window. Add tests too."
        )
        decision = None
        if self._chance(0.4):
            decision = f"keep {name} synchronous"
            self.b.messages[at]["content"] += (
                f" Decision from the design review: {decision}, no asyncio in this module."
            )
            fact = self.b.plant(self._fact_id("decision"), decision, at, "decision", self._needed())
            if fact.needed_later:
                self._later(fact, self._probe_decision)
        if self._chance(0.35):
            branch = f"feature/{slug(self.rng)}"
            self.b.messages[at]["content"] += f" Work on the branch {branch}, please."
            fact = self.b.plant(self._fact_id("recall"), branch, at, "recall", self._needed())
            if fact.needed_later:
                self._later(fact, self._probe_push)
        self._read(module.path, "Reading the module to follow its conventions.")
        self._read(module.test_path)
        anchor = module.functions[-1].lines[-1]
        body = [
            f"def {name}({noun}s, start, end, *, limit=None):",
            f'    """{verb.capitalize()} {noun}s whose timestamp falls in [start, end)."""',
            f"    selected = [x for x in {noun}s if start <= x.get('ts', 0) < end]",
            f"    return {module.functions[-1].name}(selected, limit=limit)",
        ]
        if self.project.files[module.path].count(anchor + "\n") == 1:
            diff = self.project.edit(module.path, anchor + "\n", anchor + "\n\n\n" + "\n".join(body) + "\n")
            self.b.step(
                f"Adding `{name}` next to the function it wraps.",
                [
                    Call(
                        "patch",
                        {
                            "path": module.path,
                            "old_string": anchor + "\n",
                            "new_string": anchor + "\n\n\n" + "\n".join(body) + "\n",
                        },
                        diff,
                    )
                ],
            )
        test_path = module.test_path.replace(".py", "_window.py")
        test_text = "\n".join(
            [
                f"from {self.project.name}.{module.path.rsplit('/', 1)[-1][:-3]} import {name}",
                "",
                "",
                f"def test_{name}_selects_window():",
                "    rows = [{'id': i, 'ts': i} for i in range(10)]",
                f"    assert len({name}(rows, 2, 5)) == 3",
                "",
            ]
        )
        self.project.files[test_path] = test_text
        self.b.step(
            "Now the test.",
            [
                Call(
                    "write_file",
                    {"path": test_path, "content": test_text},
                    f"Wrote {len(test_text.encode())} bytes to {test_path}",
                )
            ],
        )
        self._tests(module, [])
        self._summary(module, name)

    def review(self) -> None:
        self.b.user(
            pick(
                self.rng,
                (
                    "Before I merge, can you review the branch against main?",
                    "Give me a quick review of what changed since the last release tag.",
                ),
            )
        )
        modules = [self.project.module(self.rng) for _ in range(self.rng.randrange(2, 5))]
        diff_parts = []
        for module in modules:
            function = pick(self.rng, module.functions)
            old = "\n".join(function.lines)
            new = old.replace("return", "# reviewed\n    return", 1)
            diff_parts.append(
                "".join(
                    difflib.unified_diff(
                        (old + "\n").splitlines(keepends=True),
                        (new + "\n").splitlines(keepends=True),
                        f"a/{module.path}",
                        f"b/{module.path}",
                        n=8,
                    )
                )
            )
        self.b.step(
            "Looking at the diff first.",
            [Call("terminal", {"command": "git diff main...HEAD"}, "".join(diff_parts))],
        )
        commits = [
            f"{hexid(self.rng, 10)} {pick(self.rng, NOUNS)}: {pick(self.rng, VERBS)} "
            f"{pick(self.rng, NOUNS)}s ({code(self.rng, 'ORB')})"
            for _ in range(self.rng.randrange(12, 30))
        ]
        bad = commits[self.rng.randrange(len(commits))].split()[0]
        self.b.step(None, [Call("terminal", {"command": "git log --oneline -n 30"}, "\n".join(commits))])
        fact = self.b.plant(self._fact_id("artifact"), bad, self.b.last_tool_index, "artifact", self._needed())
        if fact.needed_later:
            self._later(fact, self._probe_revert)
        for module in modules[:2]:
            self._read(module.path)
        self.b.step(
            f"Review: the changes look consistent. The riskiest commit is {bad}, which touches "
            f"{modules[0].path} without a test. {filler(self.rng, 2)}"
        )

    def _summary(self, module: Module, function: str) -> None:
        text = f"Done. I changed `{function}` in {module.path} and the tests pass. {filler(self.rng, 2)}"
        if self._chance(0.45):
            plan = f"add retry with backoff to {function}"
            text += f" Next step once this lands: {plan}."
            index = self.b.step(text)
            fact = self.b.plant(self._fact_id("continuation"), plan, index, "continuation", self._needed())
            if fact.needed_later:
                self._later(fact, self._probe_continue)
            return
        if self.rng.random() < 0.25:
            decision = f"pin {pick(self.rng, NOUNS)}-client to {self.rng.randrange(1, 4)}.{self.rng.randrange(0, 20)}"
            text += (
                f" I also recommend we {decision} until upstream fixes their regression; I'll assume that from now on."
            )
            index = self.b.step(text)
            fact = self.b.plant(self._fact_id("decision"), decision, index, "decision", self._needed())
            if fact.needed_later:
                self._later(fact, self._probe_decision)
            return
        self.b.step(text)

    # ------------------------------------------------------------------ probes (later needs)

    def _probe_deploy(self, fact: GoldFact) -> None:
        self.b.user("Please deploy the current branch to the staging cluster I mentioned earlier.")
        output = (
            f"deploying {hexid(self.rng, 10)} to {fact.text}...\nrollout complete: "
            f"{self.rng.randrange(2, 9)}/{self.rng.randrange(9, 12)} pods ready"
        )
        index = self.b.step(
            "Deploying to the staging cluster you gave me.",
            [Call("terminal", {"command": f"./scripts/deploy.sh --cluster {fact.text}"}, output)],
        )
        self.b.use(fact, index)
        self.b.step(f"Deployed to {fact.text}. {filler(self.rng, 1)}")

    def _probe_push(self, fact: GoldFact) -> None:
        self.b.user("Push the branch I asked you to use for that helper and open a PR.")
        index = self.b.step(
            "Pushing the branch you named.",
            [
                Call(
                    "terminal",
                    {"command": f"git push -u origin {fact.text}"},
                    f"branch '{fact.text}' set up to track 'origin/{fact.text}'.",
                )
            ],
        )
        self.b.use(fact, index)
        self.b.step(self._say(f"Pushed {fact.text} and opened the PR."))

    def _probe_error_code(self, fact: GoldFact) -> None:
        self.b.user("Open a tracking issue for the error code we saw earlier so the platform team can look at it.")
        index = self.b.step(
            "Creating the issue.",
            [
                Call(
                    "terminal",
                    {"command": f'gh issue create --title "Recurring {fact.text}" --label platform'},
                    f"https://git.example.com/{self.project.name}/issues/{self.rng.randrange(100, 4000)}",
                )
            ],
        )
        self.b.use(fact, index)
        self.b.step(f"Filed the issue for {fact.text}.")

    def _probe_revert(self, fact: GoldFact) -> None:
        self.b.user("That risky commit you flagged in the review: revert it, please.")
        index = self.b.step(
            "Reverting it.",
            [
                Call(
                    "terminal",
                    {"command": f"git revert --no-edit {fact.text}"},
                    f"[main {hexid(self.rng, 7)}] Revert commit {fact.text}\n 1 file changed, 3 "
                    "insertions(+), 1 deletion(-)",
                )
            ],
        )
        self.b.use(fact, index)
        self.b.step(f"Reverted {fact.text}; the tree builds. {filler(self.rng, 1)}")

    def _probe_continue(self, fact: GoldFact) -> None:
        self.b.user("OK, go ahead with the next step you planned.")
        index = self.b.step(f"Picking up the plan: {fact.text}. First I'll look at the current code.")
        self.b.use(fact, index)
        module = self.project.module(self.rng)
        self._read(module.path)
        self._edit(module)
        self._tests(module, [])
        self.b.step(f"Done: {filler(self.rng, 2)}")

    def _probe_decision(self, fact: GoldFact) -> None:
        self.b.user(
            pick(
                self.rng,
                (
                    "Would it make sense to change the approach here for performance?",
                    "Someone on the team suggests reworking this part; what constraints do we have?",
                ),
            )
        )
        index = self.b.step(f"We agreed earlier to {fact.text}, so I would not change that. {filler(self.rng, 2)}")
        self.b.use(fact, index)


_REWRITES = (
    (" > ", " >= "),
    (" >= ", " > "),
    ("is None", "is not None"),
    ("[:limit]", "[-limit:]"),
    ("True)", "False)"),
    (".append(", ".insert(0, "),
    ("get('id')", "get('id', '')"),
    ("logger.debug(", "logger.info("),
    ("limit is not None and ", "limit and "),
    ("if not ", "if "),
    ("x.get('id'))", "str(x.get('id')))"),
)


def _mutate(rng: random.Random, line: str) -> str | None:
    """A small, plausible code change to one line (None when no rewrite applies)."""
    options = [(old, new) for old, new in _REWRITES if old in line]
    stripped = line.strip()
    if stripped.startswith("return ") and "(" not in stripped:
        indent = line[: len(line) - len(line.lstrip())]
        options.append((line, f"{indent}return list({stripped.removeprefix('return ')})"))
    digits = [c for c in line if c.isdigit()]
    if digits:
        d = pick(rng, digits)
        options.append((d, str((int(d) + 1) % 10)))
    if not options:
        return None
    old, new = pick(rng, options)
    return line.replace(old, new, 1)
