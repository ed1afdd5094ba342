//! Pod security: the settings every rendered pod runs with, the platform
//! switches that relax them, and the rules that catch a template which drops
//! them.
//!
//! The default passes the Pod Security Standards' `restricted` profile and
//! the pod checks of common scanners:
//!
//! - the server runs as UID and GID 10001 (`runAsNonRoot: true`), a UID
//!   above the range host accounts use;
//! - no privilege escalation, every Linux capability dropped, the container
//!   runtime's default seccomp profile;
//! - a read-only root filesystem: vLLM's home (`/home/vllm`), its caches
//!   (`/home/vllm/.cache`: Hugging Face downloads, torch.compile, Triton and
//!   FlashInfer kernels) and `/tmp` are `emptyDir` volumes, and the
//!   environment points every tool at them (`HOME`, `XDG_*`, `HF_HOME`,
//!   `VLLM_CACHE_ROOT`, `VLLM_CONFIG_ROOT`, `TMPDIR`, and `USER` because
//!   `getpass.getuser()` fails for a UID the image's `/etc/passwd` lacks);
//! - no service account token: the server never calls the Kubernetes API.
//!
//! Each relaxation is a platform switch named after what it allows
//! (`defaults.security`, or `securityExceptions` for some services). A pod
//! that gets one carries the annotation [`EXCEPTIONS_ANNOTATION`] listing
//! them, so a reviewer sees it in the rendered diff, and so [`check`] knows
//! which deviations the platform allowed: anything else, such as an
//! overridden template that drops a `securityContext`, is an error.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Capabilities, EnvVar, PodSecurityContext, SeccompProfile, SecurityContext};
use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;

use crate::base::diagnostics::{Diagnostic, Location, Severity, Source};
use crate::base::yaml::{Node, NodeValue};
use crate::check::{Finding, Rule};
use crate::model::objects::Object;
use crate::model::platform::{Platform, Security, SecurityException};

/// Pod annotation listing the relaxations the platform granted a service.
pub const EXCEPTIONS_ANNOTATION: &str = "isvc.ai.example.com/security-exceptions";
/// UID the server runs as unless the platform says otherwise.
pub const DEFAULT_UID: i64 = 10001;
/// GID the server runs as, and that owns the volumes, unless the platform
/// says otherwise.
pub const DEFAULT_GID: i64 = 10001;
/// `USER` of the server process.
pub const USER_NAME: &str = "vllm";
/// The server's home directory: an `emptyDir`.
pub const HOME_DIR: &str = "/home/vllm";
/// The caches (model downloads, compiled kernels): an `emptyDir` of its own.
pub const CACHE_DIR: &str = "/home/vllm/.cache";
/// Temporary files and vLLM's IPC sockets: an `emptyDir`.
pub const TMP_DIR: &str = "/tmp";

/// The security settings of one service's pods, as the template inserts them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PodSecurity {
    /// The pod's `securityContext`.
    pub pod: PodSecurityContext,
    /// The `securityContext` of the server container (and of any container an
    /// overridden template adds).
    pub container: SecurityContext,
    pub automount_service_account_token: bool,
    /// Environment that points home, caches and temporary files at the
    /// writable volumes.
    pub env: Vec<EnvVar>,
    pub home_dir: String,
    pub cache_dir: String,
    pub tmp_dir: String,
    /// Pod annotations: [`EXCEPTIONS_ANNOTATION`] when something is relaxed.
    pub pod_annotations: BTreeMap<String, String>,
}

/// One relaxation of the default, as the platform grants it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Grant {
    RootUser,
    PrivilegeEscalation,
    WritableRootFilesystem,
    ServiceAccountToken,
    UnconfinedSeccomp,
    Capability(String),
}

