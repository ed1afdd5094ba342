//! Secure by default: what every rendered pod runs with, that each platform
//! switch relaxes exactly what it names and only for the services it covers,
//! that an overridden template which drops the settings is caught, and that
//! the scanner's allow-list is argued in the README.

use std::collections::BTreeSet;
use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

use crate::harness::Test;

const SERVICES: &str = "\
apiVersion: ai.example.com/v1alpha1
kind: InferenceService
metadata: {name: legacy, namespace: team-a}
spec: {model: org/legacy-model, replicas: 1}
---
apiVersion: ai.example.com/v1alpha1
kind: InferenceService
metadata: {name: other, namespace: team-a}
spec: {model: org/other-model, replicas: 1}
---
apiVersion: ai.example.com/v1alpha1
kind: InferenceService
metadata: {name: legacy, namespace: team-b}
spec: {model: org/legacy-model, replicas: 1}
";

const PLATFORM_HEADER: &str = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\n";

/// The Deployments rendered for [`SERVICES`], by `namespace/name`, or the
/// error messages.
fn deployments(platform: &str, overrides: &[(&str, &str)]) -> Result<Vec<(String, Value)>, Vec<String>> {
    let mut test = Test::new().service(SERVICES).platform(format!("{PLATFORM_HEADER}{platform}"));
    for (name, text) in overrides {
        test = test.template(name, *text);
    }
    let compiled = test.compile().map_err(|d| d.iter().map(|d| d.message.clone()).collect::<Vec<_>>())?;
    Ok(compiled
        .objects
        .into_iter()
        .filter(|o| o.id.kind == "Deployment")
        .map(|o| (format!("{}/{}", o.id.namespace.unwrap_or_default(), o.id.name), o.value))
        .collect())
}

fn deployment(platform: &str, key: &str) -> Value {
    let all = deployments(platform, &[]).unwrap_or_else(|e| panic!("{e:#?}"));
    all.into_iter().find(|(k, _)| k == key).map(|(_, v)| v).expect("rendered")
}

/// Paths (`a.b[0].c`) at which `a` and `b` differ.
fn differences(a: &Value, b: &Value, path: &str, out: &mut BTreeSet<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()).collect::<BTreeSet<_>>() {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                differences(x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null), &p, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                differences(v, w, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => {
            out.insert(path.to_string());
        }
        _ => {}
    }
}

const POD: &str = "spec.template.spec";
const CONTAINER: &str = "spec.template.spec.containers[0].securityContext";
/// Absent from the default pod, so the whole map is the difference.
const MARKER: &str = "spec.template.metadata.annotations";

#[test]
fn the_default_pod_is_non_root_read_only_and_without_token_or_capabilities() {
    let d = deployment("", "team-a/legacy");
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["automountServiceAccountToken"], false);
    let sc = &pod["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true);
    assert_eq!(
        (sc["runAsUser"].as_i64(), sc["runAsGroup"].as_i64(), sc["fsGroup"].as_i64()),
        (Some(10001), Some(10001), Some(10001))
    );
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault");
    let c = &pod["containers"][0];
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["securityContext"]["privileged"], false);
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert_eq!(c["resources"]["limits"]["memory"], c["resources"]["requests"]["memory"]);
    assert!(d["spec"]["template"]["metadata"].get("annotations").is_none());

    // Everything the server writes is on a volume: home, caches, /tmp, /dev/shm.
    let mounts: BTreeSet<&str> =
        c["volumeMounts"].as_array().unwrap().iter().filter_map(|m| m["mountPath"].as_str()).collect();
    assert_eq!(mounts, BTreeSet::from(["/dev/shm", "/home/vllm", "/home/vllm/.cache", "/tmp"]));
    for env in c["env"].as_array().unwrap() {
        let value = env["value"].as_str().unwrap();
        if value.starts_with('/') {
            assert!(mounts.iter().any(|m| value.starts_with(m)), "{} = {value} is not on a volume", env["name"]);
        }
    }
    let volumes = pod["volumes"].as_array().unwrap();
    assert!(volumes.iter().all(|v| v.get("emptyDir").is_some()), "{volumes:?}");
}

