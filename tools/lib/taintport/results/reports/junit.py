# SPDX-License-Identifier: GPL-2.0
"""junit.xml: one testsuite per cell, one testcase per check, for any CI system.

A check that came out wrong is a <failure> (the kernel is wrong); a cell whose
run broke turns its checks into <error>, and a check the agent never reported
is an <error> too (the run is wrong). A check that shows a known bug of the
kernel as shipped is <skipped type="known-bug"> with the missing fix named: not
passed in Jenkins or GitLab, yet no failure, which would mark the build
unstable for a finding the run exits 0 on (pytest writes its xfail the same
way; docs/report-schema.md). Each cell also gets a "verdict" testcase, so a
cell that never booted still shows; it alone carries the
cell's errors, which its checks point to: one copy per cell, so the file stays
within a few times the size of matrix.json. The document is valid against the
Jenkins xunit plugin's junit-10.xsd, the schema most JUnit consumers follow
(docs/report-schema.md).
"""
import re
import xml.etree.ElementTree as ET

from taintport.judge.verdict import Check, Status
from taintport.results.cells import Cell, Matrix, word
from taintport.results.report import printable
from taintport.results.reports import kcidb, knownbug

# XML 1.0 has no escape for most control characters; console text can hold them
NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
TALLIES = ("tests", "failures", "errors", "skipped")
# what a message attribute shows of an error: its first line, cut here
MESSAGE_MAX = 200
ERRORS_IN_VERDICT = "the cell's errors: in this suite's testcase \"verdict\""
# the type of a <skipped> case that shows a known bug of the kernel as shipped
KNOWN_BUG = "known-bug"


def xml_text(text: str) -> str:
    return NOT_XML.sub("\ufffd", printable(text))


def seconds(value: float | None) -> str:
    return f"{value or 0:.2f}"


def first_line(errors: list[str]) -> str:
    """The first line of a cell's errors, as a message attribute shows it."""
    line = errors[0].splitlines()[0] if errors and errors[0] else ""
    return line if len(line) <= MESSAGE_MAX else line[:MESSAGE_MAX] + " ..."


def outcome(case: ET.Element, status: kcidb.Status, message: str, text: str,
            known: bool = False) -> None:
    """The case's outcome element; known: it shows a known bug (skipped, typed so)."""
    message, text = xml_text(message), xml_text(text)
    if known:
        ET.SubElement(case, "skipped", message=message, type=KNOWN_BUG).text = text
    elif status is kcidb.Status.FAIL:
        ET.SubElement(case, "failure", message=message, type="FAIL").text = text
    elif status in (kcidb.Status.ERROR, kcidb.Status.MISS):
        ET.SubElement(case, "error", message=message, type=status.value).text = text
    elif status is kcidb.Status.SKIP:
        ET.SubElement(case, "skipped", message=message)


def check_case(suite: ET.Element, cell: Cell, check: Check, classname: str) -> kcidb.Status:
    case = ET.SubElement(suite, "testcase", classname=classname, name=check.name)
    shown = knownbug.fixes_shown(cell, check)
    status = kcidb.Status.SKIP if shown else kcidb.check_status(cell, check)
    wanted = f"expected {word(check.expected)}, observed {word(check.observed)}"
    if shown:
        message, text = knownbug.message(shown), "\n".join([wanted, *check.diagnostics])
    elif status is kcidb.Status.ERROR:
        message = f"the run broke ({wanted}): " + first_line(cell.errors)
        text = "\n".join([ERRORS_IN_VERDICT, *check.diagnostics])
    elif status is kcidb.Status.MISS:
        message, text = f"not reported by the agent ({wanted})", ERRORS_IN_VERDICT
    elif status is kcidb.Status.SKIP:
        message, text = "the agent could not observe it", "\n".join(check.diagnostics)
    else:
        message, text = wanted, "\n".join(check.diagnostics)
    outcome(case, status, message, text, known=bool(shown))
    return status


def verdict_case(suite: ET.Element, cell: Cell, classname: str) -> kcidb.Status:
    case = ET.SubElement(suite, "testcase", classname=classname, name="verdict",
                         time=seconds(cell.timings.boot))
    known = cell.status is Status.KNOWN_BUG
    status = kcidb.Status.SKIP if known else kcidb.cell_status(cell)
    wrong = [c.name for c in cell.failing]
    message = (knownbug.message(cell.missing_fixes()) if known
               else first_line(cell.errors) if cell.errors
               else f"{len(wrong)} check(s) differ from the expectations" if wrong
               else cell.status.value)
    outcome(case, status, message, "\n".join(cell.errors + cell.panic + wrong), known=known)
    return status


def suite_of(root: ET.Element, cell: Cell, started: str | None) -> dict[str, int]:
    classname = f"{cell.version}.{cell.variant}"
    suite = ET.SubElement(root, "testsuite", name=classname,
                          time=seconds(cell.timings.total()))
    if started:
        suite.set("timestamp", started.rstrip("Z"))
    props = ET.SubElement(suite, "properties")
    values = {"status": cell.status.value, "accelerator": cell.accelerator,
              **{f"fix.{fix}": state.value for fix, state in cell.fixes.items()},
              "reused_from": cell.reused_from,
              "kernel_release": cell.kernel_release,
              "package_version": cell.inputs.package_version if cell.inputs else None,
              **{f"timing.{stage}": seconds(s) for stage, s in cell.timings.items()}}
    for name, value in values.items():
        if value is not None:
            ET.SubElement(props, "property", name=name, value=xml_text(str(value)))
    statuses = [verdict_case(suite, cell, classname)]
    statuses += [check_case(suite, cell, check, classname) for check in cell.checks]
    tally = {"tests": len(statuses),
             "failures": statuses.count(kcidb.Status.FAIL),
             "errors": statuses.count(kcidb.Status.ERROR) + statuses.count(kcidb.Status.MISS),
             "skipped": statuses.count(kcidb.Status.SKIP)}
    for key, count in tally.items():
        suite.set(key, str(count))
    return tally


def render(doc: Matrix) -> str:
    root = ET.Element("testsuites", name="taintport")
    totals = dict.fromkeys(TALLIES, 0)
    for cell in doc.cells:
        tally = suite_of(root, cell, doc.run_of(cell).started)
        totals = {k: totals[k] + tally[k] for k in totals}
    # junit-10.xsd (Jenkins xunit) allows no "skipped" on <testsuites>: the
    # skips are counted on each <testsuite>, where GitLab and GitHub read them
    for key, count in totals.items():
        if key != "skipped":
            root.set(key, str(count))
    root.set("time", seconds(sum(c.timings.total() for c in doc.cells)))
    for element in root.iter():
        # every name and value, not only the guest's text: a hand-edited
        # matrix.json can put a control character anywhere
        for key, text in element.attrib.items():
            element.set(key, xml_text(text))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
