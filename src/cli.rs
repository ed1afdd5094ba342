//! The command line: parses arguments, runs the library, prints, and maps
//! outcomes to exit codes (0 success or no differences, 1 differences
//! found, 2 bad input or usage). Errors go to stderr.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::base::diagnostics::{Diagnostic, Diagnostics};
use crate::base::paths::slash;
use crate::check;
use crate::compiler::{self, Compilation, Compiler, Options};
use crate::emit::manifest::{self, MANIFEST, Manifest, Selection};
use crate::emit::stat::{self, StatCache};
use crate::emit::{diff, migrate, plan, write as output};
use crate::load::{self, LoadedService};
use crate::model::objects::{self, Held, Object, Streamed, Written};
use crate::model::schema;
use crate::render::Templates;
use crate::report::{findings as report, sarif};

#[derive(Parser, Debug)]
#[command(
    name = "isvc",
    version,
    about = "Offline GitOps compiler for LLM inference services",
    long_about = "Compiles InferenceService files (and an optional platform file) into fully rendered, \
                  deterministic Kubernetes YAML to commit to git for Argo CD or Flux to apply."
)]
pub struct Cli {
    /// When to use colours: auto (a terminal, and NO_COLOR unset), always, never.
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,

    /// Print errors only: no progress lines, warnings or quota tables.
    #[arg(long, short, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Also list every file written or removed.
    #[arg(long, short, global = true)]
    pub verbose: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Render InferenceServices into an output tree (or a YAML stream).
    Render(RenderArgs),
    /// Show what `render` would change in the output tree, object by object.
    Diff(DiffArgs),
    /// Run every rule over the rendered objects and report what would break
    /// in a cluster.
    Check(CheckArgs),
    /// Show the actions that would bring a cluster (a `kubectl get -o yaml`
    /// snapshot) to the desired state.
    Plan(PlanArgs),
    /// Show each InferenceService's status against a cluster snapshot.
    Status(StatusArgs),
    /// Print the InferenceService CustomResourceDefinition.
    Crd,
    /// Write the JSON Schemas of the InferenceService and platform files.
    Schema(SchemaArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), for `man -l -` or a man directory.
    Man,
    /// Rewrite v1alpha1 InferenceService files as v1alpha2, in place,
    /// keeping comments and layout.
    Migrate(MigrateArgs),
}

/// Inputs shared by every command that compiles.
#[derive(Args, Debug)]
pub struct Inputs {
    /// InferenceService files or directories (searched for *.yaml and *.yml,
    /// hidden entries skipped).
    #[arg(value_name = "PATH", default_value = "services")]
    pub paths: Vec<PathBuf>,

    /// Platform file with defaults; built-in defaults when left out.
    #[arg(long, value_name = "FILE")]
    pub platform: Option<PathBuf>,

    /// Directory of template overrides: a file there replaces the built-in
    /// template of the same name.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,

    /// Also emit the GitOps engine's objects (an Argo CD Application or
    /// ApplicationSet, or Flux Kustomizations) under `_gitops/`, and order
    /// the output for it. Overrides the platform file's `gitops.engine`.
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub gitops: Option<GitOpsEngine>,

    /// Rules to turn off for this run: IDs, comma-separated or repeated
    /// (`isvc check --explain ID` describes a rule).
    #[arg(long, value_name = "IDS")]
    pub disable: Vec<String>,

    /// Only this cluster of the platform file's `clusters`: what `render
    /// --stdout`, `diff`, `check`, `plan` and `status` work on. Required by
    /// `render --stdout`, `plan` and `status` when the platform lists
    /// several clusters, so one cluster's objects never mix with another's.
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum GitOpsEngine {
    Argocd,
    Flux,
}

impl From<GitOpsEngine> for crate::model::platform::Engine {
    fn from(e: GitOpsEngine) -> crate::model::platform::Engine {
        match e {
            GitOpsEngine::Argocd => crate::model::platform::Engine::Argocd,
            GitOpsEngine::Flux => crate::model::platform::Engine::Flux,
        }
    }
}

#[derive(Args, Debug)]
pub struct RenderArgs {
    #[command(flatten)]
    pub inputs: Inputs,

    /// Output directory.
    #[arg(long, value_name = "DIR", required_unless_present = "stdout")]
    pub out: Option<PathBuf>,

    /// Write nothing; list stale, missing and extra files and exit 1 if the
    /// output directory is out of date.
    #[arg(long, requires = "out", conflicts_with = "stdout")]
    pub check: bool,

    /// Compile every namespace and compare or write every file, whatever
    /// the tree's manifest records (for a CI gate that does not trust a
    /// committed manifest, or after changing isvc itself).
    #[arg(long, requires = "out", conflicts_with = "stdout")]
    pub full: bool,

    /// Print every object as one multi-document YAML stream instead of
    /// writing a tree (for `kubectl apply -f -` and Argo CD plugins).
    #[arg(long, conflicts_with = "out")]
    pub stdout: bool,

    /// With --stdout, print only objects of these kinds (comma-separated or
    /// repeated, e.g. `Deployment,Service`), still in apply order.
    #[arg(long, value_name = "KIND", value_delimiter = ',')]
    pub kind: Vec<String>,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    #[command(flatten)]
    pub inputs: Inputs,

    /// The output directory to compare with.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Compile every namespace and compare every file, whatever the
    /// tree's manifest records.
    #[arg(long)]
    pub full: bool,

    /// Report format.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,

    /// Longest markdown report, in characters (a GitHub comment holds at
    /// most 65,536): objects that do not fit are counted, not shown.
    #[arg(long, value_name = "CHARS", default_value_t = crate::report::diff::COMMENT_LIMIT)]
    pub max_chars: usize,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DiffFormat {
    Text,
    Markdown,
    Json,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub inputs: Inputs,

    /// Report format: text, JSON for scripts, or SARIF for GitHub code scanning.
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub format: CheckFormat,

    /// Print what a rule is about (symptom, cause, fix, how to disable it)
    /// and exit.
    #[arg(long, value_name = "ID")]
    pub explain: Option<String>,

    /// Exit 1 on warnings too, not only on errors.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
    Sarif,
}

/// A cluster snapshot and what to print.
#[derive(Args, Debug)]
pub struct LiveArgs {
    #[command(flatten)]
    pub inputs: Inputs,

    /// What `kubectl get deploy,svc,hpa -A -o yaml` (or `-o json`) printed;
    /// `-` reads standard input.
    #[arg(long, value_name = "SNAPSHOT")]
    pub live: PathBuf,

