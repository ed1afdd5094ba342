//! Any bytes as a platform file: an error or a platform, never a panic or a
//! hang. The platform is read under one run's alias budget that the same
//! bytes, read first as a service file, have already spent from, so the
//! run limit is reached as well as the file's. A platform that loads is
//! rendered with a valid service (with `--gitops` whether or not it has a
//! `gitops` section, and its clusters' `services` checked against the
//! inputs, errors pointing into the file), and every file of the tree must
//! stay inside the output directory: no absolute path, no `..`, no empty
//! component, one comment line per file.
#![no_main]

use libfuzzer_sys::fuzz_target;

const SERVICE: &str = "apiVersion: ai.example.com/v1alpha1
kind: InferenceService
metadata: {name: qwen3}
spec: {model: Qwen/Qwen3-0.6B, replicas: 3, gpusPerReplica: 1}
";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    use isvc::base::diagnostics::Source;
    let run = isvc::base::yaml::RunBudget::new();
    let _ = isvc::load::parse_services_in(&Source::new("services/fuzz.yaml", text), &run);
    let source = Source::new("platform.yaml", text);
    let (platform, origin) = match isvc::load::parse_platform_in(&source, &run) {
        Ok(p) => p,
        Err(diags) => {
            for d in &diags {
                let _ = d.render(false);
            }
            return;
        }
    };
    let (services, _) = isvc::load::parse_services(&Source::new("services/s.yaml", SERVICE));
    let engine =
        if data.len() % 2 == 0 { isvc::model::platform::Engine::Flux } else { isvc::model::platform::Engine::Argocd };
    let inputs = isvc::Inputs::new(services)
        .with_platform(platform, Some("platform.yaml".to_string()))
        .with_platform_origin(Some(origin));
    let compiled = match isvc::Compiler::new(&inputs, isvc::Options::default().engine(Some(engine))).compile() {
        Ok(c) => c,
        Err(diags) => {
            let _ = diags.render(false);
            return;
        }
    };
    for (path, text) in isvc::emit::write::tree(&compiled.objects) {
        assert!(path.is_relative(), "{path:?}");
        for c in path.components() {
            assert!(matches!(c, std::path::Component::Normal(n) if !n.is_empty()), "{path:?}");
        }
        assert!(text.lines().filter(|l| l.starts_with('#')).count() <= 1 || path.ends_with("kustomization.yaml"));
    }
});
