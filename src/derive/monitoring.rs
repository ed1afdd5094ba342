//! Metrics collection: a Prometheus Operator ServiceMonitor
//! (`monitoring.coreos.com/v1`) per service, scraping vLLM's `/metrics` on
//! the serving port through the service's Service. Its targets get the
//! `namespace` and `service` labels the default KEDA query selects on.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const API_VERSION: &str = "monitoring.coreos.com/v1";
/// Where vLLM's OpenAI server serves its Prometheus metrics.
pub const METRICS_PATH: &str = "/metrics";

/// The platform's monitoring settings.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Monitoring {
    /// Render a ServiceMonitor for every service.
    #[serde(default = "yes")]
    pub service_monitor: bool,
    /// Labels added to each ServiceMonitor, so the Prometheus's
    /// `serviceMonitorSelector` picks them up (for example `release: prometheus`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// How often Prometheus scrapes (a Prometheus duration, `30s`); its
    /// global interval when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub interval: Option<String>,
}

fn yes() -> bool {
    true
}

/// What a service's ServiceMonitor needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MonitorPlan {
    /// The ServiceMonitor's own labels: the service's plus the platform's.
    pub labels: BTreeMap<String, String>,
    pub path: String,
    pub interval: Option<String>,
}

/// The ServiceMonitor plan of a service, where the platform asks for one.
pub fn plan(monitoring: Option<&Monitoring>, labels: &BTreeMap<String, String>) -> Option<MonitorPlan> {
    let m = monitoring.filter(|m| m.service_monitor)?;
    let mut all = labels.clone();
    all.extend(m.labels.clone());
    Some(MonitorPlan { labels: all, path: METRICS_PATH.to_string(), interval: m.interval.clone() })
}

/// Problems in the platform's `monitoring` section, with the field's path.
pub fn check_platform(
    platform: &crate::model::platform::Platform,
) -> Vec<(Vec<crate::base::yaml::PathSegment>, String)> {
    let key = |k: &str| crate::base::yaml::PathSegment::Key(k.to_string());
    let Some(m) = &platform.monitoring else { return Vec::new() };
    let mut out = Vec::new();
    for (k, v) in &m.labels {
        if let Err(e) = crate::base::names::qualified_name(k) {
            out.push((vec![key("monitoring"), key("labels"), key(k)], format!("invalid label key \"{k}\": {e}")));
        } else if let Err(e) = crate::base::names::label_value(v, true) {
            out.push((vec![key("monitoring"), key("labels"), key(k)], format!("invalid value for label \"{k}\": {e}")));
        }
    }
    if let Some(i) = m.interval.as_ref().filter(|i| !is_prometheus_duration(i)) {
        out.push((
            vec![key("monitoring"), key("interval")],
            format!("\"{i}\" is not a Prometheus duration (for example 30s, 1m)"),
        ));
    }
    out
}

/// `^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`,
/// without the empty string.
fn is_prometheus_duration(text: &str) -> bool {
    if text == "0" {
        return true;
    }
    let mut rest = text;
    let mut units = ["y", "w", "d", "h", "m", "s", "ms"].iter();
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        // Units must come in order, each at most once; "ms" before "m".
        let found = units.by_ref().find(|u| rest.starts_with(**u) && !(**u == "m" && rest.starts_with("ms")));
        let Some(u) = found else { return false };
        rest = &rest[u.len()..];
    }
    !text.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_durations() {
        for ok in ["30s", "1m", "1h30m", "500ms", "0", "1m30s500ms"] {
            assert!(is_prometheus_duration(ok), "{ok}");
        }
        for bad in ["", "30", "1.5s", "30s1m", "1mm"] {
            assert!(!is_prometheus_duration(bad), "{bad}");
        }
    }

    #[test]
    fn platform_labels_join_the_service_labels() {
        let m = Monitoring {
            service_monitor: true,
            labels: BTreeMap::from([("release".into(), "prometheus".into())]),
            interval: None,
        };
        let labels = BTreeMap::from([("app.kubernetes.io/name".to_string(), "a".to_string())]);
        let p = plan(Some(&m), &labels).unwrap();
        assert_eq!(p.labels.len(), 2);
        assert!(plan(Some(&Monitoring { service_monitor: false, ..m }), &labels).is_none());
        assert!(plan(None, &labels).is_none());
    }
}
