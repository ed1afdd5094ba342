//! The layers, as a test over the module graph: a module may import only
//! layers below it (and its own), the layers an Operator would embed
//! (base, model, k8s, derive) touch neither the file system nor clap, and
//! only the command line uses the terminal's crates.
//! ARCHITECTURE.md draws the same picture.

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Each layer's rank: a module may import modules of lower or equal rank.
    /// `load` and `derive` sit side by side and may not import each other.
    const LAYERS: &[(&str, u8)] = &[
        ("base", 0),
        ("model", 1),
        ("k8s", 2),
        ("load", 3),
        ("derive", 3),
        ("render", 4),
        ("check", 5),
        ("compiler", 6),
        ("emit", 7),
        ("report", 8),
        ("run", 8),
        ("cli", 9),
    ];

    /// Layers that build without I/O or the CLI.
    const PURE: &[&str] = &["base", "model", "k8s", "derive"];
    const FORBIDDEN_IN_PURE: &[&str] = &["std::fs", "clap", "walkdir", "tempfile", "rustix", "std::process"];
    /// What only the command line uses: the terminal and its arguments.
    const CLI_ONLY: &[&str] = &["clap", "anstream"];

    fn rank(layer: &str) -> Option<u8> {
        LAYERS.iter().find(|(l, _)| *l == layer).map(|(_, r)| *r)
    }

    fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn layers_point_down() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut all = Vec::new();
        files(&src, &mut all);
        let mut wrong = Vec::new();
        for path in all {
            let rel = path.strip_prefix(&src).unwrap();
            let layer = rel.iter().next().unwrap().to_str().unwrap().trim_end_matches(".rs").to_string();
            let Some(own) = rank(&layer) else { continue };
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                for part in code.split("crate::").skip(1) {
                    let target: String = part.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                    let Some(theirs) = rank(&target) else { continue };
                    let sideways = theirs == own && target != layer;
                    if theirs > own || sideways {
                        wrong.push(format!("src/{}:{}: {layer} imports {target}", rel.display(), i + 1));
                    }
                }
                if layer != "cli" {
                    for f in CLI_ONLY {
                        if code.contains(f) && !code.trim_start().starts_with("//") {
                            wrong.push(format!("src/{}:{}: {layer} uses {f}", rel.display(), i + 1));
                        }
                    }
                }
                if PURE.contains(&layer.as_str()) {
                    for f in FORBIDDEN_IN_PURE {
                        if code.contains(f) && !code.trim_start().starts_with("//") {
                            wrong.push(format!("src/{}:{}: {layer} uses {f}", rel.display(), i + 1));
                        }
                    }
                }
            }
        }
        assert!(wrong.is_empty(), "imports against the layers:\n{}", wrong.join("\n"));
    }
}