    /// Report format.
    #[arg(long, value_enum, default_value_t = LiveFormat::Text)]
    pub format: LiveFormat,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(flatten)]
    pub live: LiveArgs,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub live: LiveArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LiveFormat {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct MigrateArgs {
    /// InferenceService files or directories (searched for *.yaml and *.yml,
    /// hidden entries skipped).
    #[arg(value_name = "PATH", default_value = "services")]
    pub paths: Vec<PathBuf>,

    /// Write nothing; list the files that would change and exit 1 if any would.
    #[arg(long)]
    pub check: bool,
}

#[derive(Args, Debug)]
pub struct SchemaArgs {
    /// Directory to write the schema files into.
    #[arg(long, value_name = "DIR", default_value = "schemas")]
    pub out: PathBuf,
}

/// Runs the command line and returns the process exit code.
/// How much to print besides results and errors: 0 quiet, 1 normal, 2 verbose.
static VERBOSITY: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(1);

fn verbosity() -> u8 {
    VERBOSITY.load(std::sync::atomic::Ordering::Relaxed)
}

/// What a run's memory is spent on, for the allocator's tuning (the
/// binary's `main`, see [`main_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// Its peak matters most: a run that may hold the whole fleet's
    /// objects, or the unpacked texts of some kinds (`render --stdout
    /// --kind`, which also holds the objects of two namespaces as a render
    /// into a tree does).
    Peak,
    /// A render into a tree, or of every object to standard output with
    /// the texts packed: it holds the objects of one namespace at a time
    /// (two, in a render into a tree: the next one renders while one is
    /// checked; to standard output, only the next one's desired states),
    /// and its time matters more. And `diff`, which holds the texts of
    /// the objects it compiles, as a render into a tree does.
    Time,
}

pub fn main() -> ExitCode {
    main_with(|_| {})
}

/// What `command`'s memory is spent on: a render into a tree holds the
/// objects of two namespaces at a time (one checked, the next rendered
/// meanwhile: `Held::OVERLAP`), and a render of every object to
/// standard output holds their texts packed (`Streamed`, 108 MiB at
/// 10,000 services with the allocator's default delay, against 131 MiB
/// for the unpacked texts with none). Other runs may hold the objects, or
/// the texts of some kinds (`--kind`), of a whole fleet. `diff` holds the
/// texts of the objects it compiles and of the tree's files that differ:
/// after a change to the platform at 10,000 services, which changes every
/// Deployment, it peaked at 191 MiB with the default delay and 186 MiB
/// with a delay of 10 ms, which took 0.2 s more system time (3 pairs
/// each).
fn memory(command: &Command) -> Memory {
    match command {
        Command::Render(args) if args.out.is_some() || args.kind.is_empty() => Memory::Time,
        Command::Diff(_) => Memory::Time,
        _ => Memory::Peak,
    }
}

/// [`main`], telling `tune` what the run's memory is spent on once the
/// arguments are read, before any other thread starts.
pub fn main_with(tune: impl Fn(Memory)) -> ExitCode {
    let cli = Cli::parse();
    tune(memory(&cli.command));
    let level = if cli.quiet {
        0
    } else if cli.verbose {
        2
    } else {
        1
    };
    VERBOSITY.store(level, std::sync::atomic::Ordering::Relaxed);
    match cli.color {
        ColorWhen::Always => anstream::ColorChoice::Always.write_global(),
        ColorWhen::Never => anstream::ColorChoice::Never.write_global(),
        ColorWhen::Auto => {}
    }
    let result = match cli.command {
        Command::Render(args) => render(args),
        Command::Diff(args) => diff_cmd(args),
        Command::Check(args) => check_cmd(args),
        Command::Plan(args) => plan_cmd(args.live),
        Command::Status(args) => status_cmd(args.live),
        Command::Crd => {
            print(&Object::to_file(&crate::model::crd::object()));
            Ok(ExitCode::SUCCESS)
        }
        Command::Schema(args) => write_schemas(&args.out),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "isvc", &mut out);
            print_plain(&String::from_utf8_lossy(&out));
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => match manual() {
            Ok(page) => {
                print_plain(&page);
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => Err(Diagnostic::error(format!("cannot render the manual page: {e}")).into()),
        },
        Command::Migrate(args) => migrate_cmd(args),
    };
    if let Some(code) = stdout_failure() {
        return code;
    }
    match result {
        Ok(code) => code,
        Err(diags) => {
            eprint_diagnostics(&diags);
            ExitCode::from(2)
        }
    }
}

/// The first error writing to standard output, if any: a run whose output
/// did not all arrive must not exit 0 (`kubectl apply -f` would apply a
/// truncated stream).
static STDOUT_ERROR: std::sync::Mutex<Option<std::io::Error>> = std::sync::Mutex::new(None);

fn record_stdout(result: std::io::Result<()>) {
    if let (Err(e), Ok(mut first)) = (result, STDOUT_ERROR.lock()) {
        first.get_or_insert(e);
    }
}

fn print(text: &str) {
    let mut out = anstream::stdout();
    record_stdout(out.write_all(text.as_bytes()).and_then(|()| out.flush()));
}

/// Prints text that never holds colour codes, without scanning it for them.
fn print_plain(text: &str) {
    let mut out = std::io::stdout().lock();
    record_stdout(out.write_all(text.as_bytes()).and_then(|()| out.flush()));
}

/// Writes one multi-document YAML stream (the bytes of
/// [`crate::model::objects::to_stream`]) to standard output with `write`.
/// Stops at the first write error, which `main` turns into a non-zero
/// exit. The process ends after the stream: callers forget what they held
/// rather than free each text, which would only delay the exit.
fn print_stream(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    record_stdout(write(&mut out).and_then(|()| out.flush()));
}

/// Writes the stream of `objects`: each file's text after a `---` line.
fn write_stream(objects: &[Written], out: &mut (impl Write + ?Sized)) -> std::io::Result<()> {
    for o in objects {
        out.write_all(b"---\n")?;
        out.write_all(o.text.as_bytes())?;
    }
    Ok(())
}

/// The exit code once standard output was not all written: a closed pipe
/// ends the run quietly with 141, the status a shell shows for a process
/// killed by SIGPIPE (what `cat` or `grep` give); any other error (a full
/// disk) is reported and exits 2.
fn stdout_failure() -> Option<ExitCode> {
    let e = STDOUT_ERROR.lock().ok()?.take()?;
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return Some(ExitCode::from(141));
    }
    eprint_diagnostics(&Diagnostics::from(
        Diagnostic::error(format!("cannot write to standard output: {e}"))
            .help("the output is incomplete; do not apply it")
            .after_writing(),
    ));
    Some(ExitCode::from(2))
}

fn eprint_diagnostics(diags: &Diagnostics) {
    let shown = if verbosity() == 0 {
        Diagnostics(diags.iter().filter(|d| d.is_error()).cloned().collect())
    } else {
        diags.clone()
    };
    let mut err = anstream::stderr();
    let _ = err.write_all(shown.render(true).as_bytes());
}

/// A progress line on stderr, unless --quiet.
fn status(line: &str) {
    if verbosity() == 0 {
        return;
    }
    let mut err = anstream::stderr();
    let _ = writeln!(err, "{line}");
}

/// Everything a run reads, and the rules it keeps.
struct Loaded {
    inputs: compiler::Inputs,
    config: check::Config,
    /// What the load warns of, for the caller to show.
    warnings: Diagnostics,
}

/// The manual page, isvc(1): the name, synopsis, description and global
/// options as clap_mangen renders them, then one section per command with
/// its options, so the page names no other page.
fn manual() -> std::io::Result<String> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    let roff = |t: &str| t.replace('\\', "\\\\").replace('-', "\\-").replace('\n', " ");
    let mut text = String::from_utf8_lossy(&out).into_owned();
    text.push_str(".SH COMMANDS\n");
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        text.push_str(&format!(".SS \"isvc {}\"\n", sub.get_name()));
        if let Some(about) = sub.get_long_about().or(sub.get_about()) {
            text.push_str(&format!("{}\n", roff(&about.to_string())));
        }
        for arg in sub.get_arguments().filter(|a| !a.is_hide_set() && a.get_id() != "help") {
            let mut names: Vec<String> = Vec::new();
            if let Some(c) = arg.get_short() {
                names.push(format!("\\fB\\-{c}\\fR"));
            }
            if let Some(l) = arg.get_long() {
                names.push(format!("\\fB\\-\\-{}\\fR", roff(l)));
            }
            let value = arg.get_value_names().map(|v| v.iter().map(|n| format!("<{n}>")).collect::<Vec<_>>().join(" "));
            let head = match (names.is_empty(), value) {
                (true, Some(v)) => v,
                (false, Some(v)) if arg.get_num_args().is_none_or(|n| n.takes_values()) => {
                    format!("{} {v}", names.join(", "))
                }
                _ => names.join(", "),
            };
            text.push_str(&format!(".TP\n{head}\n"));
            if let Some(help) = arg.get_long_help().or(arg.get_help()) {
                text.push_str(&format!("{}\n", roff(&help.to_string())));
            }
        }
    }
    let mut tail = Vec::new();
    man.render_version_section(&mut tail)?;
    text.push_str(&String::from_utf8_lossy(&tail));
    Ok(text)
}

/// The budget of this run (alias expansions, bytes read), shared by every
/// input: the service files, the platform file and a snapshot.
fn run_budget() -> &'static crate::base::yaml::RunBudget {
    static RUN: std::sync::OnceLock<crate::base::yaml::RunBudget> = std::sync::OnceLock::new();
    RUN.get_or_init(crate::base::yaml::RunBudget::new)
}