impl Grant {
    const SWITCHES: [(Grant, &'static str); 5] = [
        (Grant::RootUser, "allowRootUser"),
        (Grant::PrivilegeEscalation, "allowPrivilegeEscalation"),
        (Grant::WritableRootFilesystem, "writableRootFilesystem"),
        (Grant::ServiceAccountToken, "mountServiceAccountToken"),
        (Grant::UnconfinedSeccomp, "unconfinedSeccomp"),
    ];

    /// The grant as the annotation lists it: the switch's name, or
    /// `addCapabilities:NAME`.
    pub fn token(&self) -> String {
        match self {
            Grant::Capability(c) => format!("addCapabilities:{c}"),
            other => Grant::SWITCHES.iter().find(|(g, _)| g == other).map(|(_, t)| t.to_string()).unwrap_or_default(),
        }
    }

    fn parse(token: &str) -> Option<Grant> {
        if let Some(cap) = token.strip_prefix("addCapabilities:") {
            return Some(Grant::Capability(cap.to_string()));
        }
        Grant::SWITCHES.iter().find(|(_, t)| *t == token).map(|(g, _)| g.clone())
    }
}

/// What `settings` relaxes, in a fixed order.
pub fn grants(settings: &Security) -> Vec<Grant> {
    let switches = [
        settings.allow_root_user,
        settings.allow_privilege_escalation,
        settings.writable_root_filesystem,
        settings.mount_service_account_token,
        settings.unconfined_seccomp,
    ];
    let mut out: Vec<Grant> =
        Grant::SWITCHES.iter().zip(switches).filter(|(_, on)| *on).map(|((g, _), _)| g.clone()).collect();
    out.extend(settings.add_capabilities.iter().map(|c| Grant::Capability(c.clone())));
    out
}

/// Whether `exception` covers the service `namespace/name`.
pub fn covers(exception: &SecurityException, namespace: &str, name: &str) -> bool {
    exception.namespace == namespace && (exception.services.is_empty() || exception.services.iter().any(|s| s == name))
}

/// `base` relaxed by `with`: switches add up, capabilities join, ids given
/// in `with` replace those of `base`.
pub fn relax(base: &Security, with: &Security) -> Security {
    let mut add_capabilities: Vec<String> =
        base.add_capabilities.iter().chain(&with.add_capabilities).cloned().collect();
    add_capabilities.sort();
    add_capabilities.dedup();
    Security {
        run_as_user: with.run_as_user.or(base.run_as_user),
        run_as_group: with.run_as_group.or(base.run_as_group),
        fs_group: with.fs_group.or(base.fs_group),
        allow_root_user: base.allow_root_user || with.allow_root_user,
        allow_privilege_escalation: base.allow_privilege_escalation || with.allow_privilege_escalation,
        writable_root_filesystem: base.writable_root_filesystem || with.writable_root_filesystem,
        mount_service_account_token: base.mount_service_account_token || with.mount_service_account_token,
        unconfined_seccomp: base.unconfined_seccomp || with.unconfined_seccomp,
        add_capabilities,
    }
}

/// The settings of the service `namespace/name`: `defaults.security`,
/// relaxed by every exception that covers it.
pub fn settings_for(platform: &Platform, namespace: &str, name: &str) -> Security {
    platform
        .security_exceptions
        .iter()
        .filter(|e| covers(e, namespace, name))
        .fold(platform.defaults.security.clone(), |acc, e| relax(&acc, &e.security))
}

/// The pod and container security settings for `settings`.
pub fn derive(settings: &Security) -> PodSecurity {
    let root = settings.allow_root_user;
    // Allowed to run as root, the ids the platform leaves out are the image's.
    let id = |given: Option<i64>, default: i64| if root { given } else { Some(given.unwrap_or(default)) };
    let pod = PodSecurityContext {
        run_as_non_root: Some(!root),
        run_as_user: id(settings.run_as_user, DEFAULT_UID),
        run_as_group: id(settings.run_as_group, DEFAULT_GID),
        fs_group: Some(settings.fs_group.unwrap_or(DEFAULT_GID)),
        // A model cache on a large persistent volume is not re-chowned at
        // every start.
        fs_group_change_policy: Some("OnRootMismatch".to_string()),
        seccomp_profile: Some(SeccompProfile {
            type_: if settings.unconfined_seccomp { "Unconfined" } else { "RuntimeDefault" }.to_string(),
            localhost_profile: None,
        }),
        ..PodSecurityContext::default()
    };
    let container = SecurityContext {
        allow_privilege_escalation: Some(settings.allow_privilege_escalation),
        privileged: Some(false),
        read_only_root_filesystem: Some(!settings.writable_root_filesystem),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_string()]),
            add: (!settings.add_capabilities.is_empty()).then(|| settings.add_capabilities.clone()),
        }),
        ..SecurityContext::default()
    };
    let granted: Vec<String> = grants(settings).iter().map(Grant::token).collect();
    let pod_annotations = if granted.is_empty() {
        BTreeMap::new()
    } else {
        BTreeMap::from([(EXCEPTIONS_ANNOTATION.to_string(), granted.join(","))])
    };
    PodSecurity {
        pod,
        container,
        automount_service_account_token: settings.mount_service_account_token,
        env: env(),
        home_dir: HOME_DIR.to_string(),
        cache_dir: CACHE_DIR.to_string(),
        tmp_dir: TMP_DIR.to_string(),
        pod_annotations,
    }
}

