# SPDX-License-Identifier: MIT
"""expected.py: THE list of conformance tests expected to fail today -- the only one.

A test listed here may fail without failing the suite (it prints XFAIL with the reason);
a rule counts as covered only when every one of its tests passes, so a listed test that
fails keeps its rule out of "rules covered: N/35". A listed test that passes prints XPASS:
then remove it from this list (the runner fails on XPASS when CONFORMANCE_STRICT=1).

Reasons start with "pending:" (a feature not in diskgate yet), "bug:" (diskgate departs
from the spec or the field case) or "conflict:" (the spec rule and a project decision
disagree). Delete a "bug:" entry to turn its failure into a red suite.
"""

EXPECTED_FAIL = {
}
