//! Any bytes as an InferenceService file: an error or services, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let source = isvc::base::diagnostics::Source::new("fuzz.yaml", text);
    let (_services, diags) = isvc::load::parse_services(&source);
    for d in &diags {
        let _ = d.render(false);
    }
});
