//! Image rules: what a pod runs must not change under it.

use crate::base::value::At;
use serde_json::Value;

use super::{Context, Finding, Rule, Severity, container_name, containers, init_containers, pod_templates};
use crate::model::objects::Object;

pub const MUTABLE_IMAGE: Rule = Rule::new(
    "ISVC020",
    Severity::Warning,
    "an image tag that moves (latest, none, or a name like nightly) makes pods of one Deployment run different servers",
)
.symptom(
    "pods of the same Deployment behave differently (one node pulled last week's image, a new node today's); a \
     rollback does not bring the old server back; a node restart silently upgrades vLLM",
)
.fix("pin the image to a version tag (vllm/vllm-openai:v0.11.0) or, better, a digest (...@sha256:...)")
.explain(
    "A tag is a name that can be pointed at another image. `latest`, a missing tag (which means latest) and \
     tags without any version number (nightly, main, stable) are moved routinely. Each node pulls the image \
     when it first starts a pod, so the pods of one Deployment end up on different builds, and the rendered \
     manifest in git no longer says what runs. A digest cannot move; a version tag is treated as pinned by \
     convention.",
);

/// The image rules over one object.
pub(crate) fn check(_: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    for template in pod_templates(o) {
        for c in containers(template).chain(init_containers(template)) {
            let Some(image) = c.field("image").and_then(Value::as_str) else { continue };
            if let Some(why) = moves(image) {
                out.push(Finding::new(
                    MUTABLE_IMAGE,
                    o,
                    format!("container \"{}\" runs {image}, {why}; pin a version or a digest", container_name(c)),
                ));
            }
        }
    }
}

/// Why an image reference can change what it names, if it can.
fn moves(image: &str) -> Option<&'static str> {
    if image.contains('@') {
        return None;
    }
    let name = image.rsplit('/').next().unwrap_or(image);
    match name.split_once(':').map(|(_, tag)| tag) {
        None => Some("which has no tag and so means latest"),
        Some(tag) if tag.to_ascii_lowercase().starts_with("latest") => Some("a tag that moves with every release"),
        Some(tag) if !tag.bytes().any(|b| b.is_ascii_digit()) => Some("a tag without a version, which moves"),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::moves;

    #[test]
    fn only_tags_that_move_are_flagged() {
        for pinned in [
            "vllm/vllm-openai:v0.11.0",
            "registry.example.com:5000/vllm/vllm-openai:v0.11.0",
            "vllm/vllm-openai@sha256:0123abcd",
            "vllm/vllm-openai:latest@sha256:0123abcd",
            "vllm/vllm-openai:nightly-8f3a2c1",
        ] {
            assert_eq!(moves(pinned), None, "{pinned}");
        }
        for moving in [
            "vllm/vllm-openai",
            "vllm/vllm-openai:latest",
            "registry.example.com:5000/vllm",
            "vllm/vllm-openai:nightly",
        ] {
            assert!(moves(moving).is_some(), "{moving}");
        }
    }
}