/// Loads the inputs, reporting every problem of every one together. The
/// services are those of the files a selection picks of `selected`, if
/// given (those of some namespaces: [`Selection`]), else every input
/// path's. They are read after the platform file, as a full render reads
/// them, so the run's budgets run out on the same files.
fn load_inputs(inputs: &Inputs, selected: Option<(&mut Selection<'_>, &[InputFile])>) -> Result<Loaded, Diagnostics> {
    let platform = load::load_platform_in(inputs.platform.as_deref(), run_budget());
    let template_dir = template_dir(inputs, platform.as_ref().ok().map(|(p, _)| p));
    let templates = load_templates(template_dir.as_deref());
    let (services, kept) = match selected {
        Some((selection, files)) => (read_selected(selection, files, run_budget()), !selection.clean().is_empty()),
        None => (load::load_services_in(&inputs.paths, run_budget()), false),
    };
    let config = check::Config::with_disabled(&inputs.disable);
    let mut diags = Diagnostics::new();
    let platform = platform.map_err(|d| diags.extend(d)).ok();
    let templates = templates.map_err(|d| diags.extend(d)).ok();
    let services = services.map_err(|d| diags.extend(d)).ok();
    let config = config.map_err(|d| diags.extend(d)).ok();
    let (Some(platform), Some(templates), Some(services), Some(config)) = (platform, templates, services, config)
    else {
        diags.sort();
        return Err(diags);
    };
    let mut warnings = Diagnostics::new();
    if services.is_empty() && !kept {
        let paths: Vec<String> = inputs.paths.iter().map(|p| p.display().to_string()).collect();
        warnings.push(
            Diagnostic::warning(format!("no InferenceService found in {}", paths.join(", ")))
                .help("the output holds only the CRD; a render removes the objects of every service rendered before"),
        );
    }
    let platform_file = inputs.platform.as_ref().map(|p| p.display().to_string());
    let (platform, origin) = platform;
    Ok(Loaded {
        inputs: compiler::Inputs::new(services)
            .with_platform(platform, platform_file)
            .with_platform_origin(origin)
            .with_templates(templates),
        config,
        warnings,
    })
}

/// The directory of template overrides: `--templates`, else the platform
/// file's `templates` (relative to the platform file).
fn template_dir(inputs: &Inputs, platform: Option<&crate::model::platform::Platform>) -> Option<PathBuf> {
    inputs.templates.clone().or_else(|| {
        let dir = platform?.templates.as_ref()?;
        let base = inputs.platform.as_deref().and_then(Path::parent).unwrap_or(Path::new(""));
        Some(base.join(dir))
    })
}

/// What decides a render's output besides the services, as the manifest
/// records it: the platform file and the templates (by digest), the GitOps
/// engine and the disabled rules; and the platform file as it loaded (if it
/// did). Read before the inputs are loaded, so a file changed during the
/// run shows as changed the next time.
fn run_settings_and_platform(inputs: &Inputs, base: &Path) -> (Vec<String>, Option<crate::model::platform::Platform>) {
    use crate::load::files::read_regular;
    let base = absolute(base);
    let label = |p: &Path| slash(&relative_to(&absolute(p), &base));
    let mut settings = Vec::new();
    let platform = match &inputs.platform {
        None => {
            settings.push("platform none".to_string());
            None
        }
        Some(p) => match read_regular(p, load::MAX_FILE_BYTES, true) {
            Ok(bytes) => {
                settings.push(format!("platform {} {}", manifest::digest(&bytes), label(p)));
                load::load_platform(Some(p)).ok()
            }
            Err(_) => {
                settings.push("platform unreadable".to_string());
                None
            }
        },
    };
    match template_dir(inputs, platform.as_ref()) {
        None => settings.push("templates built-in".to_string()),
        Some(dir) => {
            settings.push(format!("templates {}", label(&dir)));
            match load::template_sources(&dir) {
                Ok(sources) => settings.extend(sources.iter().map(|s| {
                    let name = s.name.file_name().unwrap_or_default().to_string_lossy();
                    format!("template {} {name}", manifest::digest(s.text.as_bytes()))
                })),
                Err(_) => settings.push("templates unreadable".to_string()),
            }
        }
    }
    let engine = inputs.gitops.map(|e| format!("{e:?}").to_ascii_lowercase());
    settings.push(format!("gitops {}", engine.as_deref().unwrap_or("platform")));
    let disabled = check::Config::with_disabled(&inputs.disable).map(|c| c.disabled.into_iter().collect::<Vec<_>>());
    match disabled {
        Ok(ids) if ids.is_empty() => settings.push("disable none".to_string()),
        Ok(ids) => settings.push(format!("disable {}", ids.join(","))),
        Err(_) => settings.push("disable unknown".to_string()),
    }
    (settings, platform)
}

/// An input file as a survey read it.
struct InputFile {
    /// The path it is read by.
    path: PathBuf,
    /// The label output headers name it by.
    label: String,
    /// The digest of its bytes.
    digest: String,
    /// Its size in bytes.
    bytes: u64,
}

/// The input files found, each with its status, and the directories their
/// labels are made from: what [`input_digests`] reads.
struct InputStatus {
    cwd: PathBuf,
    base: PathBuf,
    files: Vec<(PathBuf, Option<std::fs::Metadata>)>,
}

/// Finds the input files and reads their status; `None` when the inputs
/// include standard input or cannot all be found (the compile then reports
/// why).
fn input_status(paths: &[PathBuf], base: &Path) -> Option<InputStatus> {
    if paths.iter().any(|p| p == Path::new("-")) {
        return None;
    }
    let cwd = std::env::current_dir().ok()?;
    let base = crate::load::files::absolute_in(&cwd, base);
    let files = load::input_files_with_status(paths).ok()?;
    Some(InputStatus { cwd, base, files })
}

/// Every input file's label (as output headers name it) and digest, read
/// now but where `cache` knows the file unchanged; `None` when one cannot
/// be read (the compile then reports why).
fn input_digests(found: &InputStatus, cache: &StatCache) -> Option<Vec<InputFile>> {
    use rayon::prelude::*;
    let InputStatus { cwd, base, files } = found;
    // Gathered as a list of a known length and checked after (in place):
    // rayon gathers an `Option` of a list in pieces grown one item at a
    // time, each step on fresh memory.
    // Each file with its absolute path and, where it was read, the status
    // to record its digest under (recorded together after).
    let read: Vec<Option<(InputFile, PathBuf, Option<stat::Stat>)>> = files
        .par_iter()
        .map(|(f, meta)| {
            let path = crate::load::files::absolute_in(cwd, f);
            // The status of the file the path leads to, read as the loader
            // reads it (through `f` itself, links followed: `absolute`
            // resolves `..` in the text, which a link can make another
            // file). A file replaced between the two is recorded under the
            // status of the one before, which no later file has.
            let status = meta.as_ref().and_then(stat::Stat::of);
            let (digest, learned) = match status.and_then(|s| cache.lookup(stat::Kind::Input, &path, s)) {
                Some(d) => (d, None),
                None => {
                    let bytes = crate::load::files::read_regular(f, load::MAX_FILE_BYTES, true).ok()?;
                    (manifest::digest(&bytes), status)
                }
            };
            let bytes = meta.as_ref().map_or(0, std::fs::Metadata::len);
            let label = slash(&relative_to(&path, base));
            Some((InputFile { label, digest, bytes, path: f.clone() }, path, learned))
        })
        .collect();
    let read: Vec<_> = read.into_iter().collect::<Option<_>>()?;
    cache.record_all(
        stat::Kind::Input,
        read.iter().filter_map(|(file, path, learned)| Some((path.as_path(), (*learned)?, file.digest.as_str()))),
    );
    Some(read.into_iter().map(|(file, _, _)| file).collect())
}

/// Where the cache of file status lives (`emit::stat`): `$ISVC_CACHE_DIR`
/// (empty turns it off), else `isvc` in `$XDG_CACHE_HOME` or in `~/.cache`.
fn stat_cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
    if let Some(dir) = var("ISVC_CACHE_DIR") {
        return (!dir.as_os_str().is_empty()).then_some(dir);
    }
    match var("XDG_CACHE_HOME").filter(|d| d.is_absolute()) {
        Some(dir) => Some(dir.join("isvc")),
        None => var("HOME").filter(|d| d.is_absolute()).map(|home| home.join(".cache").join("isvc")),
    }
}

/// The cache of file status of the output tree `out`.
fn stat_cache(out: &Path) -> StatCache {
    StatCache::open(stat_cache_dir().as_deref(), out)
}

/// What a run reads of an output tree and its inputs before it compiles:
/// the tree's manifest and cache of file status, and the digests of the
/// input files, each set once by [`Survey::read_while_compiling`], as it
/// is read.
#[derive(Default)]
struct Survey {
    cache: OnceLock<StatCache>,
    manifest: OnceLock<Option<Manifest>>,
    /// The input files; `None` for standard input or an input that cannot
    /// be read.
    inputs: OnceLock<Option<Vec<InputFile>>>,
}

/// How [`Survey::read_while_compiling`] reads the tree, when the manifest
/// records the settings.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Not at all.
    Skip,
    /// Without the lock (`--check`, `diff`).
    Scan,
    /// Under the lock, for writing: `out` is the checked output directory.
    Open,
}

/// The tree as walked, before its files are read.
enum Walk {
    Skipped,
    Scanned(output::Walked),
    Opened(output::Opening),
}

impl Walk {
    /// The tree's files read, but those `cache` knows unchanged.
    fn read(self, cache: &StatCache) -> Result<TreeRead, Diagnostics> {
        Ok(match self {
            Walk::Skipped => TreeRead { writer: None, scanned: None },
            Walk::Scanned(walked) => TreeRead { writer: None, scanned: walked.read(cache).ok() },
            Walk::Opened(opening) => TreeRead { writer: Some(opening.read(cache)?), scanned: None },
        })
    }
}

/// The tree as read: under the lock, for writing, or not.
struct TreeRead {
    writer: Option<output::Writer>,
    scanned: Option<output::Existing>,
}

impl TreeRead {
    /// The tree's contents, either way.
    fn existing(&self) -> Option<&output::Existing> {
        self.writer.as_ref().map(|w| &w.existing).or(self.scanned.as_ref())
    }

    /// Whether `recorded` (a manifest of this run's settings) lists the
    /// files isvc owns in the tree, unedited: the tree a render may keep
    /// namespaces of.
    fn described_by(&self, recorded: &Manifest) -> bool {
        self.existing().is_some_and(|e| recorded.matches_tree(e))
    }
}

impl Survey {
    /// The cache of file status (off, before it is loaded).
    fn cache(&self) -> &StatCache {
        self.cache.get_or_init(StatCache::off)
    }

    fn manifest(&self) -> Option<&Manifest> {
        self.manifest.get().and_then(Option::as_ref)
    }

    fn inputs(&self) -> Option<&[InputFile]> {
        self.inputs.get().and_then(Option::as_deref)
    }

    /// The manifest, when it records this run's settings and the tree is
    /// read (`reading`) from input files all found: whether it describes
    /// the tree is for [`TreeRead::described_by`] to tell.
    fn recorded(&self, settings: &[String], reading: Reading) -> Option<&Manifest> {
        let read = reading != Reading::Skip && self.inputs().is_some();
        self.manifest().filter(|m| read && m.settings == settings)
    }

    /// Whether `recorded` lists exactly this run's input files, by digest.
    /// With [`TreeRead::described_by`]: the tree is by its digests exactly what
    /// a render would write there, and no compile is needed.
    fn same_inputs(&self, recorded: &Manifest) -> bool {
        let Some(current) = self.inputs() else { return false };
        let current: Vec<(&str, &str)> = current.iter().map(|f| (f.label.as_str(), f.digest.as_str())).collect();
        !current.is_empty() && recorded.same_inputs(&current)
    }

