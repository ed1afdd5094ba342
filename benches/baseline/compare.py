#!/usr/bin/env python3
"""Compares two multi-document YAML streams object by object.

Usage: compare.py [--any-order] EXPECTED ACTUAL

Objects are keyed by apiVersion, kind, namespace and name and compared as
parsed data (comments, quoting, key order and indentation do not matter).
Without --any-order the objects must also come in the same order.
Prints one line, "match (N objects)" or "MISMATCH: ...", and exits 0 or 1.
"""

import sys

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(path):
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.load_all(f.read(), Loader=LOADER) if d is not None]
    keyed = []
    for d in docs:
        meta = d.get("metadata") or {}
        keyed.append(((d.get("apiVersion"), d.get("kind"), meta.get("namespace"), meta.get("name")), d))
    return keyed


def first_difference(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'expected' if k in a else 'actual'}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b and type(a) is type(b) else f"{path}: {a!r} vs {b!r}"


def main(argv):
    any_order = "--any-order" in argv
    expected_path, actual_path = [a for a in argv if a != "--any-order"]
    expected, actual = load(expected_path), load(actual_path)
    e, a = dict(expected), dict(actual)
    problems = []
    if len(e) != len(expected) or len(a) != len(actual):
        problems.append("duplicate objects")
    missing = [k for k in e if k not in a]
    extra = [k for k in a if k not in e]
    if missing:
        problems.append(f"{len(missing)} missing, e.g. {missing[0]}")
    if extra:
        problems.append(f"{len(extra)} extra, e.g. {extra[0]}")
    differing = [(k, first_difference(e[k], a[k])) for k in e if k in a]
    differing = [(k, d) for k, d in differing if d]
    if differing:
        k, d = differing[0]
        problems.append(f"{len(differing)} differ, e.g. {k} at {d}")
    if not any_order and not problems and [k for k, _ in expected] != [k for k, _ in actual]:
        problems.append("same objects in a different order")
    if problems:
        print("MISMATCH: " + "; ".join(problems))
        return 1
    print(f"match ({len(expected)} objects)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
