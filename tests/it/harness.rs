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
use isvc::model::objects::Object;
use isvc::{Compilation, Compiler, Examination, Inputs, Options};

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

    /// Compiles the inputs as `isvc render` does.
    pub fn compile(&self) -> Result<Compilation, Diagnostics> {
        self.compile_with(Options::default())
    }

    pub fn compile_with(&self, options: Options) -> Result<Compilation, Diagnostics> {
        Compiler::new(&self.inputs()?, options).compile()
    }

    /// The compiled objects; panics with the rendered errors otherwise.
    pub fn objects(&self) -> Vec<Object> {
        self.compile().unwrap_or_else(|d| panic!("{}", d.render(false))).objects
    }

    /// The objects and findings `isvc check` reports.
    pub fn examine(&self) -> Result<Examination, Diagnostics> {
        Compiler::new(&self.inputs()?, Options::default()).examine()
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
