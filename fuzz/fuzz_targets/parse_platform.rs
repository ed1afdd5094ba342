//! Any bytes as a platform file: an error or a platform, never a panic or a
//! hang. A platform that loads is rendered with a valid service, and every
//! file of the tree must stay inside the output directory: no absolute
//! path, no `..`, no empty component, one comment line per file.
#![no_main]

use libfuzzer_sys::fuzz_target;

const SERVICE: &str = "apiVersion: ai.example.com/v1alpha1
kind: InferenceService
metadata: {name: qwen3}
spec: {model: Qwen/Qwen3-0.6B, replicas: 3, gpusPerReplica: 1}
";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let source = isvc::base::diagnostics::Source::new("platform.yaml", text);
    let platform = match isvc::load::parse_platform(&source) {
        Ok(p) => p,
        Err(diags) => {
            for d in &diags {
                let _ = d.render(false);
            }
            return;
        }
    };
    let (services, _) = isvc::load::parse_services(&isvc::base::diagnostics::Source::new("services/s.yaml", SERVICE));
    let engine = platform.gitops.as_ref().map(|_| isvc::model::platform::Engine::Flux);
    let inputs = isvc::Inputs::new(services).with_platform(platform, Some("p.yaml".to_string()));
    let Ok(compiled) = isvc::Compiler::new(&inputs, isvc::Options::default().engine(engine)).compile() else {
        return;
    };
    for (path, text) in isvc::emit::write::tree(&compiled.objects) {
        assert!(path.is_relative(), "{path:?}");
        for c in path.components() {
            assert!(matches!(c, std::path::Component::Normal(n) if !n.is_empty()), "{path:?}");
        }
        assert!(text.lines().filter(|l| l.starts_with('#')).count() <= 1 || path.ends_with("kustomization.yaml"));
    }
});
