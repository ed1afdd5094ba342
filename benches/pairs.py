#!/usr/bin/env python3
"""Two isvc binaries timed in interleaved pairs over one scenario.

    benches/pairs.py A B [--scenario S] [--pairs N] [--services N]
                         [--namespaces N] [--argocd] [--sleep S]

A and B are isvc binaries (a build of this change and one of the build
before). The script generates N services with benches/gen.sh in a temporary
directory (under TMPDIR, for example /dev/shm), renders them into a tree with
B, waits until the tree's files have settled for isvc's cache of file status
(docs/output.md), then times the scenario with A and with B in turn, N pairs,
starting with A and B alternately. Each build keeps its cache of file status
in a directory of its own there (`ISVC_CACHE_DIR`), filled by a
`render --check` before the first pair: two builds that share one would
each find the other's cache foreign where its form changed, and read every
file. It prints each build's median wall-clock
and CPU (user + system, of the child) time and the median of the pairs'
ratios A/B with their quartiles: a ratio below 1 is A faster.

Scenarios (each pair's runs do the same work):

- one-change: a label of one service set to a new value, then `diff` (as a
  user would look before rendering), a pause (--sleep), and the timed
  `render --out` of the tree;
- diff: the same edit, a pause, and the timed `diff`;
- check: the timed `render --check` of the up-to-date tree;
- cold: the timed `render --out` into a directory removed before each run.

On a shared or virtual machine whole runs of the same binary swing by 10 to
20% (benches/README.md); pairs cancel what the two runs of a pair share, and
a ratio's quartiles say how far to trust its median. Run it on an idle
machine; it measures, it does not judge (no PASS or MISS).
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = ("one-change", "diff", "check", "cold")


def run(cmd, cwd, timed=False):
    """Runs `cmd` in `cwd` (output discarded) with its binary's own cache of
    file status (see `cache_env`); with `timed`, its wall-clock and CPU
    milliseconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=CACHES.get(cmd[0]), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # `diff` exits 1 when the tree differs: that is its answer, not a failure.
    if done.returncode not in (0, 1):
        sys.exit(f"pairs: {' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[:500]}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return (wall, cpu) if timed else None


# Each binary's environment, by its path: a cache of file status of its own
# (`cache_env`).
CACHES = {}


def cache_env(work, binary, name):
    """Gives `binary` a cache of file status of its own under `work`: two
    builds that keep it in other forms (or learn other things) would each
    find the other's cache foreign after every run, and read every file."""
    CACHES[binary] = dict(os.environ, ISVC_CACHE_DIR=os.path.join(work, f"cache-{name}"))


def generate(work, services, namespaces, binary):
    """The services, by benches/gen.sh, under `work`/services."""
    script = f'source "{BENCH_DIR}/gen.sh" && gen "{work}" {services}'
    env = dict(os.environ, NAMESPACES=str(namespaces), ISVC=binary)
    subprocess.run(["bash", "-c", script], env=env, check=True, stdout=subprocess.DEVNULL)


def argocd_platform(work):
    """A platform file for Argo CD, one Application per namespace (gen.sh's)."""
    path = os.path.join(work, "argocd.yaml")
    script = f'source "{BENCH_DIR}/gen.sh" && argocd_platform "{path}" out'
    subprocess.run(["bash", "-c", script], check=True)
    return ["--platform", path]


def first_service(work):
    """The file of the first service, in order of namespace and name."""
    services = os.path.join(work, "services")
    namespace = sorted(os.listdir(services))[0]
    name = sorted(os.listdir(os.path.join(services, namespace)))[0]
    return os.path.join(services, namespace, name)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a", help="the isvc binary measured")
    p.add_argument("b", help="the isvc binary it is measured against")
    p.add_argument("--scenario", choices=SCENARIOS, default="one-change")
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--services", type=int, default=10000)
    p.add_argument("--namespaces", type=int, default=20)
    p.add_argument("--argocd", action="store_true", help="render with Argo CD, one Application per namespace")
    p.add_argument("--sleep", type=float, default=0.3, help="seconds between the edit's diff and the timed run")
    args = p.parse_args()
    a, b = (os.path.abspath(x) for x in (args.a, args.b))
    for binary in (a, b):
        if not os.access(binary, os.X_OK):
            sys.exit(f"pairs: {binary} is not an executable")
    if args.pairs < 1 or args.services < 1 or args.namespaces < 1:
        sys.exit("pairs: --pairs, --services and --namespaces must be at least 1")

    work = tempfile.mkdtemp(prefix="isvc-pairs-")
    cache_env(work, a, "a")
    if b != a:
        cache_env(work, b, "b")
    try:
        print(f"pairs: generating {args.services} services in {args.namespaces} namespaces under {work}", file=sys.stderr)
        generate(work, args.services, args.namespaces, b)
        extra = argocd_platform(work) if args.argocd else []
        render = ["render", "services", "--out", "out"] + extra
        run([b, *render], work)
        edited = first_service(work)
        original = open(edited, encoding="utf-8").read()
        if "team: " not in original:
            sys.exit(f"pairs: {edited} has no `team:` label to change")
        # Settled for the cache of file status: a run long after the render,
        # then each binary's cache filled by a check of the tree.
        time.sleep(2.1)
        for binary in (a, b):
            run([binary, "render", "--check", "services", "--out", "out", *extra], work)

        def once(binary, tag):
            if args.scenario in ("one-change", "diff"):
                with open(edited, "w", encoding="utf-8") as f:
                    f.write(original.replace("team: ", f"team: pair{tag}-", 1))
                if args.scenario == "one-change":
                    run([binary, "diff", "services", "--out", "out", *extra], work)
                time.sleep(args.sleep)
            if args.scenario == "one-change":
                return run([binary, *render], work, timed=True)
            if args.scenario == "diff":
                return run([binary, "diff", "services", "--out", "out", *extra], work, timed=True)
            if args.scenario == "check":
                return run([binary, "render", "--check", "services", "--out", "out", *extra], work, timed=True)
            shutil.rmtree(os.path.join(work, "cold"), ignore_errors=True)
            subprocess.run(["sync"])
            return run([binary, "render", "services", "--out", "cold", *extra], work, timed=True)

        times = {a: [], b: []}
        for i in range(args.pairs):
            order = (a, b) if i % 2 == 0 else (b, a)
            for binary in order:
                times[binary].append(once(binary, f"{i}{'a' if binary == a else 'b'}"))
        with open(edited, "w", encoding="utf-8") as f:
            f.write(original)
    finally:
        if not os.environ.get("KEEP"):
            shutil.rmtree(work, ignore_errors=True)

    print(f"{args.scenario}, {args.services} services in {args.namespaces} namespaces"
          f"{', Argo CD' if args.argocd else ''}, {args.pairs} pairs (A: {args.a}, B: {args.b})")
    for k, what in ((0, "wall"), (1, "CPU")):
        ta = [t[k] for t in times[a]]
        tb = [t[k] for t in times[b]]
        ratios = sorted(x / y for x, y in zip(ta, tb))
        q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
        print(f"  {what:4}: A {statistics.median(ta):8.1f} ms  B {statistics.median(tb):8.1f} ms  "
              f"A/B {statistics.median(ratios):.3f} (quartiles {q1:.3f} to {q3:.3f})")


if __name__ == "__main__":
    main()
