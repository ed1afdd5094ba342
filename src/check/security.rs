//! The security rules: every pod template of every rendered object, the
//! built-in ones and those a template override produces, against the
//! platform's settings and the exceptions it granted.

use crate::base::value::At;
use rayon::prelude::*;
use serde_json::Value;

use crate::base::diagnostics::Severity;
use crate::check::{Finding, Rule};
use crate::derive::security::Grant;
use crate::model::labels::EXCEPTIONS_ANNOTATION;
use crate::model::objects::Object;

pub const RUNS_AS_ROOT: Rule = Rule::new(
    "ISVC100",
    Severity::Error,
    "a container that may run as root owns everything in the image",
)
.symptom("a compromised or buggy server can rewrite its image, read mounted secrets and, with a kernel bug, reach the node")
.fix("set runAsNonRoot: true and a non-zero runAsUser, or allow it for the service with allowRootUser in the platform file")
.explain(
    "isvc runs the server as UID 10001 with runAsNonRoot: true. An overridden template that drops the pod or \
     container securityContext, or sets runAsUser: 0, makes the pod run as the image's user, which for the vLLM \
     image is root. Relax it only through defaults.security.allowRootUser or a securityExceptions entry; the \
     rendered pod then carries the isvc.ai.example.com/security-exceptions annotation that this rule honours.",
);
pub const PRIVILEGE_ESCALATION: Rule = Rule::new(
    "ISVC101",
    Severity::Error,
    "a privileged container, or one without allowPrivilegeEscalation: false, can gain privileges",
)
.symptom("setuid binaries in the image can raise a process to root inside the container")
.fix("set allowPrivilegeEscalation: false and privileged: false, or allow it with allowPrivilegeEscalation in the platform file")
.explain(
    "allowPrivilegeEscalation: false sets no_new_privs on the server process, so no setuid binary can raise its \
     privileges. privileged: true gives the container every device and capability of the node; isvc never needs \
     it, since the NVIDIA device plugin hands out GPUs without it.",
);
pub const CAPABILITIES_KEPT: Rule = Rule::new(
    "ISVC102",
    Severity::Error,
    "a container keeps Linux capabilities it does not need",
)
.symptom("NET_RAW and the other default capabilities let a compromised server spoof traffic and more")
.fix("drop ALL capabilities and add back only those the platform file lists in addCapabilities")
.explain(
    "Container runtimes grant a default set of capabilities (NET_RAW, CHOWN, SETUID, ...). vLLM needs none of them. \
     isvc renders capabilities: {drop: [ALL]} and adds back exactly defaults.security.addCapabilities.",
);
pub const NO_SECCOMP_PROFILE: Rule = Rule::new(
    "ISVC103",
    Severity::Error,
    "a container without a seccomp profile lets every system call reach the kernel",
)
.symptom("kernel vulnerabilities in rarely used system calls are reachable from the server")
.fix("set seccompProfile: RuntimeDefault, or allow unconfinedSeccomp in the platform file")
.explain(
    "RuntimeDefault is the container runtime's default filter, which blocks system calls containers do not need. \
     isvc sets it on the pod; an overridden template that drops it, or sets Unconfined, is caught here.",
);
pub const WRITABLE_ROOT_FILESYSTEM: Rule =
    Rule::new("ISVC104", Severity::Error, "a writable root filesystem lets a compromised server change its own code")
        .symptom(
            "an attacker who gets code execution can persist it in the container's filesystem. (The opposite \
     failure, a GPU pod that never starts with `createContainer hook ... exit status 1 ... read-only file \
     system` in its events, comes from the node's NVIDIA container toolkit; see the fix.)",
        )
        .fix(
            "use readOnlyRootFilesystem: true with volumes for what the server writes. Where the GPU nodes' NVIDIA \
     container toolkit cannot create a container with a read-only root (CDI hooks, see below), allow it for \
     every service with one line in the platform file, `defaults.security.writableRootFilesystem: true`, or \
     for some namespaces with a securityExceptions entry",
        )
        .explain(
            "isvc mounts emptyDir volumes for everything vLLM writes (home, the Hugging Face and vLLM caches, /tmp; \
     /dev/shm stays memory-backed) and points HOME, XDG_*, HF_HOME, VLLM_CACHE_ROOT and TMPDIR at them, so \
     the root filesystem can be read-only. On GPU nodes whose container toolkit injects the GPUs with CDI, \
     the toolkit's hooks write into the container's root filesystem at creation: KServe turned \
     readOnlyRootFilesystem off for its LLM containers because the nvidia-cdi-hook failed with exit code 1 on \
     a read-only root (kserve/kserve PR #5711), and NVIDIA/nvidia-container-toolkit issue #2026 (fixed by PR \
     #2028) is the same failure of the update-application-profile hook of toolkit v1.20.0. Newer toolkits \
     tolerate a read-only root; isvc keeps it read-only by default and the platform switch relaxes it.",
        );
