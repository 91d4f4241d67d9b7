"""A fictional Python project the coding-agent dataset works on, and the tool outputs it produces.

The project is generated from the seed: modules of plausible functions, their tests, a build. The
agent reads files (line-numbered, as coding agents show them), searches them, edits them (the
result is a unified diff, and later reads show the edit), runs the tests (pytest-style logs with
failures and tracebacks) and builds (long logs where a few ERROR lines hide among INFO lines).
"""

from __future__ import annotations

import difflib
import random
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from contextlab.datasets.vocab import ADJECTIVES, NOUNS, VERBS, hexid, pick, sample

EXCEPTIONS = ("ValueError", "KeyError", "RuntimeError", "LookupError", "TimeoutError")


@dataclass
class Function:
    """One generated function: its name, its source lines, and where the code starts (after the
    signature and the docstring)."""

    name: str
    lines: list[str]
    body_start: int = 1


class Failure(NamedTuple):
    """A failing test in a pytest run: where, which test, the error line, the function that raised."""

    module: Module
    test: str
    error: str
    function: str


@dataclass
class Module:
    """One source file and its functions; :meth:`text` renders it."""

    path: str
    package: str
    doc: str
    functions: list[Function] = field(default_factory=list)
    constants: list[str] = field(default_factory=list)

    def text(self) -> str:
        head = [f'"""{self.doc}"""', "", "from __future__ import annotations", "", "import logging"]
        head += [
            "from dataclasses import dataclass",
            "",
            f"from {self.package}.errors import ServiceError",
            "",
        ]
        head += ["logger = logging.getLogger(__name__)", "", *self.constants, ""]
        body: list[str] = []
        for function in self.functions:
            body += ["", *function.lines, ""]
        return "\n".join(head + body).rstrip() + "\n"

    def test_text(self) -> str:
        module = self.path.rsplit("/", 1)[-1].removesuffix(".py")
        lines = [f'"""Tests for {self.package}.{module}."""', "", "import pytest", ""]
        lines.append(f"from {self.package}.{module} import " + ", ".join(f.name for f in self.functions[:6]))
        for function in self.functions[:6]:
            lines += ["", "", f"def test_{function.name}_handles_empty_input():"]
            lines += [f"    assert {function.name}([]) in (None, [], {{}}, 0)", ""]
            lines += [
                f"def test_{function.name}_rejects_bad_records():",
                "    with pytest.raises(ServiceError):",
            ]
            lines += [f"        {function.name}([{{'id': None}}])"]
        return "\n".join(lines) + "\n"

    @property
    def test_path(self) -> str:
        return "tests/test_" + self.path.rsplit("/", 1)[-1]


