//! The command line: parses arguments, runs the library, prints, and maps
//! outcomes to exit codes (0 success or no differences, 1 differences
//! found, 2 bad input or usage). Errors go to stderr.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::base::diagnostics::{Diagnostic, Diagnostics};
use crate::check;
use crate::emit::{migrate, plan, write as output};
use crate::model::objects::{self, Object, Streamed, Written};
use crate::model::schema;
use crate::report::{findings as report, sarif};
use crate::run::{self, Progress, Sources};

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

impl Inputs {
    /// What the library compiles from.
    fn sources(&self) -> Sources {
        Sources {
            paths: self.paths.clone(),
            platform: self.platform.clone(),
            templates: self.templates.clone(),
            gitops: self.gitops.map(Into::into),
            disable: self.disable.clone(),
            cluster: self.cluster.clone(),
        }
    }
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

/// What a run tells along the way, on stderr: warnings unless `--quiet`
/// (errors only then), notes with `-v`.
struct Terminal;

impl Progress for Terminal {
    fn warnings(&self, found: &Diagnostics) {
        eprint_diagnostics(found);
    }

    fn note(&self, line: &str) {
        if verbosity() >= 2 {
            status(line);
        }
    }
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

/// Prints the quota table of `rows`, if any.
fn say_quota(rows: &[crate::compiler::admission::QuotaUsage]) {
    if !rows.is_empty() {
        status(crate::report::quota::format_quota_table(rows).trim_end());
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
    let sources = args.inputs.sources();
    let Some(out) = args.out else {
        // Every object is rendered and checked before the stream is
        // printed: nothing can fail then but the writing, which `main`
        // turns into a non-zero exit.
        const WHAT: Option<&str> = Some("render --stdout");
        if kinds.is_empty() {
            let (compiled, services) = run::compile::<Streamed>(&sources, WHAT, &Terminal)?;
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
        let (compiled, services) = run::compile::<Written>(&sources, WHAT, &Terminal)?;
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
    let mode = match (args.check, args.full) {
        (false, false) => run::Mode::Write,
        (true, false) => run::Mode::Check,
        (false, true) => run::Mode::Full,
        (true, true) => run::Mode::CheckFull,
    };
    let run::Rendered { changes, objects, files, quota, remains } = run::render_tree(&sources, &out, mode, &Terminal)?;
    // The process ends after this; freeing tens of thousands of files one
    // by one (the tree written, the tree found, the cache's entries) would
    // only delay the exit. The lock goes with the process.
    remains.leave();
    if args.check {
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
    if verbosity() >= 2 {
        for (label, paths) in [("created", &changes.create), ("updated", &changes.update), ("deleted", &changes.delete)]
        {
            for p in paths {
                status(&format!("{label} {}", out.join(p).display()));
            }
        }
    }
    say_quota(&quota);
    status(&rendered_summary(objects, &args.inputs.paths, &out, files, &changes));
    Ok(ExitCode::SUCCESS)
}

fn diff_cmd(args: DiffArgs) -> Result<ExitCode, Diagnostics> {
    let (report, remains) = run::diff(&args.inputs.sources(), &args.out, args.full, &Terminal)?;
    // The compile and the tree go with the process, as in `render`.
    remains.leave();
    print(&match args.format {
        DiffFormat::Text => crate::report::diff::to_text(&report, true),
        DiffFormat::Markdown => crate::report::diff::to_markdown(&report, args.max_chars),
        DiffFormat::Json => crate::report::diff::to_json(&report),
    });
    Ok(if report.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn check_cmd(args: CheckArgs) -> Result<ExitCode, Diagnostics> {
    if let Some(id) = &args.explain {
        let rule = check::rule(id).ok_or_else(|| check::unknown_rule(id))?;
        print(&rule.long_text());
        return Ok(ExitCode::SUCCESS);
    }
    let (examination, remains) = run::examine(&args.inputs.sources(), &Terminal)?;
    let (examined, findings) = (examination.objects.len(), examination.findings);
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
    remains.leave();
    std::mem::forget((findings, examination.objects));
    Ok(if errors > 0 || (args.strict && warnings > 0) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn plan_cmd(args: LiveArgs) -> Result<ExitCode, Diagnostics> {
    let run::Reconciled { compiled, services, live, plan } =
        run::reconcile(&args.inputs.sources(), &args.live, &Terminal)?;
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
    let run::Reconciled { compiled, services: loaded, live, plan } =
        run::reconcile(&args.inputs.sources(), &args.live, &Terminal)?;
    let services: Vec<&crate::model::v1alpha2::InferenceService> = loaded.iter().map(|s| &*s.service).collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::objects::Held;

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
