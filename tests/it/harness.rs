//! The harness: inputs given as text, compiled through the library's one
//! entry point ([`isvc::Compiler`]) or passed to the `isvc` binary.
//!
//! ```ignore
//! let objects = Test::new().service(QWEN3).platform(PLATFORM).objects();
//! let run = Test::new().service(QWEN3).cli(&["render", "services", "--stdout"]);
//! ```

use std::path::PathBuf;
use std::process::Output;

use isvc::Templates;
use isvc::base::diagnostics::{Diagnostics, Source};
use isvc::model::objects::{Examined, Object, Stream, Streamed};
use isvc::{Compilation, Compiler, Examination, Inputs, Options, Parts};

/// Inputs given as text.
#[derive(Clone, Debug, Default)]
pub struct Test {
    /// Service files: (name, text). Names are relative to the test's
    /// directory (`services/qwen3.yaml`).
    files: Vec<(String, String)>,
    platform: Option<String>,
    /// Template overrides: (file name, text).
    templates: Vec<(String, String)>,
}

/// What a run of the binary did.
pub struct Run {
    pub dir: tempfile::TempDir,
    pub output: Output,
}

impl Run {
    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
}

impl Test {
    pub fn new() -> Test {
        Test::default()
    }

    /// A service file named `name`; headers and messages name it so.
    pub fn file(mut self, name: &str, text: impl Into<String>) -> Test {
        self.files.push((name.to_string(), text.into()));
        self
    }

    /// Services in `services.yaml`.
    pub fn service(self, text: impl Into<String>) -> Test {
        self.file("services.yaml", text)
    }

    /// The platform file, `platform.yaml`.
    pub fn platform(mut self, text: impl Into<String>) -> Test {
        self.platform = Some(text.into());
        self
    }

    /// A template override, `overrides/<name>`.
    pub fn template(mut self, name: &str, text: impl Into<String>) -> Test {
        self.templates.push((name.to_string(), text.into()));
        self
    }

    /// The inputs, or every problem of every file.
    pub fn inputs(&self) -> Result<Inputs, Diagnostics> {
        let mut diags = Diagnostics::new();
        let mut services = Vec::new();
        for (name, text) in &self.files {
            let (loaded, problems) = isvc::load::parse_services(&Source::new(name.as_str(), text.as_str()));
            services.extend(loaded);
            diags.extend(problems);
        }
        let platform = match &self.platform {
            Some(text) => match isvc::load::parse_platform_with_origin(&Source::new("platform.yaml", text.as_str())) {
                Ok(p) => Some(p),
                Err(d) => {
                    diags.extend(d);
                    None
                }
            },
            None => None,
        };
        let templates = if self.templates.is_empty() {
            Templates::builtin()
        } else {
            let sources =
                self.templates.iter().map(|(n, t)| Source::new(format!("overrides/{n}"), t.as_str())).collect();
            Templates::new(sources).map_err(Diagnostics)?
        };
        if !diags.is_empty() {
            return Err(diags);
        }
        let file = self.platform.as_ref().map(|_| "platform.yaml".to_string());
        let (platform, origin) = platform.map_or((None, None), |(p, o)| (Some(p), Some(o)));
        Ok(Inputs::new(services)
            .with_platform(platform.unwrap_or_default(), file)
            .with_platform_origin(origin)
            .with_templates(templates))
    }

    /// Compiles the inputs as `isvc render` does. Every compile of the
    /// harness is also held to give the same in parts of one service
    /// ([`same_in_parts`]).
    pub fn compile(&self) -> Result<Compilation, Diagnostics> {
        if let Ok(inputs) = self.inputs() {
            same_in_parts(&inputs);
        }
        self.compile_with(Options::default())
    }

    pub fn compile_with(&self, options: Options) -> Result<Compilation, Diagnostics> {
        Compiler::new(&self.inputs()?, options).compile()
    }

