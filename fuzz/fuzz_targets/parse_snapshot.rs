//! Any bytes as a `--live` snapshot: objects or an error, never a panic, a
//! hang or runaway memory. Alias expansion is bounded per file and per run:
//! the snapshot is read under one run's budget that the same bytes, read
//! first as a platform file, have already spent from, as `isvc plan` reads
//! the platform file and then the snapshot.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    use isvc::base::diagnostics::Source;
    let run = isvc::base::yaml::RunBudget::new();
    let _ = isvc::load::parse_platform_in(&Source::new("platform.yaml", text), &run);
    let source = Source::new("live.yaml", text);
    match isvc::emit::plan::parse_snapshot_in(&source, &run) {
        Ok(objects) => {
            let _ = isvc::emit::plan::plan(&[], &objects);
        }
        Err(diags) => {
            let _ = diags.render(false);
        }
    }
});