/// The environment that puts everything vLLM writes on the volumes. Set
/// explicitly, not derived from `HOME`, so an image's own `ENV` cannot move
/// a cache onto the read-only root filesystem.
fn env() -> Vec<EnvVar> {
    let config = format!("{HOME_DIR}/.config");
    [
        ("HOME", HOME_DIR.to_string()),
        ("USER", USER_NAME.to_string()),
        ("TMPDIR", TMP_DIR.to_string()),
        ("XDG_CACHE_HOME", CACHE_DIR.to_string()),
        ("XDG_CONFIG_HOME", config.clone()),
        ("HF_HOME", format!("{CACHE_DIR}/huggingface")),
        ("VLLM_CACHE_ROOT", format!("{CACHE_DIR}/vllm")),
        ("VLLM_CONFIG_ROOT", format!("{config}/vllm")),
    ]
    .into_iter()
    .map(|(name, value)| EnvVar { name: name.to_string(), value: Some(value), value_from: None })
    .collect()
}

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
        .symptom("an attacker who gets code execution can persist it in the container's filesystem")
        .fix(
            "use readOnlyRootFilesystem: true with volumes for what the server writes, or allow writableRootFilesystem",
        )
        .explain(
            "isvc mounts emptyDir volumes for everything vLLM writes (home, the Hugging Face and vLLM caches, /tmp; \
     /dev/shm stays memory-backed) and points HOME, XDG_*, HF_HOME, VLLM_CACHE_ROOT and TMPDIR at them, so \
     the root filesystem can be read-only.",
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

/// Every security rule, for listings.
pub const RULES: [Rule; 7] = [
    RUNS_AS_ROOT,
    PRIVILEGE_ESCALATION,
    CAPABILITIES_KEPT,
    NO_SECCOMP_PROFILE,
    WRITABLE_ROOT_FILESYSTEM,
    SERVICE_ACCOUNT_TOKEN,
    NO_MEMORY_LIMIT,
];

/// Where pod templates sit in the kinds that have them.
const POD_TEMPLATES: [&str; 4] = [
    "/spec/template",
    "/spec/jobTemplate/spec/template",
    "/spec/leaderWorkerTemplate/leaderTemplate",
    "/spec/leaderWorkerTemplate/workerTemplate",
];

/// Runs the security rules over every pod template of `objects`.
pub fn check(objects: &[Object]) -> Vec<Finding> {
    objects
        .par_iter()
        .flat_map_iter(|o| {
            let mut findings = Vec::new();
            for template in POD_TEMPLATES.iter().filter_map(|p| o.value.pointer(p)) {
                check_pod(o, template, &mut findings);
            }
            findings
        })
        .collect()
}

fn check_pod(o: &Object, template: &Value, out: &mut Vec<Finding>) {
    let granted: Vec<Grant> = template
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(EXCEPTIONS_ANNOTATION))
        .and_then(Value::as_str)
        .map(|s| s.split(',').filter_map(|t| Grant::parse(t.trim())).collect())
        .unwrap_or_default();
    let allowed = |g: &Grant| granted.contains(g);
    let mut push = |rule: Rule, message: String| out.push(Finding::new(rule, o, message));
    let null = Value::Null;
    let spec = template.get("spec").unwrap_or(&null);
    let pod_context = spec.get("securityContext").unwrap_or(&null);
    if !allowed(&Grant::ServiceAccountToken) && spec.get("automountServiceAccountToken") != Some(&Value::Bool(false)) {
        push(SERVICE_ACCOUNT_TOKEN, "the pod does not set automountServiceAccountToken: false".to_string());
    }
    let containers =
        ["initContainers", "containers"].into_iter().filter_map(|k| spec.get(k).and_then(Value::as_array)).flatten();
    for c in containers {
        let name = format!("container \"{}\"", c.get("name").and_then(Value::as_str).unwrap_or_default());
        let context = c.get("securityContext").unwrap_or(&null);
        // A container's own setting wins over the pod's.
        let effective = |key: &str| context.get(key).or_else(|| pod_context.get(key));
        let is = |key: &str, want: bool| context.get(key) == Some(&Value::Bool(want));

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
                .pointer(&format!("/capabilities/{key}"))
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
        let seccomp = effective("seccompProfile").and_then(|p| p.get("type")).and_then(Value::as_str);
        if !allowed(&Grant::UnconfinedSeccomp) && !matches!(seccomp, Some("RuntimeDefault" | "Localhost")) {
            let what = seccomp.map_or("no seccomp profile".to_string(), |t| format!("seccomp profile {t}"));
            push(NO_SECCOMP_PROFILE, format!("{name} runs with {what}"));
        }
        if !allowed(&Grant::WritableRootFilesystem) && !is("readOnlyRootFilesystem", true) {
            push(WRITABLE_ROOT_FILESYSTEM, format!("{name} does not set readOnlyRootFilesystem: true"));
        }
        if c.pointer("/resources/limits/memory").is_none() {
            push(NO_MEMORY_LIMIT, format!("{name} has no memory limit"));
        }
    }
}