pub const SERVICE_ACCOUNT_TOKEN: Rule = Rule::new(
    "ISVC105",
    Severity::Error,
    "a mounted service account token gives a compromised server the Kubernetes API",
)
.symptom("whatever the namespace's default service account may do, the server can do")
.fix("set automountServiceAccountToken: false, or allow mountServiceAccountToken in the platform file")
.explain("vLLM never talks to the Kubernetes API, so its pods get no token.");
pub const NO_MEMORY_LIMIT: Rule = Rule::new(
    "ISVC106",
    Severity::Error,
    "a container without a memory limit can take the node's memory from every other pod on it",
)
.symptom("a leak or a loading peak makes the kernel kill other pods on the node, not this one")
.fix("give every container a memory limit; isvc sets the server's to its request (memoryPerGpu x GPUs)")
.explain(
    "With a limit equal to the request, the pod's memory is reserved on the node and a peak above it kills this \
     pod (OOMKilled, visible in its status) instead of its neighbours. Memory-backed /dev/shm counts against it.",
);

pub const HOST_NAMESPACES: Rule = Rule::new(
    "ISVC107",
    Severity::Error,
    "a pod that shares the node's network, process or IPC namespace, or binds a host port, is not isolated from the node",
)
.symptom("the server sees the node's processes or network interfaces, and a compromise reaches the node and its other pods")
.fix("remove hostNetwork, hostPID, hostIPC and hostPort from the template override")
.explain(
    "isvc never renders them and the platform file cannot allow them: a model server needs none. An overridden \
     template that adds them to any pod template (init containers, sidecars, a LeaderWorkerSet's leader or \
     workers) is caught here.",
);
pub const HOST_PATH: Rule = Rule::new("ISVC108", Severity::Error, "a hostPath volume gives the pod the node's files")
    .symptom(
        "a hostPath of / or /var/run lets a compromised server read secrets of every pod on the node, or take the node",
    )
    .fix("use an emptyDir, a PersistentVolumeClaim or a CSI volume instead of hostPath")
    .explain(
        "isvc never renders hostPath volumes and the platform file cannot allow them. Model weights belong on a \
     PersistentVolumeClaim or an image volume; caches on emptyDir.",
    );

/// Runs the security rules over every pod template of `objects`.
pub fn check(objects: &[Object]) -> Vec<Finding> {
    objects
        .par_iter()
        .flat_map_iter(|o| {
            let mut findings = Vec::new();
            for template in super::pod_templates(o) {
                check_pod(o, template, &mut findings);
            }
            findings
        })
        .collect()
}

