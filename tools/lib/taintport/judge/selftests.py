# SPDX-License-Identifier: GPL-2.0
"""Verdict of the selftests stage: the kernel's own tests beside the agent's.

The guest's runner (test-matrix/dracut/51taintport-selftests) prints two KTAP
subtests, read by the same parser as the agent's (judge/ktap.py):

- `selftests.livepatch`, one test per tools/testing/selftests/livepatch
  script. Whether the kernel as the distribution ships it passes them is
  not ours to decide, so each is judged against the same kernel's cell of
  the tree as shipped built by us (the reference, `upstream`): a selftest
  failing there too is the kernel's own failure (expected `not ok`, listed
  with its output, like a known bug), one failing only here makes the cell
  `unexpected`. In the reference cell itself a failure is the kernel's.
  A script the runner stopped at its timeout, or that skipped itself
  (kselftest's exit 4), is a skip declared with the reason.
- `sample.trace_events`, the kernel's trace-event sample loaded signed,
  unsigned and forced, as the agent loads utt: its events must be present
  exactly where utt's must be (WITNESSES), so it is a second witness for the
  unsigned fix in every cell.
"""
from collections.abc import Mapping, Sequence

from taintport.judge.ktap import Parsed, Result
from taintport.kernel import selftests as kernel_selftests
from taintport.judge.verdict import Check, Judgement, Status

LIVEPATCH = f"selftests.{kernel_selftests.SCRIPTS}"
SAMPLE = "sample.trace_events"
# each of the sample's tests and the agent's test whose expectation it shares
WITNESSES = {
    f"{SAMPLE}.signed_events_present": "signed.events_present",
    f"{SAMPLE}.unsigned_events_present": "unsigned.events_present",
    f"{SAMPLE}.forced_events_refused": "forced.events_refused",
}
KERNELS_OWN = "the kernel's own failure: it fails on the tree as shipped (upstream) too"


def livepatch_check(result: Result, reference: dict[str, Check] | None) -> Check:
    """One selftest; reference: the reference cell's checks, None in the
    reference cell itself."""
    output = tuple(result.diagnostics)
    if result.skipped:
        return Check(name=result.name, expected=True, observed=None,
                     diagnostics=(f"skipped: {result.reason or 'no reason given'}",
                                  *output), directive="SKIP", declared_skip=True)
    if reference is None:
        if result.ok:
            return Check(name=result.name, expected=True, observed=True, diagnostics=output)
        return Check(name=result.name, expected=False, observed=False,
                     diagnostics=("the kernel's own failure: the tree as shipped fails it",
                                  *output))
    theirs = reference.get(result.name)
    if theirs is not None and theirs.observed is False:
        return Check(name=result.name, expected=False, observed=result.ok,
                     diagnostics=(KERNELS_OWN, *output))
    if theirs is None or theirs.observed is None:
        why = "not run on the tree as shipped (upstream) in this run: nothing to compare " \
              "with, so it must pass"
        output = (why, *output)
    return Check(name=result.name, expected=True, observed=result.ok, diagnostics=output)


def declared(skips: frozenset[str], sample_unbuilt: str | None) -> dict[str, str]:
    """The sample's tests the guest cannot observe in a cell, with why: those
    whose agent test the variant declares unobservable (variants.toml skips:
    the signed load where the kernel's key is not here), all of them when the
    host could not build the sample (sample_unbuilt: why)."""
    found = {name: f"{witness} is unobservable on this variant by design "
                   "(variants.toml skips), and so is its witness"
             for name, witness in WITNESSES.items() if witness in skips}
    if sample_unbuilt is not None:
        found = {name: f"the sample: {sample_unbuilt}" for name in WITNESSES}
    return found


def judge(parsed: Parsed, expected: dict[str, bool],
          reference: Sequence[Check] | None,
          declared: Mapping[str, str]) -> Judgement:
    """The selftests' checks of a cell. expected: the cell's expectation of
    each agent test (verdict.Expectations.expected); reference: the checks of
    the same kernel's reference cell of this run, or None when this cell is
    that reference; declared: the sample's tests the guest cannot observe
    here, with why (declared()). A broken run is an error, a mismatch
    unexpected (one of the declared observed, too)."""
    errors = [f"selftests: {e}" for e in parsed.errors]
    theirs = None if reference is None else {c.name: c for c in reference}
    checks = []
    for name, result in parsed.results.items():
        if name.startswith(f"{LIVEPATCH}."):
            checks.append(livepatch_check(result, theirs))
        elif name not in WITNESSES:
            errors.append(f"selftests: a test nobody expects: {name}")
    if not parsed.broken and not any(c.name.startswith(f"{LIVEPATCH}.") for c in checks):
        errors.append(f"selftests: {LIVEPATCH} ran no selftest")
    for name, witness in WITNESSES.items():
        if witness not in expected:
            errors.append(f"selftests: {name} witnesses {witness}, which the "
                          "expectations do not have")
            continue
        seen = parsed.results.get(name)
        observed = None if seen is None or seen.skipped else seen.ok
        if name in declared:
            checks.append(Check(
                name=name, expected=expected[witness], observed=observed,
                diagnostics=(f"skipped: {declared[name]}",
                             *(seen.diagnostics if seen else ())),
                directive="SKIP" if observed is None else "",
                declared_skip=True))
            continue
        checks.append(Check(
            name=name, expected=expected[witness], observed=observed,
            diagnostics=(f"the sample's events as utt's ({witness})",
                         *(seen.diagnostics if seen else ())),
            directive=seen.directive if seen else ""))
        if not parsed.broken and observed is None:
            errors.append(f"selftests: {name} not observed"
                          + (f" ({seen.reason})" if seen and seen.reason else ""))
    if errors:
        return Judgement(Status.ERROR, checks, errors)
    if any(not c.matches for c in checks):
        return Judgement(Status.UNEXPECTED, checks, [])
    return Judgement(Status.AS_EXPECTED, checks, [])


def merged(cell: Judgement, selftests: Judgement) -> Judgement:
    """The cell's judgement with the selftests' checks after its own: an error
    in either is an error, else an unexpected selftest makes a sound cell unexpected."""
    checks = [*cell.checks, *selftests.checks]
    errors = [*cell.errors, *selftests.errors]
    if errors or Status.ERROR in (cell.status, selftests.status):
        return Judgement(Status.ERROR, checks, errors)
    if selftests.status is Status.UNEXPECTED:
        return Judgement(Status.UNEXPECTED, checks, [])
    return Judgement(cell.status, checks, [])


def not_run(reason: str) -> Check:
    """The selftests stage declared skipped for a whole cell, with the reason."""
    return Check(name=f"{LIVEPATCH}.all", expected=True, observed=None,
                 diagnostics=(reason,), directive="SKIP", declared_skip=True)


def not_built(module: str, reason: str) -> Check:
    """A selftests' module the host could not build for the cell's kernel: a
    declared skip naming it and why (the selftests that load it skip themselves)."""
    return Check(name=f"{LIVEPATCH}.{module}", expected=True, observed=None,
                 diagnostics=(reason,), directive="SKIP", declared_skip=True)