    /// Reads the output tree `out` and the input files `paths` (labelled
    /// relative to `base`) and, on the chance that the manifest of this
    /// run's `settings` describes the tree (as it does unless the tree was
    /// edited by hand), compiles `inputs` where the manifest shows them
    /// changed: the namespaces [`select`] chooses (the input files are
    /// those recorded: nothing). Returns the manifest if it describes the
    /// tree, and then the compile (its warnings not shown yet), with the
    /// selection it read by.
    ///
    /// The cache of file status and the manifest are read first, side by
    /// side: the tree's files and the input files are looked up in the
    /// one, the tree and the selection are judged by the other. Then the
    /// rest runs in two parts side by side, each on every core the other
    /// leaves idle: the tree walked (for a render, under the lock it writes
    /// under) and its files read, but those the cache knows unchanged; and
    /// the input files found and their digests taken, and what changed
    /// compiled. (Where the compile waited for the walk, at 10,000
    /// services in 20 namespaces `diff` after one change took 1.06x the
    /// time; benches/README.md.)
    #[allow(clippy::too_many_arguments)]
    fn read_while_compiling<'s, T: Held>(
        &'s self,
        paths: &[PathBuf],
        out: &Path,
        base: &Path,
        settings: &[String],
        reading: Reading,
        inputs: &Inputs,
        platform: Option<&crate::model::platform::Platform>,
    ) -> Result<Surveyed<'s, T>, Diagnostics> {
        let text = Manifest::read_text(out);
        // The settings the manifest records, on its first lines, decide
        // whether the tree is walked.
        let recorded = text.as_deref().and_then(Manifest::settings_in);
        let reading = if recorded.is_some_and(|s| s == settings) { reading } else { Reading::Skip };
        // (The text goes once parsed.)
        let parse = move || text.as_deref().and_then(Manifest::parse);
        let (cache, manifest) = rayon::join(|| stat_cache(out), parse);
        let _ = self.cache.set(cache);
        let _ = self.manifest.set(manifest);
        let (tree, produced) = rayon::join(
            || {
                let walk = match reading {
                    Reading::Skip => Walk::Skipped,
                    Reading::Scan => output::walk_tree(out, false, self.cache()).map_or(Walk::Skipped, Walk::Scanned),
                    Reading::Open => output::Writer::lock_and_walk(out, self.cache()).map(Walk::Opened)?,
                };
                let tree = walk.read(self.cache())?;
                // (Of a manifest of this run's settings: whether the input
                // files were all found is for the other part to tell.)
                let described = self.manifest().is_some_and(|m| m.settings == settings && tree.described_by(m));
                Ok::<_, Diagnostics>((tree, described))
            },
            || {
                let found = input_status(paths, base);
                let _ = self.inputs.set(found.and_then(|found| input_digests(&found, self.cache())));
                let recorded = self.recorded(settings, reading);
                let same = recorded.is_some_and(|m| self.same_inputs(m));
                // The manifest, if there is something to compile by it.
                let changed = recorded.filter(|_| !same);
                let files = self.inputs().unwrap_or_default();
                let mut selection = changed.and_then(|m| select(inputs, platform, m, files));
                let compiled = changed
                    .map(|m| compile_unshown::<T>(inputs, base, None, Namespaces::of(&mut selection, files, Some(m))));
                (same, compiled, selection)
            },
        );
        let (tree, described) = tree?;
        let (same, compiled, selection) = produced;
        let described = self.recorded(settings, reading).filter(|_| described);
        // A compile of a tree the manifest does not describe is set aside:
        // its errors too, which a full compile reports.
        let compiled = match (described, compiled) {
            (Some(_), Some(compiled)) => Some(compiled?),
            _ => None,
        };
        let selection = selection.filter(|_| described.is_some());
        Ok(Surveyed { tree, described, same, compiled, selection })
    }
}

/// What [`Survey::read_while_compiling`] found.
struct Surveyed<'s, T> {
    tree: TreeRead,
    /// The manifest, if it records this run's settings and describes the
    /// tree.
    described: Option<&'s Manifest>,
    /// Whether the manifest lists this run's input files, unchanged.
    same: bool,
    /// The compile of what the manifest shows changed, if it describes the
    /// tree and the inputs changed.
    compiled: Option<Compiled<T>>,
    selection: Option<Selection<'s>>,
}

/// Names the platform file relative to `base`, as output headers show it.
fn platform_label(inputs: &Inputs, base: &Path) -> Option<String> {
    let base = absolute(base);
    inputs.platform.as_ref().map(|p| slash(&relative_to(&absolute(p), &base)))
}

/// Names input files relative to `base`, as output headers show them.
fn labeller(base: &Path) -> impl Fn(&LoadedService) -> String + Sync + use<> {
    let base = absolute(base);
    // Read once: each read of the working directory is a system call.
    let cwd = std::env::current_dir().unwrap_or_default();
    move |s: &LoadedService| {
        if s.source.name == Path::new(load::STDIN) {
            return "-".to_string();
        }
        slash(&relative_to(&load::files::absolute_in(&cwd, &s.source.name), &base))
    }
}

/// Loads inputs and compiles them; `base` is the directory the output
/// headers name input files relative to.
fn compile<T: Held>(inputs: &Inputs, base: &Path) -> Result<(Compilation<T>, Vec<LoadedService>), Diagnostics> {
    compile_for(inputs, base, None, Namespaces::Unrecorded).map(|(c, s, _)| (c, s))
}

/// [`compile`], for a command that works on one cluster's objects (`what`
/// names it): a platform with several clusters needs `--cluster`.
fn compile_one_cluster<T: Held>(
    inputs: &Inputs,
    base: &Path,
    what: &str,
) -> Result<(Compilation<T>, Vec<LoadedService>), Diagnostics> {
    compile_for(inputs, base, Some(what), Namespaces::Unrecorded).map(|(c, s, _)| (c, s))
}