fn check_pod(o: &Object, template: &Value, out: &mut Vec<Finding>) {
    let granted: Vec<Grant> = template
        .at("/metadata/annotations")
        .and_then(|a| a.get(EXCEPTIONS_ANNOTATION))
        .and_then(Value::as_str)
        .map(|s| s.split(',').filter_map(|t| Grant::parse(t.trim())).collect())
        .unwrap_or_default();
    let allowed = |g: &Grant| granted.contains(g);
    let mut push = |rule: Rule, message: String| out.push(Finding::new(rule, o, message));
    let null = Value::Null;
    let spec = template.field("spec").unwrap_or(&null);
    let pod_context = spec.field("securityContext").unwrap_or(&null);
    for key in ["hostNetwork", "hostPID", "hostIPC"] {
        if spec.field(key) == Some(&Value::Bool(true)) {
            push(HOST_NAMESPACES, format!("the pod sets {key}: true"));
        }
    }
    for v in spec.field("volumes").and_then(Value::as_array).into_iter().flatten() {
        if let Some(path) = v.at("/hostPath/path") {
            let name = v.field("name").and_then(Value::as_str).unwrap_or_default();
            push(HOST_PATH, format!("volume \"{name}\" mounts the node's {}", crate::base::yaml::describe(path)));
        }
    }
    if !allowed(&Grant::ServiceAccountToken) && spec.field("automountServiceAccountToken") != Some(&Value::Bool(false))
    {
        push(SERVICE_ACCOUNT_TOKEN, "the pod does not set automountServiceAccountToken: false".to_string());
    }
    let containers =
        ["initContainers", "containers"].into_iter().filter_map(|k| spec.field(k).and_then(Value::as_array)).flatten();
    for c in containers {
        let name = format!("container \"{}\"", c.field("name").and_then(Value::as_str).unwrap_or_default());
        let context = c.field("securityContext").unwrap_or(&null);
        // A container's own setting wins over the pod's.
        let effective = |key: &str| context.field(key).or_else(|| pod_context.field(key));
        let is = |key: &str, want: bool| context.field(key) == Some(&Value::Bool(want));

        let uid = effective("runAsUser").and_then(Value::as_i64);
        let non_root = effective("runAsNonRoot") == Some(&Value::Bool(true));
        if !allowed(&Grant::RootUser) && (uid == Some(0) || (uid.is_none() && !non_root)) {
            let why = if uid == Some(0) { "runs as UID 0" } else { "sets neither runAsNonRoot: true nor a runAsUser" };
            push(RUNS_AS_ROOT, format!("{name} may run as root: it {why}"));
        }
        if is("privileged", true) {
            push(PRIVILEGE_ESCALATION, format!("{name} is privileged"));
        }
        if !allowed(&Grant::PrivilegeEscalation) && !is("allowPrivilegeEscalation", false) {
            push(PRIVILEGE_ESCALATION, format!("{name} does not set allowPrivilegeEscalation: false"));
        }
        let caps = |key: &str| -> Vec<&str> {
            context
                .at(&format!("/capabilities/{key}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect()
        };
        if !caps("drop").contains(&"ALL") {
            push(CAPABILITIES_KEPT, format!("{name} does not drop ALL capabilities"));
        }
        for cap in caps("add") {
            let bare = cap.strip_prefix("CAP_").unwrap_or(cap);
            if !allowed(&Grant::Capability(bare.to_string())) {
                push(CAPABILITIES_KEPT, format!("{name} adds capability {cap}, which the platform does not allow"));
            }
        }
        let seccomp = effective("seccompProfile").and_then(|p| p.field("type")).and_then(Value::as_str);
        if !allowed(&Grant::UnconfinedSeccomp) && !matches!(seccomp, Some("RuntimeDefault" | "Localhost")) {
            let what = seccomp.map_or("no seccomp profile".to_string(), |t| format!("seccomp profile {t}"));
            push(NO_SECCOMP_PROFILE, format!("{name} runs with {what}"));
        }
        if !allowed(&Grant::WritableRootFilesystem) && !is("readOnlyRootFilesystem", true) {
            push(
                WRITABLE_ROOT_FILESYSTEM,
                format!(
                    "{name} does not set readOnlyRootFilesystem: true (if the GPU nodes' container toolkit cannot \
                     start containers with a read-only root, allow it with `defaults.security.writableRootFilesystem: \
                     true` in the platform file)"
                ),
            );
        }
        if c.at("/resources/limits/memory").is_none() {
            push(NO_MEMORY_LIMIT, format!("{name} has no memory limit"));
        }
        for port in c.field("ports").and_then(Value::as_array).into_iter().flatten() {
            if let Some(p) = port.field("hostPort").filter(|p| p.as_i64() != Some(0)) {
                push(HOST_NAMESPACES, format!("{name} binds host port {p}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use crate::derive::security::*;
    use crate::model::platform::{Platform, Security, SecurityException};
    use serde_json::json;

    fn relaxed(f: impl FnOnce(&mut Security)) -> Security {
        let mut s = Security::default();
        f(&mut s);
        s
    }

    fn everything_relaxed() -> Security {
        relaxed(|s| {
            s.allow_root_user = true;
            s.allow_privilege_escalation = true;
            s.writable_root_filesystem = true;
            s.mount_service_account_token = true;
            s.unconfined_seccomp = true;
            s.add_capabilities = vec!["SYS_PTRACE".into()];
        })
    }

    #[test]
    fn the_default_is_non_root_read_only_and_drops_everything() {
        let d = derive(&Security::default());
        let pod = serde_json::to_value(&d.pod).unwrap();
        assert_eq!(
            pod,
            json!({"fsGroup": 10001, "fsGroupChangePolicy": "OnRootMismatch", "runAsGroup": 10001,
                   "runAsNonRoot": true, "runAsUser": 10001, "seccompProfile": {"type": "RuntimeDefault"}})
        );
        let container = serde_json::to_value(&d.container).unwrap();
        assert_eq!(
            container,
            json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "privileged": false,
                   "readOnlyRootFilesystem": true})
        );
        assert!(!d.automount_service_account_token);
        assert!(d.pod_annotations.is_empty());
        let env: BTreeMap<&str, &str> =
            d.env.iter().map(|e| (e.name.as_str(), e.value.as_deref().unwrap_or_default())).collect();
        for (name, value) in &env {
            if value.starts_with('/') {
                assert!(
                    [HOME_DIR, TMP_DIR].iter().any(|dir| value.starts_with(dir)),
                    "{name}={value} is not on a volume"
                );
            }
        }
        assert_eq!(env["HF_HOME"], "/home/vllm/.cache/huggingface");
        assert_eq!(env["USER"], "vllm");
    }

    #[test]
    fn allowing_root_leaves_the_ids_to_the_image_unless_given() {
        let d = derive(&relaxed(|s| s.allow_root_user = true));
        assert_eq!(d.pod.run_as_non_root, Some(false));
        assert_eq!((d.pod.run_as_user, d.pod.run_as_group), (None, None));
        let d = derive(&relaxed(|s| {
            s.allow_root_user = true;
            s.run_as_user = Some(0);
        }));
        assert_eq!(d.pod.run_as_user, Some(0));
        assert_eq!(d.pod_annotations[EXCEPTIONS_ANNOTATION], "allowRootUser");
    }

    #[test]
    fn exceptions_relax_only_the_services_they_cover() {
        let mut platform = Platform::default();
        platform.defaults.security.add_capabilities = vec!["IPC_LOCK".into()];
        platform.security_exceptions = vec![
            SecurityException {
                namespace: "team-a".into(),
                services: vec!["legacy".into()],
                reason: "writes under /opt".into(),
                security: relaxed(|s| {
                    s.writable_root_filesystem = true;
                    s.add_capabilities = vec!["SYS_PTRACE".into(), "IPC_LOCK".into()];
                    s.run_as_user = Some(2000);
                }),
            },
            SecurityException {
                namespace: "team-b".into(),
                services: vec![],
                reason: "calls the API".into(),
                security: relaxed(|s| s.mount_service_account_token = true),
            },
        ];
        let legacy = settings_for(&platform, "team-a", "legacy");
        assert!(legacy.writable_root_filesystem && !legacy.mount_service_account_token);
        assert_eq!(legacy.add_capabilities, ["IPC_LOCK", "SYS_PTRACE"]);
        assert_eq!(legacy.run_as_user, Some(2000));
        assert_eq!(
            grants(&legacy).iter().map(Grant::token).collect::<Vec<_>>(),
            ["writableRootFilesystem", "addCapabilities:IPC_LOCK", "addCapabilities:SYS_PTRACE"]
        );
        let other = settings_for(&platform, "team-a", "other");
        assert_eq!(other, platform.defaults.security);
        // Same name in another namespace: not covered.
        assert!(!settings_for(&platform, "team-b", "legacy").writable_root_filesystem);
        assert!(settings_for(&platform, "team-b", "anything").mount_service_account_token);
    }

    #[test]
    fn grant_tokens_round_trip() {
        let all = grants(&everything_relaxed());
        assert_eq!(all.len(), 6);
        for g in all {
            assert_eq!(Grant::parse(&g.token()), Some(g));
        }
        assert_eq!(Grant::parse("allowEverything"), None);
    }

    fn deployment(pod: Value) -> Object {
        let value = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m", "namespace": "n"},
                           "spec": {"template": pod}});
        crate::model::objects::test_object(value)
    }

    fn rule_ids(pod: Value) -> Vec<&'static str> {
        let mut ids: Vec<&str> = check(&[deployment(pod)]).iter().map(|f| f.rule.id).collect();
        ids.dedup();
        ids
    }

    fn rendered_pod(settings: &Security) -> Value {
        let d = derive(settings);
        json!({
            "metadata": {"annotations": d.pod_annotations},
            "spec": {
                "automountServiceAccountToken": d.automount_service_account_token,
                "securityContext": d.pod,
                "containers": [{"name": "vllm", "securityContext": d.container,
                                "resources": {"limits": {"memory": "32Gi"}}}]
            }
        })
    }

    #[test]
    fn derived_settings_pass_the_rules_relaxed_or_not() {
        assert_eq!(rule_ids(rendered_pod(&Security::default())), Vec::<&str>::new());
        assert_eq!(rule_ids(rendered_pod(&everything_relaxed())), Vec::<&str>::new());
    }

    #[test]
    fn a_pod_without_security_settings_breaks_every_rule() {
        let pod = json!({"spec": {"containers": [{"name": "vllm"}]}});
        assert_eq!(rule_ids(pod), ["ISVC105", "ISVC100", "ISVC101", "ISVC102", "ISVC103", "ISVC104", "ISVC106"]);
    }

    #[test]
    fn relaxations_the_platform_did_not_grant_are_caught() {
        let granted = relaxed(|s| s.add_capabilities = vec!["IPC_LOCK".into()]);
        let mut pod = rendered_pod(&granted);
        pod["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] = json!(["IPC_LOCK", "CAP_NET_RAW"]);
        pod["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"] = json!(false);
        pod["spec"]["initContainers"] = json!([{"name": "fetch", "securityContext": {"runAsUser": 0}}]);
        let findings = check(&[deployment(pod)]);
        let messages: Vec<String> = findings.iter().map(|f| format!("{} {}", f.rule.id, f.message)).collect();
        assert!(
            messages.contains(
                &"ISVC102 container \"vllm\" adds capability CAP_NET_RAW, which the platform does not allow"
                    .to_string()
            ),
            "{messages:#?}"
        );
        assert!(messages.iter().any(|m| m.starts_with("ISVC104 container \"vllm\" does not set readOnlyRootFilesystem: true (if the GPU nodes' container toolkit cannot start containers with a read-only root, allow it with `defaults.security.writableRootFilesystem: true` in the platform file)")), "{messages:?}");
        assert!(messages.contains(&"ISVC100 container \"fetch\" may run as root: it runs as UID 0".to_string()));
        assert!(!messages.iter().any(|m| m.contains("IPC_LOCK")));
    }

    #[test]
    fn host_namespaces_and_host_paths_are_caught() {
        let mut pod = rendered_pod(&everything_relaxed());
        pod["spec"]["hostNetwork"] = json!(true);
        pod["spec"]["hostPID"] = json!(true);
        pod["spec"]["volumes"] = json!([{"name": "root", "hostPath": {"path": "/"}}]);
        pod["spec"]["initContainers"] = json!([{"name": "init", "ports": [{"containerPort": 80, "hostPort": 80}],
            "securityContext": pod["spec"]["containers"][0]["securityContext"].clone(),
            "resources": {"limits": {"memory": "1Gi"}}}]);
        let findings = check(&[deployment(pod)]);
        let messages: Vec<String> = findings.iter().map(|f| format!("{} {}", f.rule.id, f.message)).collect();
        assert_eq!(
            messages,
            [
                "ISVC107 the pod sets hostNetwork: true",
                "ISVC107 the pod sets hostPID: true",
                "ISVC108 volume \"root\" mounts the node's \"/\"",
                "ISVC107 container \"init\" binds host port 80",
            ]
        );
    }

    #[test]
    fn a_container_setting_overrides_the_pod_setting() {
        let mut pod = rendered_pod(&Security::default());
        pod["spec"]["containers"][0]["securityContext"]["runAsUser"] = json!(0);
        pod["spec"]["containers"][0]["securityContext"]["seccompProfile"] = json!({"type": "Unconfined"});
        assert_eq!(rule_ids(pod), ["ISVC100", "ISVC103"]);
    }
}
