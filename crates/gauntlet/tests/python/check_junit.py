"""Parses a JUnit file with junitparser (a real JUnit consumer) and prints its counts as JSON.
Exit 3 when junitparser is missing (the Rust test skips)."""
import json
import sys

try:
    from junitparser import JUnitXml, Failure, Error
except ImportError:
    print("junitparser is not installed (pip install junitparser)", file=sys.stderr)
    sys.exit(3)

xml = JUnitXml.fromfile(sys.argv[1])
suites, cases, failures, errors, messages = 0, 0, 0, 0, []
for suite in xml:
    suites += 1
    for case in suite:
        cases += 1
        for r in case.result:
            if isinstance(r, Failure):
                failures += 1
                messages.append(r.message)
            elif isinstance(r, Error):
                errors += 1
json.dump({"suites": suites, "cases": cases, "failures": failures, "errors": errors,
           "messages": messages, "tests_attr": xml.tests}, sys.stdout)
