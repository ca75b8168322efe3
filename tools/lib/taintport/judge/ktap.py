# SPDX-License-Identifier: GPL-2.0
"""KTAP in (from a serial console log), results out.

The agent prints KTAP version 1 nested the way kunit nests a suite's cases:
a top-level plan of subtests, one subtest per load mode with its own
version line, `# Subtest:` header and plan, its tests indented by four
spaces, and the subtest's own result line at the top level
(Documentation/dev-tools/ktap.rst). Follows kunit_parser's rules: parse
only from the first `KTAP version` line on, strip the prefix that line has,
and a planned test without a result line is a crash, not a pass. Anything
that keeps the results from being trusted (no KTAP, no plan, missing
results, a subtest whose result contradicts its tests, no end marker, a
kernel panic) is recorded in `errors`; the verdict turns any error into
status "error", never into a pass or a fail.
"""
import re
from dataclasses import dataclass, field

VERSION = re.compile(r"KTAP version (\d+)")
PLAN = re.compile(r"^1\.\.(\d+)$")
SUBTEST = re.compile(r"^# Subtest: (\S+)$")
RESULT = re.compile(r"^(not ok|ok) (\d+) (\S+)(?:\s+#\s*(\S+)\s*(.*))?$")
# the agent's, and the selftests runner's (test-matrix/dracut/51taintport-selftests)
END = re.compile(r"^# taintport-(?:agent|selftests): end status=(\d+)$")
PANIC = re.compile(r"Kernel panic - not syncing|\bBUG: |\bOops: |general protection fault"
                   r"|Kernel Offset: ")
REFUSAL = "taintport-agent: refusing to run"
INDENT = 4  # spaces a subtest's lines are indented by


@dataclass
class Result:
    number: int
    name: str       # "<subtest>.<test>" for a test, "<subtest>" for a subtest's own line
    ok: bool
    directive: str  # "" or "SKIP" / "TODO"
    reason: str = ""
    diagnostics: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> bool:
        return self.directive == "SKIP"


@dataclass
class Subtest:
    name: str
    plan: int | None = None
    tests: list[str] = field(default_factory=list)  # qualified names, in order
    result: Result | None = None                     # its own line at the top level


@dataclass
class Parsed:
    results: dict[str, Result] = field(default_factory=dict)  # qualified test name -> Result
    subtests: dict[str, Subtest] = field(default_factory=dict)
    plan: int | None = None          # the top level's: number of subtests
    end_status: int | None = None
    errors: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)   # the KTAP text as printed
    panic: list[str] = field(default_factory=list)   # panic lines with some context

    @property
    def broken(self) -> bool:
        return bool(self.errors)


def clean(line: str) -> str:
    return line.replace("\r", "").rstrip("\n")


def _result(m: re.Match[str], name: str, diagnostics: list[str]) -> Result:
    return Result(number=int(m.group(2)), name=name, ok=m.group(1) == "ok",
                  directive=(m.group(4) or "").upper(), reason=(m.group(5) or "").strip(),
                  diagnostics=diagnostics)


class _Reader:
    """One pass over the KTAP lines; what it finds goes into parsed."""

    def __init__(self, parsed: Parsed):
        self.parsed = parsed
        self.current: Subtest | None = None   # the subtest being read
        self.pending: list[str] = []          # diagnostics for the next result
        self.next_subtest = 1
        self.next_test = 1

    def error(self, message: str) -> None:
        self.parsed.errors.append(message)

    def diagnostic(self, body: str) -> None:
        self.pending.append(body[2:])
        if body.startswith("# error: "):
            self.error("agent: " + body[len("# error: "):])

    def nested(self, body: str) -> None:
        if VERSION.search(body):
            if self.current is not None and self.current.result is None:
                self.error(f"subtest {self.current.name} has no result line")
            self.current = Subtest(name="")
            self.next_test = 1
            return
        if self.current is None:
            self.error(f"indented line outside a subtest: {body[:60]}")
            return
        m = SUBTEST.match(body)
        if m and not self.current.name:
            self.current.name = m.group(1)
            if m.group(1) in self.parsed.subtests:
                self.error(f"subtest {m.group(1)} printed twice")
            self.parsed.subtests[m.group(1)] = self.current
            return
        m = PLAN.match(body)
        if m and self.current.plan is None:
            self.current.plan = int(m.group(1))
            return
        m = RESULT.match(body)
        if m:
            self.test(m)
            return
        if body.startswith("# "):
            self.diagnostic(body)

    def test(self, m: re.Match[str]) -> None:
        sub = self.current
        assert sub is not None
        if not sub.name:
            self.error(f"test {m.group(3)} in a subtest without a '# Subtest:' line")
            return
        name = f"{sub.name}.{m.group(3)}"
        result = _result(m, name, self.pending)
        self.pending = []
        if result.number != self.next_test:
            self.error(f"{name}: result {result.number} out of order: "
                       f"expected {self.next_test}")
        self.next_test = result.number + 1
        if name in self.parsed.results:
            self.error(f"result name {name} reported twice")
        self.parsed.results[name] = result
        sub.tests.append(name)

    def top(self, body: str) -> bool:
        """False at the end marker."""
        parsed = self.parsed
        m = PLAN.match(body)
        if m and parsed.plan is None:
            parsed.plan = int(m.group(1))
            return True
        m = RESULT.match(body)
        if m:
            self.close(m)
            return True
        m = END.match(body)
        if m:
            parsed.end_status = int(m.group(1))
            return False
        if body.startswith("# "):
            self.diagnostic(body)
        return True

    def close(self, m: re.Match[str]) -> None:
        """A top-level result line: the result of the subtest just read."""
        sub = self.current
        name = m.group(3)
        if sub is None or sub.name != name or sub.result is not None:
            self.error(f"top-level result {name} closes no subtest")
            return
        sub.result = _result(m, name, self.pending)
        self.pending = []
        if sub.result.number != self.next_subtest:
            self.error(f"subtest {name}: result {sub.result.number} out of order: "
                       f"expected {self.next_subtest}")
        self.next_subtest = sub.result.number + 1


