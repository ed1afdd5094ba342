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

    /// `mi_option_purge_delay`: milliseconds before freed memory is given
    /// back to the system (1000 by default in v3, `src/options.c`).
    const PURGE_DELAY: mi_option_t = 15;
    // The number above holds for this list of options only.
    const _: () = assert!(_mi_option_last == 47);

    /// The delay where the peak matters most. Memory freed and taken again
    /// within a few milliseconds (a document's parse tree made into its
    /// value, an object checked, then the next) stays with the process;
    /// what a run has done with stays given back. At 10,000 services,
    /// against a delay of 0 (medians of 8 to 10 interleaved pairs): `plan`
    /// of a converged snapshot took 0.83x the time, `check` 0.84x and
    /// `render --stdout --kind Deployment` 0.91x, each at the same peak
    /// within 3 MiB (746, 91 and 141 MiB; benches/README.md).
    const PEAK_PURGE_DELAY_MS: std::ffi::c_long = 10;

    /// A render frees each namespace's objects once written; giving that
    /// memory back at once lowers the peak resident memory at 10,000
    /// services by 7 to 30 MB, for up to 0.4 s of system time
    /// (benches/README.md). Where the peak matters most
    /// ([`isvc::cli::Memory::Peak`]) it is given back after
    /// [`PEAK_PURGE_DELAY_MS`]. `diff` and every render but
    /// `--stdout --kind` keep mimalloc's delay (`diff` holds texts, as a
    /// render into a tree does): at 10,000 services a cold render took
    /// 0.84x the time and peaked at
    /// 163 MB instead of 136 MB, a re-render after one change took 0.89x,
    /// and `render --stdout`, its texts packed, took 0.84x the time of
    /// unpacked texts given back at once and peaked at 108 MiB instead of
    /// 131 MiB. `MIMALLOC_PURGE_DELAY` (or its older
    /// name `MIMALLOC_RESET_DELAY`) still applies where it is set.
    pub fn tune(memory: isvc::cli::Memory) {
        let set = |name: &str| std::env::var_os(name).is_some() || std::env::var_os(name.to_lowercase()).is_some();
        if memory == isvc::cli::Memory::Peak && !set("MIMALLOC_PURGE_DELAY") && !set("MIMALLOC_RESET_DELAY") {
            // SAFETY: mimalloc's option setters are plain stores, not
            // synchronised: this runs once the arguments are parsed, before
            // any other thread (rayon's pool included) exists.
            unsafe { mi_option_set(PURGE_DELAY, PEAK_PURGE_DELAY_MS) };
        }
        // Transparent huge pages: mimalloc asks for them (`madvise`) on
        // its arenas, and each page it takes after a purge is then a fresh
        // 2 MiB page the kernel zeroes whole. Reading a tree of 29,000
        // files spent a third of its time in that zeroing; without huge
        // pages a render at 10,000 services peaks 6 to 12 MB lower and is
        // no slower (benches/README.md). mimalloc reads its own option,
        // `MIMALLOC_ALLOW_THP`, before `main`, so the process-wide flag it
        // would set is set here (prctl(2), PR_SET_THP_DISABLE: faults of
        // every mapping after the call, existing ones included, take small
        // pages); an explicit `MIMALLOC_ALLOW_THP` still decides. The survey
        // of a tree (`render --out`, `diff`) runs without them too. It
        // touches tens of megabytes at once, and huge pages saved it time
        // only when it ran right after another run: there it took 0.88x
        // the time with them (`render --check` of an up-to-date tree at
        // 10,000 services, 12 interleaved pairs). After a second or more
        // without one, it took 1.3x to 2x, and varied more (on a virtual
        // machine whose kernel hands free 2 MiB blocks back to its host,
        // `page_reporting`, the 2 MiB pages come from those blocks; a
        // user's run seldom follows another within the second;
        // benches/README.md).
        #[cfg(target_os = "linux")]
        if !set("MIMALLOC_ALLOW_THP") {
            let _ = rustix::thread::disable_transparent_huge_pages(true);
        }
    }

    /// The run is over: the process is about to exit, and its memory goes
    /// back to the system with it. mimalloc's exit handler collects the
    /// main thread's heap with a forced purge (`mi_process_done`,
    /// `src/init.c`), handing back with madvise(2) the memory it freed
    /// but kept; a purge delay below zero schedules no purge
    /// (`mi_arenas_try_purge`, `src/arena.c`). At 10,000 services those
    /// purges were 814 madvise calls at the end of `render --stdout`, on
    /// one core; without them it took 0.980x the wall time and 0.964x the
    /// CPU time (16 pairs, benches/README.md).
    pub fn exiting() {
        // SAFETY: a plain store, as in `tune`; the command has returned,
        // and rayon's workers wait for work that no longer comes.
        unsafe { mi_option_set(PURGE_DELAY, -1) };
    }
}

fn main() -> std::process::ExitCode {
    let code = isvc::cli::main_with(|_memory| {
        #[cfg(not(target_env = "musl"))]
        allocator::tune(_memory);
    });
    #[cfg(not(target_env = "musl"))]
    allocator::exiting();
    code
}