class Project:
    """The whole fictional repository; the agent's edits change it."""

    def __init__(self, rng: random.Random, name: str, n_modules: int) -> None:
        self.rng = rng
        self.name = name
        self.modules: list[Module] = []
        used: set[str] = set()
        while len(self.modules) < n_modules:
            stem = f"{pick(rng, NOUNS)}_{pick(rng, NOUNS)}"
            if stem in used or stem.split("_")[0] == stem.split("_")[1]:
                continue
            used.add(stem)
            self.modules.append(self._module(stem))
        self.files: dict[str, str] = {m.path: m.text() for m in self.modules}
        self.files.update({m.test_path: m.test_text() for m in self.modules})
        self.test_names: dict[str, list[str]] = {}
        for m in self.modules:
            names = [
                f"test_{f.name}_{case}" for f in m.functions for case in ("handles_empty_input", "rejects_bad_records")
            ]
            names += [f"test_{pick(rng, VERBS)}_{pick(rng, NOUNS)}_{i}" for i in range(rng.randrange(4, 30))]
            self.test_names[m.test_path] = names

    # ------------------------------------------------------------------ generation

    def _module(self, stem: str) -> Module:
        rng = self.rng
        first, second = stem.split("_")
        module = Module(
            path=f"src/{self.name}/{stem}.py",
            package=self.name,
            doc=(f"{first.capitalize()} {second} handling: {pick(rng, VERBS)} and {pick(rng, VERBS)} {second}s."),
        )
        module.constants = [
            f"{pick(rng, ADJECTIVES).upper()}_{second.upper()}_LIMIT = {rng.randrange(8, 4096)}",
            f"DEFAULT_{first.upper()}_TIMEOUT = {rng.randrange(1, 120)}.0",
        ]
        module.constants.insert(0, "")
        names: set[str] = set()
        for _ in range(rng.randrange(8, 20)):
            name = f"{pick(rng, VERBS)}_{pick(rng, ADJECTIVES)}_{pick(rng, NOUNS)}s"
            if name in names:
                continue
            names.add(name)
            module.functions.append(self._function(name, first, second))
        return module

    def _function(self, name: str, first: str, second: str) -> Function:
        rng = self.rng
        coll, item, acc = f"{second}s", second, f"{pick(rng, ADJECTIVES)}_{first}s"
        verb, *rest = name.split("_")
        lines = [f"def {name}({coll}, *, limit=None, strict=False):"]
        lines += [
            f'    """{verb.capitalize()} {" ".join(rest)} for the {first} service.',
            "",
            "    Args:",
            f"        {coll}: the {second} records to process, as dicts with at least an ``id``.",
            "        limit: keep at most this many results (None keeps all).",
            f"        strict: raise ServiceError instead of skipping {pick(rng, ADJECTIVES)} records.",
            "",
            "    Returns:",
            f"        The {pick(rng, ADJECTIVES)} {first} records, in a stable order.",
            '    """',
        ]
        body_start = len(lines)
        lines.append(f"    {acc} = []")
        statements = [
            [f"    if not {coll}:", f"        return {acc}"],
            [
                f"    for {item} in {coll}:",
                f"        if {item}.get('id') is None:",
                f"            raise ServiceError('{item} without id in {name}')",
                f"        {acc}.append({item})",
            ],
            [f"    {acc} = [x for x in {acc} if x.get('{pick(rng, ADJECTIVES)}', True)]"],
            [
                f"    if limit is not None and len({acc}) > limit:",
                f"        logger.warning('{name}: truncating %d {coll}', len({acc}))",
                f"        {acc} = {acc}[:limit]",
            ],
            [
                f"    total = sum(x.get('{pick(rng, NOUNS)}_count', 0) for x in {acc})",
                f"    if strict and total > {rng.randrange(10, 9000)}:",
                f"        raise ServiceError(f'{name}: total {{total}} over budget')",
            ],
            [f"    logger.debug('{name} %s -> %d', {pick(rng, ['strict', 'limit'])}, len({acc}))"],
            [f"    {acc}.sort(key=lambda x: (x.get('{pick(rng, NOUNS)}'), x.get('id')))"],
            [
                "    try:",
                f"        checksum = _digest({acc})",
                f"    except {pick(rng, EXCEPTIONS)} as error:",
                f"        raise ServiceError('{pick(rng, VERBS)} failed') from error",
            ],
        ]
        for block in sample(rng, statements, rng.randrange(3, len(statements) + 1)):
            lines += block
        lines.append(f"    return {acc}")
        return Function(name, lines, body_start)

    # ------------------------------------------------------------------ tools

    def module(self, rng: random.Random) -> Module:
        return pick(rng, self.modules)

    def read(self, path: str, offset: int = 1, limit: int | None = None) -> str:
        """``read_file`` output: line-numbered, like coding agents show files."""
        lines = self.files[path].splitlines()
        end = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
        shown = [f"{n:6d}\t{lines[n - 1]}" for n in range(offset, end + 1)]
        return "\n".join(shown) + (f"\n... ({len(lines) - end} more lines)" if end < len(lines) else "")

    def edit(self, path: str, old: str, new: str) -> str:
        """Apply a replacement and return the ``patch`` tool output (a unified diff)."""
        before = self.files[path]
        if old not in before:
            raise ValueError(f"edit target not found in {path}")
        after = before.replace(old, new, 1)
        self.files[path] = after
        diff = difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}", n=3
        )
        return f"Applied 1 edit to {path}\n" + "".join(diff)

    def search(self, pattern: str, limit: int = 60) -> str:
        """``search_files`` output: ``path:line:text`` for every matching line (capped)."""
        hits = []
        for path in sorted(self.files):
            for n, line in enumerate(self.files[path].splitlines(), start=1):
                if pattern in line:
                    hits.append(f"{path}:{n}:{line.strip()}")
        shown = hits[:limit]
        tail = f"\n[{len(hits) - limit} more matches truncated]" if len(hits) > limit else ""
        return ("\n".join(shown) + tail) if shown else f"No matches for {pattern!r}"

    def pytest_log(
        self,
        rng: random.Random,
        targets: list[Module],
        failures: list[Failure],
        seconds: float,
    ) -> str:
        """A pytest run over ``targets`` with the given ``(module, test name, error line)`` failures."""
        out = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0",
            f"rootdir: /srv/{self.name}",
            "configfile: pyproject.toml",
            "plugins: xdist-3.6.1, cov-5.0.0",
        ]
        failing = {(f.module.test_path, f.test) for f in failures}
        plan = []
        for module in targets:
            names = self.test_names[module.test_path]
            plan.append((module, names + [t for p, t in sorted(failing) if p == module.test_path and t not in names]))
        total = sum(len(names) for _, names in plan)
        out += [f"collected {total} items", ""]
        done = 0
        for module, names in plan:
            for name in names:
                done += 1
                status = "FAILED" if (module.test_path, name) in failing else "PASSED"
                out.append(f"{module.test_path}::{name} {status} [{100 * done // max(total, 1):3d}%]")
        if rng.random() < 0.5:
            out += [
                "",
                "=============================== warnings summary ===============================",
                f"{targets[0].path}:12",
                f"  /srv/{self.name}/{targets[0].path}:12: DeprecationWarning: datetime.utcnow() is deprecated",
                "    stamp = datetime.utcnow()",
                "",
                "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html",
            ]
        if failures:
            out += ["", "=================================== FAILURES ==================================="]
            for module, test, error, function in failures:
                line = rng.randrange(20, 400)
                raised_at, raising = self._raise_site(module.path, function)
                out += [
                    f"_________________________ {test} _________________________",
                    "",
                    f"    def {test}():",
                    f"        records = make_records({rng.randrange(2, 64)})",
                    f">       result = {function}(records, strict=True)",
                    "",
                    f"{module.test_path}:{line}: ",
                    "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _",
                    "",
                    f"{module.path}:{raised_at}: in {function}",
                    f"    {raising}",
                    f"E   {error}",
                    "",
                    f"{module.test_path}:{line}: {error.split(':')[0]}",
                ]
            out += ["=========================== short test summary info ============================"]
            out += [f"FAILED {f.module.test_path}::{f.test} - {f.error}" for f in failures]
        passed = total - len(failing)
        summary = f"{len(failures)} failed, {passed} passed" if failures else f"{passed} passed"
        out.append(f"======================== {summary} in {seconds:.2f}s ========================")
        return "\n".join(out)

    def raised_message(self, path: str, function: str, rng: random.Random) -> str:
        """The message the first ``raise`` of ``function`` produces (``{total}`` filled in)."""
        _, raising = self._raise_site(path, function)
        quoted = re.search(r"\(f?'([^']*)'\)", raising)
        if quoted is None:
            return f"{function} failed"
        return quoted.group(1).replace("{total}", str(rng.randrange(100, 9999)))

    def _raise_site(self, path: str, function: str) -> tuple[int, str]:
        """Line number and text of the first ``raise`` in ``function`` as the file stands now."""
        lines = self.files[path].splitlines()
        start = next((n for n, text in enumerate(lines) if text.startswith(f"def {function}(")), 0)
        for n in range(start + 1, len(lines)):
            if lines[n].startswith("def "):
                break
            if lines[n].strip().startswith("raise "):
                return n + 1, lines[n].strip()
        return start + 1, f"return {function}(records)"

    def build_log(self, rng: random.Random, lines: int, errors: list[str]) -> str:
        """A long build/deploy log: mostly INFO noise, the given ERROR lines at seeded positions."""
        stamp = rng.randrange(36000, 40000)
        out = []
        positions = sorted(rng.sample(range(lines // 3, lines), len(errors)))
        error_at = dict(zip(positions, errors, strict=True))
        for n in range(lines):
            stamp += rng.randrange(1, 900)
            day, hour, minute, second = rng.randrange(1, 28), stamp // 3600 % 24, stamp // 60 % 60, stamp % 60
            clock = f"2026-02-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"
            if n in error_at:
                out.append(f"{clock} ERROR [worker-{rng.randrange(1, 9)}] {error_at[n]}")
                out.append(
                    f"{clock} ERROR [worker-{rng.randrange(1, 9)}]   at "
                    f"{self.module(rng).path}:{rng.randrange(10, 300)}"
                )
                continue
            module = self.module(rng)
            kind = rng.randrange(6)
            if kind == 0:
                out.append(
                    f"{clock} INFO  [worker-{rng.randrange(1, 9)}] compiled {module.path} ({rng.randrange(20, 900)} ms)"
                )
            elif kind == 1:
                out.append(f"{clock} INFO  [cache] hit {hexid(rng, 16)} for {module.path}")
            elif kind == 2:
                out.append(
                    f"{clock} DEBUG [deps] resolved "
                    f"{pick(rng, NOUNS)}-{pick(rng, VERBS)}=="
                    f"{rng.randrange(0, 5)}.{rng.randrange(0, 30)}.{rng.randrange(0, 12)}"
                )
            elif kind == 3:
                out.append(
                    f"{clock} WARN  [lint] {module.path}:{rng.randrange(1, 200)} unused variable "
                    f"'{pick(rng, ADJECTIVES)}_{pick(rng, NOUNS)}'"
                )
            else:
                out.append(
                    f"{clock} INFO  [bundle] wrote {module.path.replace('.py', '.pyc')} "
                    f"{rng.randrange(1, 90)}.{rng.randrange(10)} KiB"
                )
        return "\n".join(out)