    /// The compiled objects; panics with the rendered errors otherwise.
    pub fn objects(&self) -> Vec<Object> {
        self.compile().unwrap_or_else(|d| panic!("{}", d.render(false))).objects
    }

    /// The objects and findings `isvc check` reports (held, as by
    /// [`Test::compile`], to be the same in parts).
    pub fn examine(&self) -> Result<Examination, Diagnostics> {
        let inputs = self.inputs()?;
        same_in_parts(&inputs);
        Compiler::new(&inputs, Options::default()).examine()
    }

    /// Writes the inputs into a temporary directory (`services/…`,
    /// `platform.yaml`, `templates/…`) and runs `isvc args…` there.
    pub fn cli(&self, args: &[&str]) -> Run {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in &self.files {
            let name = if name.contains('/') { name.clone() } else { format!("services/{name}") };
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        if let Some(p) = &self.platform {
            std::fs::write(dir.path().join("platform.yaml"), p).unwrap();
        }
        for (name, text) in &self.templates {
            std::fs::create_dir_all(dir.path().join("templates")).unwrap();
            std::fs::write(dir.path().join("templates").join(name), text).unwrap();
        }
        let output =
            std::process::Command::new(env!("CARGO_BIN_EXE_isvc")).current_dir(dir.path()).args(args).output().unwrap();
        Run { dir, output }
    }
}

/// The five-line service, as v1alpha1.
pub const QWEN3: &str = "apiVersion: ai.example.com/v1alpha1
kind: InferenceService
metadata: {name: qwen3}
spec: {model: Qwen/Qwen3-0.6B, replicas: 3, gpusPerReplica: 1}
";

/// `isvc` run in `dir`, without colours.
pub fn isvc(dir: &std::path::Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("isvc").unwrap();
    c.current_dir(dir).env_remove("NO_COLOR").arg("--color").arg("never");
    c
}

/// A temporary directory with `services/qwen3.yaml` holding `spec`.
pub fn setup(spec: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("services")).unwrap();
    std::fs::write(dir.path().join("services/qwen3.yaml"), spec).unwrap();
    dir
}

/// Runs `c`: its exit code, standard output and standard error.
pub fn run(c: &mut assert_cmd::Command) -> (i32, String, String) {
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Holds a compile of `inputs` that checks every namespace in parts of one
/// service (`compiler::parts`: the rules' lookups answered from the small
/// form of each object, `k8s::skeleton`) equal to one that checks each
/// namespace whole: the same `render --stdout` bytes, warnings, quota
/// table and errors, and the same `check` findings. Every test that
/// compiles through the harness runs it.
pub fn same_in_parts(inputs: &Inputs) {
    let options = |parts: Option<Parts>| match parts {
        Some(parts) => Options::default().parts(parts),
        None => Options::default().parts(Parts { above: usize::MAX, size: 1 }),
    };
    let stream = |parts| {
        let c = Compiler::new(inputs, options(parts)).compile_held::<Streamed>();
        c.map(|c| {
            let mut bytes = Vec::new();
            Stream::of(&c.objects).expect("the runs of the stream in place").write(&mut bytes).unwrap();
            (String::from_utf8(bytes).unwrap(), c.warnings.render(false), format!("{:?}", c.quota))
        })
        .map_err(|d| d.render(false))
    };
    let examined = |parts| {
        let e = Compiler::new(inputs, options(parts)).examine_held::<Examined>();
        e.map(|e| (e.objects.iter().map(|o| o.object.id.to_string()).collect::<Vec<_>>(), format!("{:?}", e.findings)))
            .map_err(|d| d.render(false))
    };
    let (whole, whole_examined) = (stream(None), examined(None));
    for size in [1, 2] {
        let parts = Some(Parts { above: 0, size });
        assert_eq!(stream(parts), whole, "render --stdout in parts of {size} differs from a whole render");
        assert_eq!(examined(parts), whole_examined, "check in parts of {size} differs from a whole check");
    }
}