/// What a compile does with each namespace's digest, for a tree's manifest.
enum Namespaces<'m, 's> {
    /// Nothing: no tree is written.
    Unrecorded,
    /// Works them out for the manifest; with the manifest of a tree it
    /// describes unedited, the namespaces whose services it records
    /// unchanged are not compiled again ([`Compilation::reused`]).
    Recorded(Option<&'m Manifest>),
    /// With the manifest of a tree it describes unedited: the services of
    /// the namespaces a change touched, read, and the digests of the other
    /// recorded namespaces, kept without their files being read
    /// ([`Selection`]).
    Selected(&'s mut Selection<'m>, &'s [InputFile]),
}

/// A compilation, the services it was compiled from, and each namespace's
/// digest (empty unless [`Namespaces::Recorded`]).
type Compiled<T> = (Compilation<T>, Vec<LoadedService>, BTreeMap<String, String>);

impl<'m, 's> Namespaces<'m, 's> {
    /// The files `selection` chooses of `files`, or, without one, every
    /// file, with the namespaces `recorded` records unchanged kept.
    fn of(selection: &'s mut Option<Selection<'m>>, files: &'s [InputFile], recorded: Option<&'m Manifest>) -> Self {
        match selection {
            Some(s) => Namespaces::Selected(s, files),
            None => Namespaces::Recorded(recorded),
        }
    }
}

/// [`compile`], with what `namespaces` asks for; its warnings shown.
fn compile_for<T: Held>(
    inputs: &Inputs,
    base: &Path,
    one_cluster: Option<&str>,
    namespaces: Namespaces<'_, '_>,
) -> Result<Compiled<T>, Diagnostics> {
    let compiled = compile_unshown(inputs, base, one_cluster, namespaces)?;
    show_warnings(&compiled.0);
    Ok(compiled)
}

/// Shows what a compilation warns of.
fn show_warnings<T>(compiled: &Compilation<T>) {
    if !compiled.warnings.is_empty() {
        eprint_diagnostics(&compiled.warnings);
    }
}

/// [`compile_for`], its warnings (the load's first) left in the
/// compilation, or put before the errors, for the caller to show: a
/// compile whose result may be set aside shows nothing.
fn compile_unshown<T: Held>(
    inputs: &Inputs,
    base: &Path,
    one_cluster: Option<&str>,
    namespaces: Namespaces<'_, '_>,
) -> Result<Compiled<T>, Diagnostics> {
    let (mut selected, recorded, record) = match namespaces {
        Namespaces::Unrecorded => (None, None, false),
        Namespaces::Recorded(recorded) => (None, recorded, true),
        Namespaces::Selected(selection, files) => {
            let recorded = selection.manifest();
            (Some((selection, files)), Some(recorded), true)
        }
    };
    let mut i = load_inputs(inputs, selected.as_mut().map(|(s, files)| (&mut **s, *files)))?;
    let warned = |errors: Diagnostics| {
        let mut all = i.warnings.clone();
        all.extend(errors);
        all
    };
    // The input files read that are unchanged since the tree was rendered
    // (those of the namespaces a change touches): their services' files
    // are the tree's (`Options::keep_files_of`).
    let unchanged: BTreeSet<String> = selected
        .as_ref()
        .map(|(s, _)| s.read().filter(|label| s.recorded(label).is_some()).map(str::to_string).collect())
        .unwrap_or_default();
    // The namespaces kept unread, with their recorded digests.
    let clean = selected.map(|(s, _)| s.clean()).unwrap_or_default();
    let clusters: Vec<&str> = i.inputs.platform.clusters.iter().map(|c| c.name.as_str()).collect();
    if let (Some(what), None, true) = (one_cluster, &inputs.cluster, clusters.len() > 1) {
        return Err(warned(
            Diagnostic::error(format!(
                "{what} works on one cluster, and the platform file lists {}: {}",
                clusters.len(),
                clusters.join(", ")
            ))
            .help(format!("name one with --cluster {}", clusters[0]))
            .into(),
        ));
    }
    i.inputs.platform_file = platform_label(inputs, base);
    let options = Options::default()
        .rules(i.config)
        .engine(inputs.gitops.map(Into::into))
        .cluster(inputs.cluster.clone())
        .label(labeller(base));
    let mut digests = BTreeMap::new();
    if record {
        digests = Compiler::new(&i.inputs, Options::default().label(labeller(base))).namespace_digests();
        // The namespaces kept: their services were not read.
        digests.extend(clean);
    }
    let records = recorded.map(Manifest::namespace_records).unwrap_or_default();
    let reuse: BTreeSet<String> = digests
        .iter()
        .filter(|(ns, d)| records.get(ns.as_str()).is_some_and(|r| r.0 == d.as_str()))
        .map(|(ns, _)| ns.clone())
        .collect();
    // What the GitOps engine's objects read of the namespaces kept.
    let facts = recorded.map(Manifest::recorded_namespaces).unwrap_or_default();
    let options = options.reuse(reuse).keep_files_of(unchanged).recorded(facts);
    let mut compiled = Compiler::new(&i.inputs, options).compile_held().map_err(warned)?;
    if !i.warnings.is_empty() {
        compiled.warnings = warned(std::mem::take(&mut compiled.warnings));
    }
    Ok((compiled, i.inputs.services, digests))
}

fn load_templates(dir: Option<&Path>) -> Result<Templates, Diagnostics> {
    let Some(dir) = dir else {
        return Ok(Templates::builtin());
    };
    Templates::new(load::template_sources(dir)?).map_err(Diagnostics)
}

/// The directory output headers name input files relative to: the one
/// isvc runs in, never the output directory, so the bytes of an object do
/// not depend on where the output lives (a tree rendered elsewhere and
/// compared with `diff` shows only real changes).
fn header_base() -> PathBuf {
    absolute(Path::new("."))
}

/// The line `render --out` ends with: what it rendered from where, and
/// what it changed in the tree.
fn rendered_summary(objects: usize, inputs: &[PathBuf], out: &Path, files: usize, changes: &output::Changes) -> String {
    format!(
        "rendered {objects} objects from {} into {} ({files} files): {}",
        inputs_label(inputs),
        out.display(),
        changes.summary()
    )
}

fn render(args: RenderArgs) -> Result<ExitCode, Diagnostics> {
    if let (Some(name), Some(_)) = (&args.inputs.cluster, &args.out) {
        return Err(Diagnostic::error(format!(
            "--cluster {name} goes with --stdout: `render --out` writes every cluster's tree"
        ))
        .help("leave --cluster out, or use --stdout to print one cluster's objects")
        .into());
    }
    if !args.kind.is_empty() && args.out.is_some() {
        return Err(Diagnostic::error("--kind goes with --stdout: `render --out` writes every object")
            .help("use `render --stdout --kind KIND` to print objects of some kinds")
            .into());
    }
    let kinds = kind_filter(&args.kind)?;
    let Some(out) = args.out else {
        // Every object is rendered and checked before the stream is
        // printed: nothing can fail then but the writing, which `main`
        // turns into a non-zero exit.
        const WHAT: &str = "render --stdout";
        if kinds.is_empty() {
            let (compiled, services) = compile_one_cluster::<Streamed>(&args.inputs, &header_base(), WHAT)?;
            std::mem::forget(services);
            let Some(stream) = objects::Stream::of(&compiled.objects) else {
                return Err(Diagnostic::error("internal error: render --stdout holds objects out of their order")
                    .help("nothing was printed; please report this, and use `render --out DIR` meanwhile")
                    .into());
            };
            print_stream(|out| stream.write(out));
            std::mem::forget(compiled.objects);
            return Ok(ExitCode::SUCCESS);
        }
        let (compiled, services) = compile_one_cluster::<Written>(&args.inputs, &header_base(), WHAT)?;
        std::mem::forget(services);
        let mut objects = compiled.objects;
        let rendered = objects.len();
        objects.retain(|o| kinds.contains(&o.object.id.kind.as_str()));
        if objects.is_empty() {
            eprint_diagnostics(&Diagnostics::from(Diagnostic::warning(format!(
                "--kind {}: none of the {rendered} objects rendered is of that kind",
                kinds.join(",")
            ))));
        }
        print_stream(|out| write_stream(&objects, out));
        std::mem::forget(objects);
        return Ok(ExitCode::SUCCESS);
    };
    // Read before the inputs are loaded, once for the shortcut and the
    // manifest this run writes.
    let (mut settings, platform) = run_settings_and_platform(&args.inputs, &header_base());
    // A render of a tree the manifest shows up to date writes nothing, so it
    // answers as `--check` does (and prints the quota table the manifest
    // records). A render of a tree a manifest of these settings describes,
    // unedited, keeps the files of the namespaces whose services are
    // unchanged; it reads the tree once, under the lock it writes under.
    // A render waits here for another render into the same place, as it
    // would to write; not while it reads standard input, which is never up
    // to date.
    // With `--full`, the tree is read as if the manifest recorded other
    // settings: nothing is taken from it, every namespace is compiled.
    let stdin = args.inputs.paths.iter().any(|p| p == Path::new("-"));
    let reading = match (args.full, args.check, stdin) {
        (true, _, _) => Reading::Skip,
        (false, true, _) => Reading::Scan,
        (false, false, false) => Reading::Open,
        (false, false, true) => Reading::Skip,
    };
    let tree = if reading == Reading::Open { output::output_dir(&out, &args.inputs.paths)? } else { out.clone() };
    let survey = Survey::default();
    // Over a tree the manifest describes, only the input files of the
    // namespaces a change touches are read, where every other namespace's
    // objects can be kept. They are compiled while the tree is read.
    let surveyed = survey.read_while_compiling::<Written>(
        &args.inputs.paths,
        &tree,
        &header_base(),
        &settings,
        reading,
        &args.inputs,
        platform.as_ref(),
    )?;
    let Surveyed { tree: read, described, same, compiled, selection } = surveyed;
    if let Some(recorded) = described.filter(|_| same) {
        survey.cache().save();
        // The manifest and every file it lists.
        let files = recorded.outputs.len() + 1;
        if args.check {
            status(&format!("{} is up to date ({files} files)", out.display()));
        } else {
            say_quota(&recorded.quota);
            let unchanged = output::Changes { unchanged: files, ..Default::default() };
            status(&rendered_summary(recorded.objects, &args.inputs.paths, &out, files, &unchanged));
        }
        // The run ends here: the tree's listing, the manifest and the cache
        // are not freed entry by entry (tens of thousands of paths) but
        // with the process; so is the lock, which the system releases when
        // the process exits.
        std::mem::forget(read);
        std::mem::forget(survey);
        return Ok(ExitCode::SUCCESS);
    }
    let files = survey.inputs().unwrap_or_default();
    let existing = read.existing();
    // A tree the manifest does not describe (or inputs it cannot record)
    // is compiled whole.
    let compiled = match compiled {
        Some(compiled) => compiled,
        None => compile_unshown::<Written>(&args.inputs, &header_base(), None, Namespaces::Recorded(None))?,
    };
    show_warnings(&compiled.0);
    let (mut compiled, services, digests) = compiled;
    say_read(selection.as_ref(), files, &compiled.reused);
    // Without any service, a render warns.
    let no_services = digests.is_empty();
    // The objects of each namespace compiled, to which those of the files
    // kept are added.
    let mut counts = object_counts(&compiled);
    let objects = std::mem::take(&mut compiled.objects);
    let made = objects.len();
    // The files of the namespaces kept gathered and the tree planned, while
    // what the input files declare is gathered for the manifest.
    let clusters = &compiled.clusters;
    let plan = || {
        let mut kept = existing.map(|e| e.kept(compiled.reused.clone(), clusters)).unwrap_or_default();
        // The files of the services of unchanged files in the namespaces
        // compiled again (only over a tree its manifest describes, read).
        if !compiled.kept_services.is_empty() {
            let Some(existing) = existing else {
                return Err(Diagnostics::from(Diagnostic::error(
                    "internal error: services kept from a tree that was not read",
                )));
            };
            existing.keep_services(&mut kept, &compiled.kept_services, clusters);
        }
        for (at, n) in &kept.objects {
            *counts.entry(at.clone()).or_default() += n;
        }
        let reused: usize = counts.iter().filter(|((_, ns), _)| compiled.reused.contains(ns)).map(|(_, n)| n).sum();
        let rendered = made + kept.service_objects() + reused;
        // Each namespace's objects, in every cluster's tree together.
        let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
        for ((_, ns), n) in &counts {
            *totals.entry(ns).or_default() += n;
        }
        let namespaces: Vec<(String, String, usize)> = digests
            .into_iter()
            .map(|(ns, d)| {
                let objects = totals.get(ns.as_str()).copied().unwrap_or_default();
                (ns, d, objects)
            })
            .collect();
        let per_cluster: Vec<(String, String, usize)> =
            counts.iter().filter_map(|((c, ns), n)| Some((c.clone()?, ns.clone(), *n))).collect();
        Ok((rendered, namespaces, per_cluster, output::written_tree(objects, kept)))
    };
    let ((inputs, routes), planned) = rayon::join(|| declared(files, &services, selection.as_ref()), plan);
    let (rendered, namespaces, per_cluster, mut tree) = planned?;
    if survey.inputs().is_none() {
        // Standard input, or an input that changed while it was read: the
        // manifest never takes this tree for up to date.
        settings.push("inputs unrecorded".to_string());
    }
    if !compiled.warnings.is_empty() || no_services {
        // A run that warns compiles every time, so the warnings are shown.
        settings.push("warnings".to_string());
    }
    // The quota table: the compiled namespaces' rows, and the recorded
    // ones of the namespaces kept.
    let mut quota = compiled.quota;
    if let Some(kept) = described {
        quota.extend(kept.quota_of(&compiled.reused).cloned());
    }
    let recorded = Manifest::new(settings, inputs, rendered, namespaces, routes, &tree)
        .with_quota(quota)
        .with_clusters(per_cluster)
        .with_autoscaled(std::mem::take(&mut compiled.autoscaled));
    tree.insert(PathBuf::from(MANIFEST).into(), output::Contents::text(recorded.to_text()));
    if args.check {
        let existing = match read.scanned {
            Some(existing) => existing,
            None => output::scan(&out, survey.cache())?,
        };
        survey.cache().save();
        let changes = output::changes(&tree, &existing);
        if changes.is_empty() {
            status(&format!("{} is up to date ({} files)", out.display(), changes.unchanged));
            return Ok(ExitCode::SUCCESS);
        }
        let mut text = String::new();
        for (label, paths) in [("stale", &changes.update), ("missing", &changes.create), ("extra", &changes.delete)] {
            for p in paths {
                text.push_str(&format!("{label}: {}\n", out.join(p).display()));
            }
        }
        print(&text);
        status(&format!(
            "{} is out of date: {} stale, {} missing, {} extra; run `isvc render` to update it",
            out.display(),
            changes.update.len(),
            changes.create.len(),
            changes.delete.len()
        ));
        return Ok(ExitCode::from(1));
    }
    let changes = match &read.writer {
        // Opened before the compile: the tree is checked again for entries
        // that appeared or went since.
        Some(writer) => writer.write(&tree, survey.cache())?,
        None => output::write(&output::output_dir(&out, &args.inputs.paths)?, &tree, survey.cache())?,
    };
    survey.cache().save();
    if verbosity() >= 2 {
        for (label, paths) in [("created", &changes.create), ("updated", &changes.update), ("deleted", &changes.delete)]
        {
            for p in paths {
                status(&format!("{label} {}", out.join(p).display()));
            }
        }
    }
    say_quota(&recorded.quota);
    status(&rendered_summary(rendered, &args.inputs.paths, &out, tree.len(), &changes));
    // The process ends here; freeing tens of thousands of files one by one
    // (the tree written, the tree found, the cache's entries) would only
    // delay the exit. The lock goes with the process.
    std::mem::forget(tree);
    std::mem::forget(read);
    std::mem::forget(survey);
    Ok(ExitCode::SUCCESS)
}

/// The namespaces a render compiles whatever changed (those of the tenants
/// with Kueue queues: a cohort's tenants are compiled together), when it
/// may read only the input files of the namespaces a change touches; `None`
/// when it may not: where a cluster names the services it runs, each of
/// which must be among the services a compile is given (the compile's
/// check of the names, `compiler::clusters::unknown_services`, would miss
/// the services of the namespaces kept unread).
fn always_compiled(inputs: &Inputs, platform: Option<&crate::model::platform::Platform>) -> Option<BTreeSet<String>> {
    let Some(platform) = platform else {
        // No platform file, or one that does not load (the compile says why).
        return (inputs.platform.is_none() && inputs.gitops.is_none()).then(BTreeSet::new);
    };
    let names_services = platform.clusters.iter().any(|c| !c.services.is_empty());
    (!names_services).then(|| compiler::cohort_namespaces(platform).into_keys().collect())
}

/// Reads the input files `selection` chooses of `files`, batch by batch,
/// and the services they declare. Every unchanged file counts against the
/// run's budgets as it did when it was read (its bytes, and the nodes its
/// aliases expanded to, as recorded), a file read taking its own share
/// instead: the budgets run out exactly where a render reading every file
/// runs out, with the same error.
fn read_selected(
    selection: &mut Selection<'_>,
    files: &[InputFile],
    run: &crate::base::yaml::RunBudget,
) -> Result<Vec<LoadedService>, Diagnostics> {
    // By hash, as `Selection::new` looks labels up.
    let by_label: foldhash::HashMap<&str, &InputFile> = files.iter().map(|f| (f.label.as_str(), f)).collect();
    // What every unchanged file took of the budgets when it was read,
    // charged up front (they fit, with the same platform file, when the
    // tree was rendered): those read give theirs back before they are read.
    let charge = |label: &str, recorded: &manifest::Input| Some((by_label.get(label)?.bytes, recorded.aliases));
    let share = |selection: &Selection<'_>, label: &str| charge(label, selection.recorded(label)?);
    let (bytes, aliases) = selection
        .unchanged()
        .filter_map(|(label, recorded)| charge(label, recorded))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    // Within the budgets: see above.
    let _ = (run.take_bytes(bytes), run.take_alias_nodes(aliases));
    let mut services = Vec::new();
    let mut diags = Diagnostics::new();
    loop {
        let labels = selection.batch();
        if labels.is_empty() {
            break;
        }
        for (bytes, aliases) in labels.iter().filter_map(|l| share(selection, l)) {
            run.give_back(bytes, aliases);
        }
        let batch: Vec<&Path> = labels.iter().filter_map(|l| by_label.get(l)).map(|f| f.path.as_path()).collect();
        let (read, d) = load::read_services_in(&batch, run);
        selection.declared(
            read.iter().map(|s| s.service.namespace_or_default()),
            read.iter().filter_map(LoadedService::claimed_route),
        );
        services.extend(read);
        diags.extend(d);
    }
    load::finish_services(services, diags)
}

/// What the manifest records of what the input files declare: each file
/// with the namespaces of its services, and the routes each namespace's
/// services claim. Of a file left unread (`selection`), as recorded.
fn declared(
    files: &[InputFile],
    services: &[LoadedService],
    selection: Option<&Selection<'_>>,
) -> (Vec<manifest::Input>, Vec<(String, String)>) {
    let label = labeller(&header_base());
    // Each file's namespaces, and its aliases' expansions.
    let mut of_file: BTreeMap<String, (BTreeSet<&str>, usize)> = BTreeMap::new();
    let mut routes: Vec<(String, String)> = Vec::new();
    for s in services {
        let namespace = s.service.namespace_or_default();
        let file = of_file.entry(label(s)).or_default();
        file.0.insert(namespace);
        file.1 = s.alias_nodes;
        if let Some(route) = s.claimed_route() {
            routes.push((namespace.to_string(), route));
        }
    }
    if let Some(selection) = selection {
        routes.extend(selection.clean_routes().cloned());
    }
    let inputs = files
        .iter()
        .map(|f| {
            let (namespaces, aliases) = match (selection.and_then(|s| s.unread(&f.label)), of_file.get(&f.label)) {
                (Some(recorded), _) => (recorded.namespaces.clone(), recorded.aliases),
                (None, Some((namespaces, aliases))) => (namespaces.iter().map(|n| n.to_string()).collect(), *aliases),
                (None, None) => (Vec::new(), 0),
            };
            manifest::Input { label: f.label.clone(), digest: f.digest.clone(), aliases, namespaces }
        })
        .collect();
    (inputs, routes)
}

/// How many objects of each namespace `compiled` made (those of the
/// files kept are counted in the tree, not taken from the manifest).
fn object_counts(compiled: &Compilation<Written>) -> BTreeMap<(Option<String>, String), usize> {
    let mut counts = BTreeMap::new();
    for o in compiled.objects.iter().filter(|w| !w.object.bootstrap) {
        if let Some(ns) = &o.object.id.namespace {
            *counts.entry((o.object.cluster.clone(), ns.clone())).or_default() += 1;
        }
    }
    counts
}

/// The input files of the namespaces a change touches, over the tree the
/// manifest `recorded` describes, when a compile may read only those
/// ([`always_compiled`], [`Selection::new`]).
fn select<'m>(
    inputs: &Inputs,
    platform: Option<&crate::model::platform::Platform>,
    recorded: &'m Manifest,
    files: &'m [InputFile],
) -> Option<Selection<'m>> {
    let always = always_compiled(inputs, platform)?;
    Selection::new(recorded, files.iter().map(|f| (f.label.as_str(), f.digest.as_str())), always)
}

