"""The consumers' own checks, as the tests run them on what taintport writes.

KCIDB: Debian's python3-jsonschema (Draft 7, the validator kcidb-io itself
uses) with its format checker, against schemas/kcidb-v04_03.json. JUnit:
xmllint (libxml2-utils) against schemas/junit-10.xsd. Each schema file says
where its rules come from; docs/report-schema.md says what they demand.
"""
import datetime
import json
import re
import subprocess
from pathlib import Path

import jsonschema

SCHEMAS = Path(__file__).parent / "schemas"
KCIDB_SCHEMA = SCHEMAS / "kcidb-v04_03.json"
JUNIT_XSD = SCHEMAS / "junit-10.xsd"
# RFC 3339 section 5.6 (date-time); jsonschema checks it only with
# rfc3339-validator, which Debian 12 does not package, so the rule is here
RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def format_checker():
    """Draft 7's format checker as Debian's jsonschema gives it, plus date-time.

    Its `uri` check exists only with python3-rfc3987 installed (without it
    jsonschema silently accepts any string as a URI); refuse to validate
    without it rather than pass everything."""
    checker = jsonschema.Draft7Validator.FORMAT_CHECKER
    if "uri" not in checker.checkers:
        raise AssertionError("jsonschema has no 'uri' format check: install python3-rfc3987 "
                             "(tools/install-deps)")
    checker = jsonschema.FormatChecker(list(checker.checkers))

    @checker.checks("date-time", raises=ValueError)
    def is_date_time(value):
        if not isinstance(value, str):
            return True
        if not RFC3339.fullmatch(value):
            return False
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        return True

    return checker


def kcidb_problems(view):
    """Every way a KCIDB document breaks the schema, one line each ("" path: the top)."""
    schema = json.loads(KCIDB_SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema, format_checker=format_checker())
    return [f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
            for error in validator.iter_errors(view)]


def junit_problems(path):
    """xmllint's complaints about a junit.xml against junit-10.xsd (none: valid)."""
    proc = subprocess.run(["xmllint", "--noout", "--schema", str(JUNIT_XSD), str(path)],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode == 0:
        return []
    return [line for line in proc.stderr.splitlines() if line.strip()] or \
        [f"xmllint exited {proc.returncode}"]