#[test]
fn each_switch_relaxes_exactly_what_it_names_for_the_services_it_covers() {
    let pod = |fields: &[&str]| fields.iter().map(|f| format!("{POD}.{f}")).collect::<Vec<_>>();
    let container = |field: &str| vec![format!("{CONTAINER}.{field}")];
    let cases = [
        (
            "allowRootUser: true",
            pod(&["securityContext.runAsNonRoot", "securityContext.runAsUser", "securityContext.runAsGroup"]),
        ),
        ("allowPrivilegeEscalation: true", container("allowPrivilegeEscalation")),
        ("writableRootFilesystem: true", container("readOnlyRootFilesystem")),
        ("mountServiceAccountToken: true", pod(&["automountServiceAccountToken"])),
        ("unconfinedSeccomp: true", pod(&["securityContext.seccompProfile.type"])),
        ("addCapabilities: [IPC_LOCK]", container("capabilities.add")),
        // Ids are not relaxations: no marker.
        ("runAsUser: 20000", pod(&["securityContext.runAsUser"])),
        ("runAsGroup: 0, fsGroup: 0", pod(&["securityContext.runAsGroup", "securityContext.fsGroup"])),
    ];
    let baseline = deployments("", &[]).unwrap();
    for (setting, expected) in cases {
        let platform = format!(
            "securityExceptions:\n  - namespace: team-a\n    services: [legacy]\n    reason: the image needs it\n    security: {{{setting}}}\n"
        );
        let rendered = deployments(&platform, &[]).unwrap_or_else(|e| panic!("{setting}: {e:#?}"));
        for ((key, before), (_, after)) in baseline.iter().zip(&rendered) {
            let mut diff = BTreeSet::new();
            differences(before, after, "", &mut diff);
            let mut want: BTreeSet<String> = BTreeSet::new();
            if key == "team-a/legacy" {
                want.extend(expected.iter().cloned());
                if !setting.contains("runAs") {
                    want.insert(MARKER.to_string());
                }
            }
            assert_eq!(diff, want, "{setting}: {key}");
        }
    }
}

#[test]
fn the_marker_names_what_was_relaxed() {
    let platform = "defaults:\n  security: {addCapabilities: [SYS_PTRACE]}\nsecurityExceptions:\n  - namespace: team-a\n    reason: writes under /opt\n    security: {writableRootFilesystem: true, addCapabilities: [IPC_LOCK]}\n";
    let d = deployment(platform, "team-a/other");
    assert_eq!(
        d["spec"]["template"]["metadata"]["annotations"]["isvc.ai.example.com/security-exceptions"],
        "writableRootFilesystem,addCapabilities:IPC_LOCK,addCapabilities:SYS_PTRACE"
    );
    let capabilities = &d["spec"]["template"]["spec"]["containers"][0]["securityContext"]["capabilities"];
    assert_eq!(capabilities["add"], serde_json::json!(["IPC_LOCK", "SYS_PTRACE"]));
    // The platform-wide relaxation reaches every namespace; the exception only team-a.
    let b = deployment(platform, "team-b/legacy");
    assert_eq!(
        b["spec"]["template"]["metadata"]["annotations"]["isvc.ai.example.com/security-exceptions"],
        "addCapabilities:SYS_PTRACE"
    );
    assert_eq!(b["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"], true);
}

