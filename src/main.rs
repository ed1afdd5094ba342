//! The `isvc` binary: everything lives in the library.

fn main() -> std::process::ExitCode {
    isvc::cli::main()
}