def parse(text: str) -> Parsed:
    parsed = Parsed()
    raw = [clean(line) for line in text.splitlines()]

    panic_at = next((i for i, line in enumerate(raw) if PANIC.search(line)), None)
    if panic_at is not None:
        parsed.panic = raw[max(0, panic_at - 3):panic_at + 12]
        parsed.errors.append("kernel panic: " + raw[panic_at].strip())

    start = next((i for i, line in enumerate(raw) if VERSION.search(line)), None)
    if start is None:
        refused = [line for line in raw if REFUSAL in line]
        parsed.errors.append(refused[0].strip() if refused
                             else "no KTAP output on the console")
        return parsed

    # as kunit_parser does: what precedes the first version line is a prefix
    prefix = raw[start].index("KTAP version")
    reader = _Reader(parsed)
    for line in raw[start + 1:]:
        text = line[prefix:]
        body = text.strip()
        if not body:
            continue
        indented = len(text) - len(text.lstrip(" ")) >= INDENT
        if not (VERSION.search(body) or PLAN.match(body) or SUBTEST.match(body)
                or RESULT.match(body) or body.startswith("# ")):
            continue  # a stray console line (kernel message), not KTAP
        parsed.lines.append(text.rstrip())
        if indented:
            reader.nested(body)
        elif not reader.top(body):
            break
    parsed.lines.insert(0, raw[start][prefix:].strip())
    check_complete(parsed, reader.current)
    return parsed


def check_complete(parsed: Parsed, last: Subtest | None) -> None:
    """Every plan met, every subtest closed by a result that agrees with its tests."""
    if parsed.plan is None:
        parsed.errors.append("KTAP plan line (1..N) missing")
    elif len(parsed.subtests) != parsed.plan:
        parsed.errors.append(f"{len(parsed.subtests)} subtests for a plan of {parsed.plan}")
    for sub in parsed.subtests.values():
        results = [parsed.results[name] for name in sub.tests]
        if sub.plan is None:
            parsed.errors.append(f"subtest {sub.name}: plan line (1..N) missing")
        elif len(results) < sub.plan:
            have = {r.number for r in results}
            missing = [n for n in range(1, sub.plan + 1) if n not in have]
            parsed.errors.append(f"subtest {sub.name}: {len(missing)} of {sub.plan} planned "
                                 f"results missing (first: {missing[0]})")
        elif len(results) > sub.plan:
            parsed.errors.append(f"subtest {sub.name}: {len(results)} results for a plan "
                                 f"of {sub.plan}")
        if sub.result is None:
            if sub is not last or parsed.end_status is not None:
                parsed.errors.append(f"subtest {sub.name} has no result line")
            continue
        # kunit's rule: a suite fails when a case fails, is skipped when all are
        failed = any(not r.ok for r in results)
        all_skipped = bool(results) and all(r.skipped for r in results)
        if sub.result.ok == failed or sub.result.skipped != all_skipped:
            parsed.errors.append(f"subtest {sub.name}: its result "
                                 f"'{'ok' if sub.result.ok else 'not ok'}"
                                 f"{' # SKIP' if sub.result.skipped else ''}' "
                                 "contradicts its tests")
    if parsed.end_status is None:
        parsed.errors.append("no end marker: the KTAP output was cut short")
    elif parsed.end_status != 0:
        parsed.errors.append(f"agent ended with status {parsed.end_status}")
