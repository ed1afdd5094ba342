//! Any bytes as a platform file: an error or a platform, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let source = isvc::base::diagnostics::Source::new("platform.yaml", text);
    if let Err(diags) = isvc::load::parse_platform(&source) {
        for d in &diags {
            let _ = d.render(false);
        }
    }
});
