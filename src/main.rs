//! The `isvc` binary: everything lives in the library.

// mimalloc: a render allocates and frees millions of small maps and
// strings, and glibc's allocator spends much of a run in page faults and
// trimming (benches/README.md has the figures). The musl release binaries
// keep Rust's default allocator: they are built without a C cross compiler,
// which mimalloc needs.
#[cfg(not(target_env = "musl"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    isvc::cli::main()
}
