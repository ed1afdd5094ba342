//! The `isvc` binary: everything lives in the library.

// mimalloc: a render allocates and frees millions of small maps and
// strings, and glibc's allocator spends much of a run in page faults and
// trimming (benches/README.md has the figures). The musl release binaries
// keep Rust's default allocator: they are built without a C cross compiler,
// which mimalloc needs.
#[cfg(not(target_env = "musl"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's options, by their place in `mi_option_e` of the bundled
/// mimalloc v3 (`include/mimalloc.h`); the crate names only some of them.
#[cfg(not(target_env = "musl"))]
mod allocator {
    use libmimalloc_sys::{_mi_option_last, mi_option_set, mi_option_t};

    /// `mi_option_purge_delay`: milliseconds before freed memory is returned.
    const PURGE_DELAY: mi_option_t = 15;
    /// `mi_option_allow_thp`: transparent huge pages.
    const ALLOW_THP: mi_option_t = 43;
    // The numbers above hold for this list of options only.
    const _: () = assert!(_mi_option_last == 47);

    /// A render frees each namespace's objects once written; returning that
    /// memory at once, in 4 KiB pages, lets the next namespace's objects
    /// reuse it. At 10,000 services this lowers the peak resident memory
    /// by about a fifth at the same speed (benches/README.md). The
    /// `MIMALLOC_*` environment variables still apply where they are set.
    pub fn tune() {
        for (option, value, variable) in
            [(PURGE_DELAY, 0, "MIMALLOC_PURGE_DELAY"), (ALLOW_THP, 0, "MIMALLOC_ALLOW_THP")]
        {
            if std::env::var_os(variable).is_none() {
                // SAFETY: setting an option is a plain store in mimalloc.
                unsafe { mi_option_set(option, value) };
            }
        }
    }
}

fn main() -> std::process::ExitCode {
    #[cfg(not(target_env = "musl"))]
    allocator::tune();
    isvc::cli::main()
}