/// Checks the security settings of a platform file on its tree, so the
/// problems are reported with positions, together with the schema's.
pub fn check_platform(source: &Arc<Source>, root: &Node, diags: &mut Vec<Diagnostic>) {
    let defaults = root.get("defaults").and_then(|d| d.get("security"));
    let root_allowed = |block: Option<&Node>| {
        block.and_then(|b| b.get("allowRootUser")).is_some_and(|n| matches!(n.value, NodeValue::Bool(true)))
    };
    check_block(source, defaults, root_allowed(defaults), diags);
    let Some(NodeValue::Seq(exceptions)) = root.get("securityExceptions").map(|n| &n.value) else { return };
    for exception in exceptions {
        let block = exception.get("security");
        check_block(source, block, root_allowed(defaults) || root_allowed(block), diags);
        let at = |n: &Node| Location::span(source, n.span);
        if let Some(ns) = exception.get("namespace") {
            if let Some(Err(e)) = ns.as_str().map(crate::base::names::dns1123_label) {
                diags.push(Diagnostic::error(format!("invalid namespace in securityExceptions: {e}")).at(at(ns)));
            }
        }
        if let Some(NodeValue::Seq(services)) = exception.get("services").map(|n| &n.value) {
            for s in services {
                if let Some(Err(e)) = s.as_str().map(crate::base::names::dns1035_label) {
                    diags.push(Diagnostic::error(format!("invalid service name in securityExceptions: {e}")).at(at(s)));
                }
            }
        }
    }
}

/// Checks one `security` block; `root_allowed` says whether root is allowed
/// for the services it applies to.
fn check_block(source: &Arc<Source>, block: Option<&Node>, root_allowed: bool, diags: &mut Vec<Diagnostic>) {
    let Some(block) = block else { return };
    if let Some(uid) = block.get("runAsUser").filter(|n| matches!(n.value, NodeValue::Int(0))) {
        if !root_allowed {
            diags.push(
                Diagnostic::error("\"runAsUser: 0\" is root, which this block does not allow")
                    .at(Location::span(source, uid.span))
                    .help("add \"allowRootUser: true\" beside it if the image must run as root, or use a non-zero UID"),
            );
        }
    }
    let Some(NodeValue::Seq(caps)) = block.get("addCapabilities").map(|n| &n.value) else { return };
    for cap in caps {
        let at = Location::span(source, cap.span);
        match cap.as_str() {
            Some("ALL") => diags.push(
                Diagnostic::error("\"addCapabilities\" cannot add ALL: that undoes \"drop: [ALL]\"")
                    .at(at)
                    .help("name each capability the image needs"),
            ),
            Some(c) if c.starts_with("CAP_") => diags.push(
                Diagnostic::error(format!("capability \"{c}\" is written without the CAP_ prefix in Kubernetes"))
                    .at(at)
                    .help(format!("write \"{}\"", &c[4..])),
            ),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::objects::ObjectId;
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
        assert_eq!(settings_for(&platform, "team-b", "legacy").writable_root_filesystem, false);
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
        Object { id: ObjectId::of(&value).unwrap(), value, owner: None, source: None, cluster: None, bootstrap: false }
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
        assert!(messages.contains(&"ISVC104 container \"vllm\" does not set readOnlyRootFilesystem: true".to_string()));
        assert!(messages.contains(&"ISVC100 container \"fetch\" may run as root: it runs as UID 0".to_string()));
        assert!(!messages.iter().any(|m| m.contains("IPC_LOCK")));
    }

    #[test]
    fn a_container_setting_overrides_the_pod_setting() {
        let mut pod = rendered_pod(&Security::default());
        pod["spec"]["containers"][0]["securityContext"]["runAsUser"] = json!(0);
        pod["spec"]["containers"][0]["securityContext"]["seccompProfile"] = json!({"type": "Unconfined"});
        assert_eq!(rule_ids(pod), ["ISVC100", "ISVC103"]);
    }
}
