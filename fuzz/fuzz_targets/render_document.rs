//! The whole render of one arbitrary document: load, derive, render through
//! the templates, parse back, check and lay out the tree. Errors are fine;
//! panics, hangs and runaway memory are not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let source = isvc::base::diagnostics::Source::new("services/fuzz.yaml", text);
    let (services, _) = isvc::load::parse_services(&source);
    if services.is_empty() {
        return;
    }
    let platform = isvc::model::platform::Platform::default();
    let templates = isvc::render::Templates::builtin();
    let config = isvc::check::Config::default();
    match isvc::compile_all(
        &services,
        &platform,
        &templates,
        &|_| "services/fuzz.yaml".to_string(),
        None,
        None,
        &config,
    ) {
        Ok(compiled) => {
            let tree = isvc::emit::write::tree(&compiled.objects);
            assert!(!tree.is_empty());
        }
        Err(diags) => {
            let _ = diags.render(false);
        }
    }
});
