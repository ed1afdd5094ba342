"""Reads one checkov JSON report and fails on findings that are not allow-listed.

usage: checkov_gate.py ALLOW_LIST DIR REPORT

A finding is a failed check, or a check suppressed inside the scanned files
(a template must not be able to silence the scanner). Exit 1 if any finding's
check ID is not in ALLOW_LIST, if the list has an entry without a reason, or
if nothing was scanned.
"""
import collections
import json
import sys


def allow_list(path):
    allowed, problems = {}, []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            check_id, _, reason = line.partition(" ")
            if not reason.strip():
                problems.append(f"{path}:{number}: {check_id} has no reason")
            allowed[check_id] = reason.strip()
    return allowed, problems


def main():
    allow_path, directory, report_path = sys.argv[1:4]
    allowed, problems = allow_list(allow_path)
    with open(report_path, encoding="utf-8") as f:
        text = f.read().strip()
    reports = json.loads(text) if text else []
    if isinstance(reports, dict):
        reports = [reports]
    reports = [r for r in reports if r.get("check_type") == "kubernetes"]
    passed = sum(r["summary"]["passed"] for r in reports)
    findings = []
    for r in reports:
        results = r.get("results", {})
        for kind in ("failed_checks", "skipped_checks"):
            findings.extend((kind, c) for c in results.get(kind, []))
    ok = [c for _, c in findings if c["check_id"] in allowed]
    bad = [(kind, c) for kind, c in findings if c["check_id"] not in allowed]
    counts = collections.Counter(c["check_id"] for c in ok)
    listed = ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())) or "none"
    print(f"{directory}: checkov passed {passed} checks; allow-listed findings: {listed}")
    for kind, c in bad:
        what = "suppressed" if kind == "skipped_checks" else "FAILED"
        print(f"  {what} {c['check_id']} ({c['check_name']}) on {c['resource']} in {c['file_path']}")
    for p in problems:
        print(f"  {p}")
    if not reports or passed + len(findings) == 0:
        print(f"  nothing was scanned in {directory}")
        return 1
    if bad:
        print(f"  {len(bad)} finding(s) not in {allow_path}: fix the output or argue the exception there and in docs/security.md")
    return 1 if bad or problems else 0


if __name__ == "__main__":
    sys.exit(main())