/// Says, with `-v`, how many of the input `files` a compile of the
/// namespaces a change touches read (`selection`), and how many namespaces
/// it kept.
fn say_read(selection: Option<&Selection<'_>>, files: &[InputFile], reused: &BTreeSet<String>) {
    if verbosity() < 2 {
        return;
    }
    // Without a selection (a cluster names the services it runs), every
    // file was read, and the namespaces unchanged may still be kept.
    let read = match selection {
        Some(s) => s.read().count(),
        None if !reused.is_empty() => files.len(),
        None => return,
    };
    status(&format!("read {read} of {} input files; {} namespaces unchanged", files.len(), reused.len()));
}

/// Prints the quota table of `rows`, if any.
fn say_quota(rows: &[crate::compiler::admission::QuotaUsage]) {
    if !rows.is_empty() {
        status(crate::report::quota::format_quota_table(rows).trim_end());
    }
}

/// Whether the tree's file `path` lies in the directory of one of
/// `namespaces`, or in that of one of `services` (by namespace:
/// `<namespace>/<name>/...`), in the tree's root or, with `clusters`, in
/// one of theirs (`<cluster>/<namespace>/...`): a file a compile of the
/// other namespaces and services keeps. `Some` for a file kept, with
/// whether it holds an object (it lies below the namespace's own
/// directory). Its names are read from its bytes where it is plain, as a
/// walk's paths are (29,000 of them at 10,000 services), else from its
/// components.
fn kept_file(
    path: &crate::base::paths::TreePath,
    namespaces: &BTreeSet<String>,
    services: &BTreeMap<String, BTreeSet<String>>,
    clusters: &[String],
) -> Option<bool> {
    use std::borrow::Cow;
    // The names of `path`, one by one (none collected: this runs for every
    // file of the tree).
    fn kept_names<'a>(
        mut names: impl Iterator<Item = Cow<'a, str>>,
        namespaces: &BTreeSet<String>,
        services: &BTreeMap<String, BTreeSet<String>>,
        clusters: &[String],
    ) -> Option<bool> {
        if !clusters.is_empty() {
            let cluster = names.next()?;
            if !clusters.iter().any(|c| *c == cluster) {
                return None;
            }
        }
        let (ns, name, deeper) = (names.next()?, names.next(), names.next().is_some());
        if namespaces.contains(&*ns) {
            return Some(deeper);
        }
        let service = name.is_some_and(|name| services.get(&*ns).is_some_and(|names| names.contains(&*name)));
        (deeper && service).then_some(true)
    }
    match path.plain_bytes().and_then(|b| std::str::from_utf8(b).ok()) {
        Some(text) => kept_names(text.split('/').map(Cow::Borrowed), namespaces, services, clusters),
        None => kept_names(path.iter().map(|n| n.to_string_lossy()), namespaces, services, clusters),
    }
}

/// The input paths as the render summary names them: as given, `-` as
/// standard input, and past three paths (a shell glob) a count.
fn inputs_label(paths: &[PathBuf]) -> String {
    let name = |p: &PathBuf| if p.as_os_str() == "-" { "standard input".to_string() } else { p.display().to_string() };
    match paths {
        [] => String::new(),
        [one] => name(one),
        [first @ .., last] if paths.len() <= 3 => {
            format!("{} and {}", first.iter().map(name).collect::<Vec<_>>().join(", "), name(last))
        }
        [a, b, rest @ ..] => format!("{}, {} and {} more paths", name(a), name(b), rest.len()),
    }
}

