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

use k8s_openapi::api::core::v1::{Capabilities, EnvVar, PodSecurityContext, SeccompProfile, SecurityContext};
use serde::Serialize;

use crate::model::labels::EXCEPTIONS_ANNOTATION;
use crate::model::platform::{Platform, Security, SecurityException};

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

    pub fn parse(token: &str) -> Option<Grant> {
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
