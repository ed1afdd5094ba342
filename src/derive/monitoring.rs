//! Metrics collection: a Prometheus Operator ServiceMonitor
//! (`monitoring.coreos.com/v1`) per service, scraping vLLM's `/metrics` on
//! the serving port through the service's Service. Its targets get the
//! `namespace` and `service` labels the default KEDA query selects on.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::platform::Monitoring;

pub const API_VERSION: &str = "monitoring.coreos.com/v1";
/// Where vLLM's OpenAI server serves its Prometheus metrics.
pub const METRICS_PATH: &str = "/metrics";

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_labels_join_the_service_labels() {
        let m = Monitoring {
            service_monitor: true,
            labels: BTreeMap::from([("release".into(), "prometheus".into())]),
            interval: None,
            namespace: None,
        };
        let labels = BTreeMap::from([("app.kubernetes.io/name".to_string(), "a".to_string())]);
        let p = plan(Some(&m), &labels).unwrap();
        assert_eq!(p.labels.len(), 2);
        assert!(plan(Some(&Monitoring { service_monitor: false, ..m }), &labels).is_none());
        assert!(plan(None, &labels).is_none());
    }
}
