#!/usr/bin/env bash
# How long the kustomize builds of a large fleet take, as Argo CD and Flux
# run them: N generated services (default 10000, bench.sh's generator)
# rendered with `gitops.layout: namespaces`, then `kubectl kustomize` of each
# directory an Application builds, and of one directory holding the first
# 1, 2, 4, ... namespaces up to MAX_NS (default 4) to show the growth of one
# build. WHOLE=1 also builds the whole tree, which `layout: tree` makes Argo
# CD do (it takes very long at 10,000 services: see docs/gitops.md).
#
#   benches/gitops.sh [N]
#
# Prints one line per build: objects, wall-clock seconds, CPU seconds (user
# + system; on a busy machine the better measure) and peak memory. Needs
# kubectl and GNU time at /usr/bin/time. Environment: TMPDIR, KEEP=1, MAX_NS,
# NAMESPACES (how many the services spread over, default 20),
# WHOLE, TIMEOUT (seconds per build, default 1800).
set -euo pipefail

N=${1:-10000}
if ! [[ $N =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: benches/gitops.sh [N]   (N services, default 10000)" >&2
    exit 2
fi
MAX_NS=${MAX_NS:-4}
TIMEOUT=${TIMEOUT:-1800}
NAMESPACES=${NAMESPACES:-20}
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")

log() { printf 'gitops: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v kubectl >/dev/null || die "no kubectl on PATH"
/usr/bin/time -f %M -o /dev/null true 2>/dev/null || die "no GNU time at /usr/bin/time"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/isvc-gitops.XXXXXX")
if [[ ${KEEP:-} == 1 ]]; then trap 'log "kept $WORK"' EXIT; else trap 'rm -rf "$WORK"' EXIT; fi

log "building isvc (release)"
(cd "$ROOT" && cargo build --release --quiet) || die "cargo build --release failed"
ISVC=${CARGO_TARGET_DIR:-$ROOT/target}/release/isvc

# shellcheck source=benches/gen.sh
source "$BENCH_DIR/gen.sh"
log "generating $N services"
gen "$WORK" "$N"
argocd_platform "$WORK/platform.yaml" rendered
(cd "$WORK" && "$ISVC" render services --platform platform.yaml --out rendered) || die "render failed"

# build LABEL DIR: one kubectl kustomize of DIR, timed.
build() {
    local label=$1 dir=$2 stats objects
    if ! timeout "$TIMEOUT" /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" \
        kubectl kustomize --load-restrictor LoadRestrictionsNone "$dir" >"$WORK/built.yaml" 2>"$WORK/err"; then
        printf '%-24s failed or timed out after %ss (load %s)\n' "$label" "$TIMEOUT" "$(cut -d' ' -f1 /proc/loadavg)"
        return
    fi
    objects=$(grep -c '^kind:' "$WORK/built.yaml" || true)
    read -r -a stats <"$WORK/time"
    printf '%-24s %6d objects  %8.1f s wall  %8.1f s CPU  %5d MiB  (load %s)\n' "$label" "$objects" \
        "${stats[0]}" "$(awk -v u="${stats[1]}" -v s="${stats[2]}" 'BEGIN { print u + s }')" \
        $((stats[3] / 1024)) "$(cut -d' ' -f1 /proc/loadavg)"
}

echo "Per-Application builds (gitops.layout: namespaces), N=$N services:"
for app in "$WORK"/rendered/_gitops/application-*.yaml; do
    path=$(sed -n 's/^    path: //p' "$app")
    build "$(basename "$path")" "$WORK/$path"
done

echo "One build over the first K namespaces:"
for ((k = 1; k <= MAX_NS && k <= NAMESPACES; k *= 2)); do
    dir=$WORK/first-$k
    mkdir -p "$dir"
    { echo "resources:"; for ((i = 0; i < k; i++)); do printf -- '- ../rendered/team-%02d\n' "$i"; done; } \
        >"$dir/kustomization.yaml"
    build "$k namespace(s)" "$dir"
done

if [[ ${WHOLE:-} == 1 ]]; then
    echo "The whole tree (gitops.layout: tree):"
    build "rendered" "$WORK/rendered"
fi
