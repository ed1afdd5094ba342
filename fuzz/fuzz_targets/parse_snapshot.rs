//! Any bytes as a `--live` snapshot: objects or an error, never a panic, a
//! hang or runaway memory (alias expansion is bounded per file).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let source = isvc::base::diagnostics::Source::new("live.yaml", text);
    match isvc::emit::plan::parse_snapshot(&source) {
        Ok(objects) => {
            let _ = isvc::emit::plan::plan(&[], &objects);
        }
        Err(diags) => {
            let _ = diags.render(false);
        }
    }
});