/// The kinds `render --kind` names, as the kinds table spells them: a name
/// in another case is accepted, a typo gets the closest kind as help.
fn kind_filter(names: &[String]) -> Result<Vec<&'static str>, Diagnostics> {
    let mut kinds = Vec::new();
    for name in names.iter().map(|n| n.trim()) {
        let Some(kind) = crate::model::kinds::KINDS.iter().find(|k| k.kind.eq_ignore_ascii_case(name)) else {
            let all = crate::model::kinds::KINDS.iter().map(|k| k.kind);
            let help = match crate::base::diagnostics::did_you_mean(name, all.clone()) {
                Some(m) => format!("did you mean \"{m}\"?"),
                None => format!("isvc renders {}", all.collect::<Vec<_>>().join(", ")),
            };
            return Err(Diagnostic::error(format!("--kind {name:?}: isvc renders no such kind")).help(help).into());
        };
        if !kinds.contains(&kind.kind) {
            kinds.push(kind.kind);
        }
    }
    Ok(kinds)
}

fn diff_cmd(args: DiffArgs) -> Result<ExitCode, Diagnostics> {
    let partial = match (&args.inputs.cluster, args.full) {
        (None, false) => diff_over_manifest(&args)?,
        _ => None,
    };
    let report = match partial {
        Some(report) => report,
        None => {
            let (compiled, _) = compile::<Written>(&args.inputs, &header_base())?;
            let mut existing = output::scan_texts(&args.out)?;
            if let Some(name) = &args.inputs.cluster {
                // One cluster's objects against that cluster's tree alone.
                existing.ours.retain(|path, _| path.starts_with(name));
            }
            let report = diff::diff(&compiled.objects, &existing)?;
            // The compile and the tree go with the process, as in `render`.
            std::mem::forget((compiled, existing));
            report
        }
    };
    print(&match args.format {
        DiffFormat::Text => crate::report::diff::to_text(&report, true),
        DiffFormat::Markdown => crate::report::diff::to_markdown(&report, args.max_chars),
        DiffFormat::Json => crate::report::diff::to_json(&report),
    });
    Ok(if report.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `diff`'s report for a tree its manifest describes unedited (with this
/// run's settings); `None` for any other tree, and for inputs that are not
/// all files read (standard input, a file that cannot be read), which a
/// full compile reports on. When the input files are
/// those recorded, from the manifest alone. Else only the namespaces a
/// change touches are compiled, and compared with their files, as a render
/// compiles and writes them: every other namespace's inputs and files are
/// those recorded, so a full compile would find its objects unchanged, and
/// they are counted so (`a_partial_diff_reports_what_a_full_diff_reports`
/// in `tests/it/manifest.rs`). A pull request that changes one service of
/// thousands compiles and reads one namespace, not the fleet.
fn diff_over_manifest(args: &DiffArgs) -> Result<Option<diff::Report>, Diagnostics> {
    let (settings, platform) = run_settings_and_platform(&args.inputs, &header_base());
    let survey = Survey::default();
    let surveyed = survey.read_while_compiling::<Written>(
        &args.inputs.paths,
        &args.out,
        &header_base(),
        &settings,
        Reading::Scan,
        &args.inputs,
        platform.as_ref(),
    )?;
    survey.cache().save();
    let Surveyed { tree: read, described, same, compiled, selection, .. } = surveyed;
    let Some(recorded) = described else { return Ok(None) };
    let report = if same {
        diff::Report { objects: Vec::new(), unchanged: recorded.objects }
    } else {
        let (Some(files), Some(existing), Some((compiled, _, _))) = (survey.inputs(), read.scanned.as_ref(), compiled)
        else {
            return Ok(None);
        };
        show_warnings(&compiled);
        say_read(selection.as_ref(), files, &compiled.reused);
        let kept = |p: &crate::base::paths::TreePath| {
            kept_file(p, &compiled.reused, &compiled.kept_services, &compiled.clusters)
        };
        let unchanged = existing.ours.keys().filter(|p| kept(p) == Some(true)).count();
        let mut report = diff::diff_in_tree(&compiled.objects, existing, &args.out, |p| kept(p).is_none())?;
        report.unchanged += unchanged;
        std::mem::forget(compiled);
        report
    };
    std::mem::forget(read);
    // The run ends with the report: the tree's listing, the manifest and
    // the cache go with the process, as in `render`, not entry by entry.
    std::mem::forget(survey);
    Ok(Some(report))
}

fn check_cmd(args: CheckArgs) -> Result<ExitCode, Diagnostics> {
    if let Some(id) = &args.explain {
        let rule = check::rule(id).ok_or_else(|| check::unknown_rule(id))?;
        print(&rule.long_text());
        return Ok(ExitCode::SUCCESS);
    }
    let mut i = load_inputs(&args.inputs, None)?;
    if !i.warnings.is_empty() {
        eprint_diagnostics(&i.warnings);
    }
    i.inputs.platform_file = platform_label(&args.inputs, &header_base());
    let options =
        Options::default().rules(i.config).cluster(args.inputs.cluster.clone()).label(labeller(&header_base()));
    // The objects are counted, not read: each group's values are freed
    // once checked (at 10,000 services the peak fell from 420 to 92 MiB).
    let examination = Compiler::new(&i.inputs, options).examine_held::<objects::Examined>()?;
    let (examined, findings) = (examination.objects.len(), examination.findings);
    let problems = Diagnostics(check::annotation_problems(&i.inputs.services));
    if !problems.is_empty() {
        eprint_diagnostics(&problems);
    }
    match args.format {
        CheckFormat::Text => print(&report::to_text(&findings, examined, true)),
        CheckFormat::Json => print_plain(&report::to_json(&findings, examined)),
        CheckFormat::Sarif => {
            let platform = args.inputs.platform.as_ref().map(|p| p.display().to_string());
            print_plain(&sarif::to_sarif(&findings, platform.as_deref()));
        }
    }
    let (errors, warnings) = report::counts(&findings);
    // The inputs and the findings go with the process, as in `render`.
    std::mem::forget((i.inputs, findings, examination.objects));
    Ok(if errors > 0 || (args.strict && warnings > 0) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Compiles the inputs and reads the snapshot, reporting the problems of both.
fn reconcile(
    args: &LiveArgs,
) -> Result<(Compilation, Vec<LoadedService>, Vec<serde_json::Value>, plan::Plan), Diagnostics> {
    // A snapshot is one cluster's: plan against that cluster's objects.
    // It is read on a thread of its own while the services compile: its
    // parse runs on one core (a `kubectl get -o yaml` snapshot is one List
    // document; 1.3 s for 55 MB at 10,000 services), the compile on every
    // core. Both count against the one budget of the run, as the service
    // files read at once already do.
    let (compiled, live) = std::thread::scope(|scope| {
        let live = scope.spawn(|| plan::read_snapshot_in(&args.live, run_budget()));
        let compiled = compile_one_cluster::<Object>(&args.inputs, &header_base(), "plan or status against a snapshot");
        (compiled, live.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    });
    let (compiled, live) = match (compiled, live) {
        (Ok(c), Ok(l)) => (c, l),
        (c, l) => {
            let mut diags = Diagnostics::new();
            diags.extend(c.err().into_iter().flatten());
            diags.extend(l.err().into_iter().flatten());
            return Err(diags);
        }
    };
    let (compiled, services) = compiled;
    let plan = plan::plan(&compiled.objects, &live);
    Ok((compiled, services, live, plan))
}

fn plan_cmd(args: LiveArgs) -> Result<ExitCode, Diagnostics> {
    let (compiled, services, live, plan) = reconcile(&args)?;
    // The compile and the snapshot go with the process, not value by value
    // (0.6 s on one core at 10,000 services).
    std::mem::forget((compiled, services, live));
    match args.format {
        LiveFormat::Text => print(&crate::report::plan::to_text(&plan, true)),
        LiveFormat::Json => print_plain(&crate::report::plan::to_json(&plan)),
    }
    Ok(if plan.is_converged() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn status_cmd(args: LiveArgs) -> Result<ExitCode, Diagnostics> {
    let (compiled, loaded, live, plan) = reconcile(&args)?;
    let services: Vec<&crate::model::v1alpha2::InferenceService> = loaded.iter().map(|s| &s.service).collect();
    let statuses = plan::status(&services, &compiled.objects, &live, &plan);
    match args.format {
        LiveFormat::Text => print_plain(&crate::report::plan::status_to_text(&statuses)),
        LiveFormat::Json => print_plain(&crate::report::plan::status_to_json(&services, &statuses)),
    }
    let ready = statuses.iter().all(|s| s.phase == crate::model::v1alpha1::Phase::Ready);
    drop(services);
    // As in `plan`: the compile and the snapshot go with the process.
    std::mem::forget((compiled, loaded, live));
    Ok(if ready { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn migrate_cmd(args: MigrateArgs) -> Result<ExitCode, Diagnostics> {
    if !args.check {
        for leftover in migrate::remove_leftovers(&args.paths) {
            status(&format!("removed {}, left by an interrupted `isvc migrate`", leftover.display()));
        }
    }
    let migrations = migrate::plan(&args.paths)?;
    let to = crate::model::v1alpha2::API_VERSION;
    if migrations.is_empty() {
        status(&format!("nothing to migrate: every InferenceService is {to}"));
        return Ok(ExitCode::SUCCESS);
    }
    let documents = |n: usize| if n == 1 { "1 document".to_string() } else { format!("{n} documents") };
    let verb = if args.check { "would migrate" } else { "migrated" };
    if !args.check {
        migrate::write(&migrations)?;
    }
    let text: String =
        migrations.iter().map(|m| format!("{verb}: {} ({})\n", m.path.display(), documents(m.documents))).collect();
    print(&text);
    if args.check {
        status(&format!("{} file(s) would be rewritten to {to}; run `isvc migrate` to do it", migrations.len()));
        return Ok(ExitCode::from(1));
    }
    status(&format!("rewrote {} file(s) to {to}", migrations.len()));
    Ok(ExitCode::SUCCESS)
}

fn write_schemas(dir: &Path) -> Result<ExitCode, Diagnostics> {
    std::fs::create_dir_all(dir).map_err(|e| Diagnostic::error(format!("cannot create {}: {e}", dir.display())))?;
    let mut written = 0;
    for (name, text) in schema::files() {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        output::write_atomic(&path, text.as_bytes())?;
        written += 1;
    }
    status(&format!("schemas in {}: {written} written, {} unchanged", dir.display(), schema::files().len() - written));
    Ok(ExitCode::SUCCESS)
}

pub use crate::load::files::absolute;

/// `path` relative to `base` (both absolute), using `..` where needed.
pub fn relative_to(path: &Path, base: &Path) -> PathBuf {
    // Below a plain `base` (not `/`), a path of its bytes, a `/` and a
    // plain rest is that rest: the components match up to the `/` (the
    // common case, taken for each of 10,000 input files).
    #[cfg(unix)]
    {
        use crate::base::paths::{plain, plain_absolute};
        use std::os::unix::ffi::OsStrExt;
        let (p, b) = (path.as_os_str().as_bytes(), base.as_os_str().as_bytes());
        if b.len() > 1
            && plain_absolute(b)
            && let Some(rest) = p.strip_prefix(b).and_then(|r| r.strip_prefix(b"/"))
            && plain(rest)
        {
            return PathBuf::from(std::ffi::OsStr::from_bytes(rest));
        }
    }
    relative_by_components(path, base)
}

/// [`relative_to`], component by component.
fn relative_by_components(path: &Path, base: &Path) -> PathBuf {
    let p: Vec<Component> = path.components().collect();
    let b: Vec<Component> = base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of one service in namespace `ns` whose annotations take
    /// `aliases` nodes of alias expansions.
    fn service_file(dir: &Path, name: &str, ns: &str, aliases: usize) -> InputFile {
        let mut annotations = String::from("{x.example.com/a0: &v x");
        for i in 0..aliases {
            annotations.push_str(&format!(", x.example.com/a{}: *v", i + 1));
        }
        let text = format!(
            "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\n\
             metadata: {{name: {name}, namespace: {ns}, annotations: {annotations}}}}}\n\
             spec: {{baseModel: Qwen/Qwen3-0.6B, replicas: 1}}\n"
        );
        let path = dir.join(format!("{name}.yaml"));
        std::fs::write(&path, &text).unwrap();
        InputFile {
            label: format!("{name}.yaml"),
            digest: crate::base::digest::digest(text.as_bytes()),
            bytes: text.len() as u64,
            path,
        }
    }

    /// Every file read as a full render reads them, and only the files of
    /// the namespace of the one that changed: both against budgets of
    /// `aliases` nodes and `bytes` bytes.
    fn both_ways(
        files: &[InputFile],
        recorded: &Manifest,
        aliases: usize,
        bytes: u64,
    ) -> (Result<usize, Vec<String>>, Result<usize, Vec<String>>) {
        let messages = |d: Diagnostics| d.iter().map(|d| d.message.clone()).collect::<Vec<_>>();
        let run = crate::base::yaml::RunBudget::with_limits(aliases, bytes);
        let paths: Vec<&Path> = files.iter().map(|f| f.path.as_path()).collect();
        let (services, diags) = load::read_services_in(&paths, &run);
        let full = load::finish_services(services, diags).map(|s| s.len()).map_err(messages);
        let run = crate::base::yaml::RunBudget::with_limits(aliases, bytes);
        let mut selection =
            Selection::new(recorded, files.iter().map(|f| (f.label.as_str(), f.digest.as_str())), []).unwrap();
        let partial = read_selected(&mut selection, files, &run).map(|s| s.len()).map_err(messages);
        (full, partial)
    }

    #[test]
    fn files_left_unread_count_against_the_budgets_as_when_they_were_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = vec![
            service_file(dir.path(), "a", "a", 3),
            service_file(dir.path(), "b", "b", 3),
            service_file(dir.path(), "c", "c", 0),
        ];
        let record = |f: &InputFile, aliases: usize, ns: &str| manifest::Input {
            label: f.label.clone(),
            digest: f.digest.clone(),
            aliases,
            namespaces: vec![ns.to_string()],
        };
        let inputs = vec![record(&files[0], 3, "a"), record(&files[1], 3, "b"), record(&files[2], 0, "c")];
        let namespaces = ["a", "b", "c"].map(|n| (n.to_string(), String::new(), 1)).to_vec();
        let recorded = Manifest::new(Vec::new(), inputs, 3, namespaces, Vec::new(), &output::Tree::new());
        let total: u64 = files.iter().map(|f| f.bytes).sum();
        // c changes and still fits: one file read, as many services.
        files[2] = service_file(dir.path(), "c", "c", 0);
        files[2].digest = "changed".to_string();
        assert_eq!(both_ways(&files, &recorded, 6, total), (Ok(3), Ok(1)));
        // One alias more, or a byte more, takes either render over.
        files[2] = service_file(dir.path(), "c", "c", 1);
        let (full, partial) = both_ways(&files, &recorded, 6, total + 100);
        let over = "aliases in the input files expand to more than 6 nodes in all; refusing to expand them further";
        assert_eq!(full, Err(vec![over.to_string()]));
        assert_eq!(partial, full);
        let (full, partial) = both_ways(&files, &recorded, 7, total);
        assert!(
            full.as_ref().is_err_and(|e| e.len() == 1 && e[0].contains("takes the inputs of this run over")),
            "{full:?}"
        );
        assert_eq!(partial, full);
        assert!(both_ways(&files, &recorded, 7, total + 100).1.is_ok());
    }

    #[test]
    fn a_file_is_kept_in_a_namespace_kept_or_a_service_kept_in_each_clusters_tree() {
        use crate::base::paths::TreePath;
        let namespaces: BTreeSet<String> = ["a".to_string()].into();
        let services: BTreeMap<String, BTreeSet<String>> = [("b".to_string(), ["s".to_string()].into())].into();
        let kept = |p: &str, clusters: &[String]| kept_file(&TreePath::from(p), &namespaces, &services, clusters);
        let none: [String; 0] = [];
        assert_eq!(kept("a/s/deployment.yaml", &none), Some(true));
        assert_eq!(kept("a/kustomization.yaml", &none), Some(false), "kept, but no object");
        assert_eq!(kept("b/s/service.yaml", &none), Some(true));
        assert_eq!(kept("b/t/service.yaml", &none), None);
        assert_eq!(kept("b/kustomization.yaml", &none), None);
        assert_eq!(kept("_gitops/application-x.yaml", &none), None);
        let clusters = ["east".to_string(), "west".to_string()];
        assert_eq!(kept("east/a/s/deployment.yaml", &clusters), Some(true));
        assert_eq!(kept("west/a/kustomization.yaml", &clusters), Some(false));
        assert_eq!(kept("west/b/s/service.yaml", &clusters), Some(true));
        assert_eq!(kept("north/a/s/deployment.yaml", &clusters), None, "no such cluster");
        assert_eq!(kept("a/s/deployment.yaml", &clusters), None, "not in a cluster's tree");
        assert_eq!(kept("east/kustomization.yaml", &clusters), None);
        // A path that is not plain is read by its components alike.
        assert_eq!(kept("east//a/./s/deployment.yaml", &clusters), Some(true));
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_to(Path::new("/r/ex/services/a.yaml"), Path::new("/r/ex")),
            PathBuf::from("services/a.yaml")
        );
        assert_eq!(relative_to(Path::new("/r/other/a.yaml"), Path::new("/r/ex")), PathBuf::from("../other/a.yaml"));
        // The shortcut for a plain path below a plain base gives what the
        // components give, and the rest take the components' way.
        let bases = ["/r/ex", "/", "/r", "/r/ex/", "/r//ex", "/r/./ex"];
        let paths = ["/r/ex/services/a.yaml", "/r/ex", "/r/exa/b", "/r/ex//a", "/r/ex/./a", "/r/ex/../a", "/a", "/"];
        for (base, path) in bases.iter().flat_map(|b| paths.iter().map(move |p| (Path::new(b), Path::new(p)))) {
            assert_eq!(relative_to(path, base), relative_by_components(path, base), "{path:?} from {base:?}");
        }
    }

    #[test]
    fn the_stream_of_written_objects_is_the_stream_of_the_objects() {
        use crate::model::objects::{self, ObjectId};
        let objects: Vec<Object> = (0..7)
            .map(|i| {
                let value =
                    serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}});
                Object::new(ObjectId::new("v1", "ConfigMap", Some("ns"), &format!("c{i}")), value)
                    .from_source(Some(&format!("services/{i}.yaml")))
            })
            .collect();
        let whole = objects::to_stream(&objects);
        let mut out = Vec::new();
        write_stream(&Written::hold(objects), &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), whole);
    }

    #[test]
    fn only_a_render_that_holds_no_fleet_unpacked_trades_its_peak_memory_for_time() {
        let of = |args: &[&str]| memory(&Cli::try_parse_from(args).unwrap().command);
        assert_eq!(of(&["isvc", "render", "s", "--out", "o"]), Memory::Time);
        assert_eq!(of(&["isvc", "render", "s", "--out", "o", "--check"]), Memory::Time);
        assert_eq!(of(&["isvc", "render", "s", "--stdout"]), Memory::Time);
        assert_eq!(of(&["isvc", "render", "s", "--stdout", "--kind", "Deployment"]), Memory::Peak);
        assert_eq!(of(&["isvc", "check", "s"]), Memory::Peak);
        assert_eq!(of(&["isvc", "diff", "s", "--out", "o"]), Memory::Time);
        assert_eq!(of(&["isvc", "diff", "s", "--out", "o", "--cluster", "c"]), Memory::Time);
        assert_eq!(of(&["isvc", "plan", "s", "--live", "l"]), Memory::Peak);
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
