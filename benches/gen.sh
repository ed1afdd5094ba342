# Sourced by bench.sh and gitops.sh: the generator of N InferenceServices,
# and the platform file of Argo CD they render with.
# Needs NAMESPACES (how many namespaces the services spread over) and ISVC
# (the binary, for `isvc crd`).

# gen DIR COUNT: COUNT InferenceService files under DIR/services/<namespace>/,
# the same services as Helm values in DIR/values.yaml, and DIR/crd.yaml.
gen() {
    local dir=$1 n=$2 i
    mkdir -p "$dir/services"
    for ((i = 0; i < NAMESPACES && i < n; i++)); do
        mkdir -p "$dir/services/$(printf 'team-%02d' "$i")"
    done
    awk -v n="$n" -v nns="$NAMESPACES" -v dir="$dir/services" '
    BEGIN {
        nm = split("Qwen/Qwen3-0.6B|meta-llama/Llama-3.1-8B-Instruct|mistralai/Mistral-7B-Instruct-v0.3|google/gemma-3-27b-it|deepseek-ai/DeepSeek-R1-Distill-Qwen-32B|Qwen/Qwen2.5-72B-Instruct|microsoft/Phi-4-mini-instruct|/models/acme/support-bot-v7", M, "|")
        split("qwen3-0-6b|llama-3-1-8b|mistral-7b|gemma-3-27b|r1-distill-32b|qwen2-5-72b|phi-4-mini|support-bot", P, "|")
        nr = split("0 1 1 2 2 3 4 6 8 12", R, " ")
        split("1 2 4 8", G, " ")
        split("gold silver bronze", T, " ")
        for (i = 0; i < n; i++) {
            ns = sprintf("team-%02d", i % nns)
            m = int(i / nns) % nm + 1
            r = R[(i * 7 + int(i / nns)) % nr + 1]
            g = G[(i * 3 + int(i / 80)) % 4 + 1]
            tier = (i % 3 == 0) ? T[int(i / 3) % 3 + 1] : "-"
            owner = (i % 5 == 0) ? ns "@example.com" : "-"
            name = sprintf("%s-%05d", P[m], i)
            f = dir "/" ns "/" name ".yaml"
            print "apiVersion: ai.example.com/v1alpha1" > f
            print "kind: InferenceService" > f
            print "metadata:" > f
            print "  name: " name > f
            print "  namespace: " ns > f
            print "  labels:" > f
            print "    team: " ns > f
            if (tier != "-") print "    tier: " tier > f
            if (owner != "-") { print "  annotations:" > f; print "    example.com/owner: \"" owner "\"" > f }
            print "spec:" > f
            print "  model: " M[m] > f
            print "  replicas: " r > f
            if (g != 1 || i % 2) print "  gpusPerReplica: " g > f
            close(f)
            printf "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", ns, name, M[m], r, g, tier, owner
        }
    }' | LC_ALL=C sort -t $'\t' -k1,1 -k2,2 | awk -F '\t' '
    BEGIN { print "services:" }
    {
        printf "  - name: %s\n    namespace: %s\n    source: services/%s/%s.yaml\n", $2, $1, $1, $2
        printf "    model: \"%s\"\n    replicas: %d\n    gpusPerReplica: %d\n", $3, $4, $5
        printf "    labels:\n      team: %s\n", $1
        if ($6 != "-") printf "      tier: %s\n", $6
        if ($7 != "-") printf "    annotations:\n      example.com/owner: \"%s\"\n", $7
    }' >"$dir/values.yaml"
    "$ISVC" crd >"$dir/crd.yaml"
}

# argocd_platform FILE PATH: writes to FILE a platform file for Argo CD with
# one Application per namespace directory (the layout docs/gitops.md
# advises past 4,000 objects), its tree at PATH in the repository.
argocd_platform() {
    cat >"$1" <<YAML
apiVersion: ai.example.com/v1alpha1
kind: Platform
gitops:
  engine: argocd
  name: inference
  repoURL: https://git.example.com/platform/inference.git
  revision: main
  path: $2
  layout: namespaces
  argocd: {server: https://kubernetes.default.svc}
YAML
}

# clustered_platform FILE PATH: argocd_platform's, with two clusters, each
# with a tree of its own under PATH: prod-us, and prod-eu with half the
# replicas pulled from a registry mirror.
clustered_platform() {
    argocd_platform "$1" "$2"
    cat >>"$1" <<YAML
clusters:
  - name: prod-us
    server: https://prod-us.k8s.example.com
  - name: prod-eu
    server: https://prod-eu.k8s.example.com
    replicaFactor: 0.5
    imageRegistry: registry.eu.example.com
YAML
}

# gen_gateway DIR COUNT: COUNT v1alpha2 InferenceServices in one namespace,
# `chat`, each with a gateway route of its own and autoscaling on its
# picker's queue, and DIR/platform.yaml with the Inference Extension, KEDA
# and monitoring: each service renders its pool, route, endpoint picker
# (eight objects), ScaledObject and ServiceMonitors, the objects the rules
# look up across a namespace.
gen_gateway() {
    local dir=$1 n=$2
    mkdir -p "$dir/services"
    awk -v n="$n" -v dir="$dir/services" 'BEGIN {
        for (i = 0; i < n; i++) {
            f = sprintf("%s/svc-%05d.yaml", dir, i)
            print "apiVersion: ai.example.com/v1alpha2" > f
            print "kind: InferenceService" > f
            printf "metadata: {name: svc-%05d, namespace: chat}\n", i > f
            print "spec:" > f
            print "  baseModel: Qwen/Qwen3-0.6B" > f
            print "  autoscaling: {min: 1, max: 4, targetQueueLength: 8}" > f
            printf "  gateway: {route: svc-%05d.llm.example.com}\n", i > f
            close(f)
        }
    }'
    cat >"$dir/platform.yaml" <<YAML
apiVersion: ai.example.com/v1alpha1
kind: Platform
gateway:
  parentRef: {name: inference-gateway, namespace: gateway-system}
  inferenceExtension: true
  endpointPicker: {flowControl: true}
keda:
  serverAddress: http://prometheus-operated.monitoring.svc:9090
monitoring:
  namespace: monitoring
  labels: {release: prometheus}
YAML
}