/// The built-in template with the security settings taken out again.
fn builtin_without(cut: &[&str]) -> String {
    let text = isvc::BUILTIN_TEMPLATES.iter().find(|(n, _)| *n == "deployment.yaml").unwrap().1;
    let mut out = String::new();
    let mut skipping: Option<usize> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        if let Some(level) = skipping {
            if indent > level {
                continue;
            }
            skipping = None;
        }
        if cut.iter().any(|c| line.trim_start().starts_with(c)) {
            skipping = Some(indent);
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn rule_ids(messages: &[String]) -> BTreeSet<String> {
    messages.iter().filter_map(|m| m.split_once("[ISVC").map(|(_, rest)| format!("ISVC{}", &rest[..3]))).collect()
}

#[test]
fn an_override_that_drops_the_security_settings_is_caught() {
    let dropped = builtin_without(&["securityContext:", "automountServiceAccountToken:"]);
    let errors = deployments("", &[("deployment.yaml", &dropped)]).unwrap_err();
    assert_eq!(
        rule_ids(&errors),
        ["ISVC100", "ISVC101", "ISVC102", "ISVC103", "ISVC104", "ISVC105"].map(String::from).into()
    );
    // Every service is reported, each naming its container.
    assert!(
        errors.iter().any(|e| e.starts_with("Deployment team-b/legacy [ISVC100]: container \"vllm\" may run as root")),
        "{errors:#?}"
    );

    // Dropping only the container's settings keeps the pod's (non-root, seccomp).
    let container_only = builtin_without(&["securityContext: {{ security.container }}"]);
    let errors = deployments("", &[("deployment.yaml", &container_only)]).unwrap_err();
    assert_eq!(rule_ids(&errors), ["ISVC101", "ISVC102", "ISVC104"].map(String::from).into());

    // A template that drops the marker loses the relaxations it stands for.
    let platform =
        "securityExceptions:\n  - {namespace: team-a, reason: r, security: {writableRootFilesystem: true}}\n";
    let no_marker = builtin_without(&["annotations: {{ pod_annotations"]);
    let errors = deployments(platform, &[("deployment.yaml", &no_marker)]).unwrap_err();
    assert_eq!(rule_ids(&errors), ["ISVC104"].map(String::from).into());
    assert_eq!(errors.len(), 2, "both team-a services: {errors:#?}");

    // Hard-coding a relaxation the platform did not grant is caught too.
    let relaxed = isvc::BUILTIN_TEMPLATES[0].1.replace(
        "securityContext: {{ security.container }}",
        "securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL], add: [NET_ADMIN]}, readOnlyRootFilesystem: true}",
    );
    let errors = deployments("", &[("deployment.yaml", &relaxed)]).unwrap_err();
    assert_eq!(rule_ids(&errors), ["ISVC102"].map(String::from).into());
    assert!(errors[0].contains("adds capability NET_ADMIN, which the platform does not allow"), "{errors:#?}");

    // A memory limit is required of every container.
    let no_limit = isvc::BUILTIN_TEMPLATES[0]
        .1
        .replace("limits: {{ container.limits }}", "limits: {nvidia.com/gpu: {{ container.gpus }}}");
    let errors = deployments("", &[("deployment.yaml", &no_limit)]).unwrap_err();
    assert_eq!(rule_ids(&errors), ["ISVC106"].map(String::from).into());
}

#[test]
fn the_shipped_override_example_keeps_the_security_settings() {
    let text = std::fs::read_to_string("examples/gpu-pool/templates/deployment.yaml").unwrap();
    for needle in [
        "securityContext: {{ security.pod }}",
        "securityContext: {{ security.container }}",
        "automountServiceAccountToken: {{ security.automount_service_account_token }}",
        "annotations: {{ security.pod_annotations or none }}",
        "env: {{ container.env }}",
    ] {
        assert!(text.contains(needle), "examples/gpu-pool/templates/deployment.yaml lacks {needle}");
    }
}

#[test]
fn a_service_cannot_grant_itself_an_exception() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("services")).unwrap();
    std::fs::write(
        dir.path().join("services/s.yaml"),
        "apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata:\n  name: s\n  annotations: {isvc.ai.example.com/security-exceptions: allowRootUser}\nspec: {model: m, replicas: 1}\n",
    )
    .unwrap();
    let out = Command::cargo_bin("isvc")
        .unwrap()
        .current_dir(dir.path())
        .args(["--color", "never", "render", "services", "--stdout"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is set by isvc and cannot be given"), "{stderr}");
}

#[test]
fn platform_mistakes_are_reported_with_positions() {
    let cases = [
        ("defaults:\n  security: {runAsUser: 0}\n", "\"runAsUser: 0\" is root, which this block does not allow"),
        (
            "defaults:\n  security: {addCapabilities: [CAP_NET_ADMIN]}\n",
            "capability \"CAP_NET_ADMIN\" is written without the CAP_ prefix",
        ),
        ("defaults:\n  security: {addCapabilities: [ALL]}\n", "cannot add ALL"),
        ("securityExceptions:\n  - {namespace: team-a, security: {writableRootFilesystem: true}}\n", "reason"),
        ("securityExceptions:\n  - {reason: r, security: {writableRootFilesystem: true}}\n", "namespace"),
        ("securityExceptions:\n  - {namespace: Team_A, reason: r, security: {}}\n", "invalid namespace"),
        ("defaults:\n  security: {allowRoot: true}\n", "allowRoot"),
    ];
    for (platform, needle) in cases {
        let errors = deployments(platform, &[]).unwrap_err();
        assert!(errors.iter().any(|e| e.contains(needle)), "{platform}: {errors:#?}");
    }
    // Root through an exception needs the exception (or the defaults) to allow it.
    let ok = "securityExceptions:\n  - {namespace: team-a, reason: r, security: {allowRootUser: true, runAsUser: 0}}\n";
    let d = deployment(ok, "team-a/legacy");
    assert_eq!(d["spec"]["template"]["spec"]["securityContext"]["runAsUser"], 0);
    let bad = "securityExceptions:\n  - {namespace: team-a, reason: r, security: {runAsUser: 0}}\n";
    assert!(deployments(bad, &[]).is_err());
}

/// The IDs of `.ci/checkov-allow.txt`.
fn allow_listed() -> BTreeSet<String> {
    std::fs::read_to_string(".ci/checkov-allow.txt")
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

#[test]
fn every_allow_listed_scanner_check_is_argued_in_the_readme() {
    let readme = std::fs::read_to_string("docs/security.md").unwrap();
    let section = readme.split("\n## Scanner results").nth(1).expect("docs/security.md has a Scanner results section");
    let section = section.split("\n## ").next().unwrap();
    let documented: BTreeSet<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(id, _)| id.to_string()))
        .filter(|id| id.starts_with("CKV"))
        .collect();
    assert_eq!(documented, allow_listed(), "docs/security.md's allow-list table and .ci/checkov-allow.txt differ");
    let rules = std::fs::read_to_string("docs/check.md").unwrap();
    for rule in isvc::check::RULES.iter().filter(|r| r.id >= "ISVC100") {
        assert!(rules.contains(&format!("| {} |", rule.id)), "docs/check.md does not list rule {}", rule.id);
    }
}

/// Runs the scanner (`.ci/scan`, checkov with the allow-list) over services
/// that are not in the examples. `.ci/run` installs the scanner and runs it.
#[test]
#[ignore = "needs checkov (.ci/scan --install); .ci/run runs the ignored tests"]
fn the_scanner_passes_rendered_services_beyond_the_examples() {
    let dir = tempfile::tempdir().unwrap();
    let services = dir.path().join("services");
    std::fs::create_dir(&services).unwrap();
    let shapes = [
        ("default", "tiny", 0, 1),
        ("default", "solo", 1, 1),
        ("research", "wide", 2, 8),
        ("research", "many", 40, 2),
        ("prod-eu", "chat", 5, 4),
    ];
    for (ns, name, replicas, gpus) in shapes {
        std::fs::write(
            services.join(format!("{ns}-{name}.yaml")),
            format!(
                "apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata:\n  name: {name}\n  namespace: {ns}\n  labels: {{team: {ns}}}\n  annotations: {{owner: someone}}\nspec: {{model: org/{name}, replicas: {replicas}, gpusPerReplica: {gpus}}}\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(
        dir.path().join("platform.yaml"),
        // With the shared model cache (download Jobs, a claim) and a MIG profile.
        format!(
            "{PLATFORM_HEADER}defaults:\n  security: {{runAsUser: 20000, runAsGroup: 0}}\n\
             modelCache: {{size: 100Gi}}\naccelerators: [{{name: mig, resource: nvidia.com/mig-3g.40gb}}]\n"
        ),
    )
    .unwrap();
    for (out, platform) in [("rendered", None), ("rendered-platform", Some("platform.yaml"))] {
        let mut cmd = Command::cargo_bin("isvc").unwrap();
        cmd.current_dir(dir.path()).args(["render", "services", "--out", out]);
        if let Some(p) = platform {
            cmd.args(["--platform", p]);
        }
        cmd.assert().success();
        let scan = std::process::Command::new(Path::new(".ci/scan").canonicalize().unwrap())
            .arg(dir.path().join(out))
            .output()
            .unwrap();
        assert!(
            scan.status.success(),
            "{out}: the scanner found checks outside the allow-list\n{}{}",
            String::from_utf8_lossy(&scan.stdout),
            String::from_utf8_lossy(&scan.stderr)
        );
    }
}

#[test]
fn a_writable_root_points_at_the_one_line_platform_switch() {
    // GPU nodes whose container toolkit cannot create a container with a
    // read-only root (CDI hooks) need the platform switch, which the message names.
    let dropped = builtin_without(&["securityContext: {{ security.container }}"]);
    let errors = deployments("", &[("deployment.yaml", &dropped)]).unwrap_err();
    assert!(
        errors.iter().any(|e| e.contains(
            "[ISVC104]: container \"vllm\" does not set readOnlyRootFilesystem: true (if the GPU nodes' container toolkit \
             cannot start containers with a read-only root, allow it with `defaults.security.writableRootFilesystem: \
             true` in the platform file)"
        )),
        "{errors:#?}"
    );
    // The switch: readOnlyRootFilesystem false on every service, no finding.
    let c = deployment("defaults:\n  security: {writableRootFilesystem: true}\n", "team-b/legacy");
    assert_eq!(c["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"], false);
}
