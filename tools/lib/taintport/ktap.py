"""KTAP in (from a serial console log), results out.

Follows kunit_parser's rules: parse only from the `KTAP version` line on,
and a plan entry without a result line is a crash, not a pass. Anything that
keeps the results from being trusted (no KTAP, no plan, missing entries, no
end marker, a kernel panic) is recorded in `errors`; the verdict turns any
error into status "error", never into a pass or a fail.
"""
import re
from dataclasses import dataclass, field

VERSION = re.compile(r"KTAP version (\d+)")
PLAN = re.compile(r"^1\.\.(\d+)$")
RESULT = re.compile(r"^(not ok|ok) (\d+) (\S+)(?:\s+#\s*(\S+)\s*(.*))?$")
END = re.compile(r"^# taintport-agent: end status=(\d+)$")
PANIC = re.compile(r"Kernel panic - not syncing|\bBUG: |\bOops: |general protection fault"
                   r"|Kernel Offset: ")
REFUSAL = "taintport-agent: refusing to run"


@dataclass
class Result:
    number: int
    name: str
    ok: bool
    directive: str  # "" or "SKIP" / "TODO"
    diagnostics: list = field(default_factory=list)


@dataclass
class Parsed:
    results: dict = field(default_factory=dict)  # name -> Result
    plan: int | None = None
    end_status: int | None = None
    errors: list = field(default_factory=list)
    lines: list = field(default_factory=list)   # the KTAP text as printed
    panic: list = field(default_factory=list)   # panic lines with some context

    @property
    def broken(self):
        return bool(self.errors)


def clean(line):
    return line.replace("\r", "").rstrip("\n")


def parse(text):
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

    pending = []
    expected_number = 1
    for line in raw[start:]:
        body = line.strip()
        if VERSION.search(body):
            parsed.lines.append(body)
            continue
        m = PLAN.match(body)
        if m and parsed.plan is None:
            parsed.plan = int(m.group(1))
            parsed.lines.append(body)
            continue
        m = RESULT.match(body)
        if m:
            parsed.lines.append(body)
            number = int(m.group(2))
            if number != expected_number:
                parsed.errors.append(f"result {number} ({m.group(3)}) out of order: "
                                     f"expected {expected_number}")
            expected_number = number + 1
            result = Result(number=number, name=m.group(3), ok=m.group(1) == "ok",
                            directive=(m.group(4) or "").upper(), diagnostics=pending)
            if result.name in parsed.results:
                parsed.errors.append(f"result name {result.name} reported twice")
            parsed.results[result.name] = result
            pending = []
            continue
        m = END.match(body)
        if m:
            parsed.lines.append(body)
            parsed.end_status = int(m.group(1))
            break
        if body.startswith("# "):
            parsed.lines.append(body)
            pending.append(body[2:])
            if body.startswith("# error: "):
                parsed.errors.append("agent: " + body[len("# error: "):])

    if parsed.plan is None:
        parsed.errors.append("KTAP plan line (1..N) missing")
    elif len(parsed.results) < parsed.plan:
        have = {r.number for r in parsed.results.values()}
        missing = [n for n in range(1, parsed.plan + 1) if n not in have]
        parsed.errors.append(f"{len(missing)} of {parsed.plan} planned results missing "
                             f"(first: {missing[0]})")
    elif len(parsed.results) > parsed.plan:
        parsed.errors.append(f"{len(parsed.results)} results for a plan of {parsed.plan}")
    if parsed.end_status is None:
        parsed.errors.append("no end marker: the KTAP output was cut short")
    elif parsed.end_status != 0:
        parsed.errors.append(f"agent ended with status {parsed.end_status}")
    return parsed
