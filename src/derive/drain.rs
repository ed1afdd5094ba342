//! Graceful drain: what happens between a pod's deletion and its exit.
//!
//! Deleted, a pod is taken out of the Service's endpoints and the Gateway's
//! pool while its containers get the preStop hook, then SIGTERM, then, at
//! the end of `terminationGracePeriodSeconds`, SIGKILL. vLLM before 0.18
//! aborts every request in flight on SIGTERM; 0.18 and later stop taking
//! new requests and wait up to `--shutdown-timeout` seconds for the ones in
//! flight (vllm-project/vllm PR #34730, re-landed as #36666; default 0,
//! abort at once). So:
//!
//! - where the image's tag says vLLM 0.18 or later, the preStop hook sleeps
//!   `preStopSeconds` (routing catches up), and the server gets
//!   `--shutdown-timeout=requestSeconds`;
//! - otherwise the preStop hook sleeps `preStopSeconds + requestSeconds`:
//!   the server keeps serving what it has while nothing new arrives, and
//!   SIGTERM comes when the longest request is done;
//! - the grace period covers both, plus [`MARGIN_SECONDS`] to exit, as in
//!   vllm-project/vllm PR #43208 (`terminationGracePeriodSeconds >= preStop
//!   sleep + --shutdown-timeout`) and kserve/kserve PR #5496.
//!
//! Multi-node workers hold the leader's model shards: they sleep through
//! the leader's whole drain, so the group serves until the leader is done.

use serde::Serialize;

use crate::model::engine::has_shutdown_timeout;
use crate::model::platform::Drain;

/// Seconds the grace period leaves the server to exit after its drain.
pub const MARGIN_SECONDS: i32 = 15;

/// How one service's pods drain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DrainPlan {
    /// The server's preStop command.
    pub pre_stop: Vec<String>,
    /// A multi-node worker's preStop command.
    pub worker_pre_stop: Vec<String>,
    pub termination_grace_period_seconds: i32,
}

/// The drain of a server running `image`, and the server arguments it needs.
pub fn plan(drain: &Drain, image: &str) -> (DrainPlan, Vec<String>) {
    let sleep = |s: i32| vec!["sleep".to_string(), s.to_string()];
    let total = drain.pre_stop_seconds + drain.request_seconds;
    let (pre_stop, args) = if has_shutdown_timeout(image) {
        (sleep(drain.pre_stop_seconds), vec![format!("--shutdown-timeout={}", drain.request_seconds)])
    } else {
        (sleep(total), Vec::new())
    };
    let plan =
        DrainPlan { pre_stop, worker_pre_stop: sleep(total), termination_grace_period_seconds: total + MARGIN_SECONDS };
    (plan, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_servers_drain_themselves_old_ones_sleep_through_it() {
        let d = Drain { pre_stop_seconds: 15, request_seconds: 120 };
        let (p, args) = plan(&d, "vllm/vllm-openai:v0.18.0");
        assert_eq!(p.pre_stop, ["sleep", "15"]);
        assert_eq!(args, ["--shutdown-timeout=120"]);
        assert_eq!(p.worker_pre_stop, ["sleep", "135"]);
        assert_eq!(p.termination_grace_period_seconds, 150);
        let (p, args) = plan(&d, "vllm/vllm-openai:v0.11.0");
        assert_eq!(p.pre_stop, ["sleep", "135"]);
        assert!(args.is_empty());
        assert_eq!(p.termination_grace_period_seconds, 150);
        let (p, args) = plan(&d, "vllm/vllm-openai@sha256:0123");
        assert_eq!((p.pre_stop, args), (vec!["sleep".to_string(), "135".to_string()], vec![]));
    }
}
