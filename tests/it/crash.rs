//! A render killed at any moment leaves the old tree or the new one, never a
//! mix; two renders into the same directory do not interleave; a re-render
//! keeps the inode and modification time of every file it does not change.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("isvc")
}

fn write_services(dir: &Path, n: usize, replicas: i32, model: &str) {
    let services = dir.join("services");
    std::fs::create_dir_all(&services).unwrap();
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "---\napiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata: {{name: svc-{i}, namespace: ns-{}}}\nspec: {{model: {model}, replicas: {replicas}}}\n",
            i % 7
        ));
    }
    std::fs::write(services.join("all.yaml"), text).unwrap();
}

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect()
}

const MANIFEST: &str = ".isvc-manifest";

/// The tree without its manifest, and the manifest.
fn without_manifest(tree: &BTreeMap<PathBuf, Vec<u8>>) -> (BTreeMap<PathBuf, Vec<u8>>, Option<Vec<u8>>) {
    let mut tree = tree.clone();
    let manifest = tree.remove(Path::new(MANIFEST));
    (tree, manifest)
}

fn render(dir: &Path) {
    let status =
        Command::new(bin()).current_dir(dir).args(["render", "services", "--out", "rendered"]).status().unwrap();
    assert!(status.success());
}

/// The paths where `now` differs from `tree` (the first few).
fn differences(now: &BTreeMap<PathBuf, Vec<u8>>, tree: &BTreeMap<PathBuf, Vec<u8>>) -> String {
    let paths: BTreeSet<&PathBuf> = now.keys().chain(tree.keys()).collect();
    let differ: Vec<String> = paths
        .into_iter()
        .filter(|p| now.get(*p) != tree.get(*p))
        .map(|p| match (now.contains_key(p), tree.contains_key(p)) {
            (true, false) => format!("{} extra", p.display()),
            (false, true) => format!("{} missing", p.display()),
            _ => format!("{} other bytes", p.display()),
        })
        .collect();
    format!("{} paths: {}", differ.len(), differ.iter().take(5).cloned().collect::<Vec<_>>().join(", "))
}

#[test]
fn a_killed_render_leaves_the_old_tree_or_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_services(d, 120, 3, "org/old");
    render(d);
    let old = snapshot(&d.join("rendered"));
    write_services(d, 120, 0, "org/new");
    render(d);
    let new = snapshot(&d.join("rendered"));
    assert_ne!(old, new);

    // How long a full render takes here, to spread the kills over it.
    write_services(d, 120, 3, "org/old");
    let start = Instant::now();
    render(d);
    let full = start.elapsed().as_micros() as u64;

    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let (mut saw_old, mut saw_new) = (0, 0);
    for round in 0..20 {
        // Alternate the direction of the change, so each kill interrupts a real rewrite.
        let to = if round % 2 == 0 { (0, "org/new") } else { (3, "org/old") };
        write_services(d, 120, to.0, to.1);
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let delay = Duration::from_micros((seed >> 33) % (full + 1));
        let mut child =
            Command::new(bin()).current_dir(d).args(["render", "services", "--out", "rendered"]).spawn().unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        let mut now = snapshot(&d.join("rendered"));
        // The manifest is renamed into place after the tree: a kill in
        // between leaves the new tree with the previous manifest, which
        // lists other digests than the files have, so the next `--check`
        // compiles in full rather than trusting it.
        let manifest = now.remove(Path::new(MANIFEST));
        let (old_tree, old_manifest) = without_manifest(&old);
        let (new_tree, new_manifest) = without_manifest(&new);
        assert!(manifest == old_manifest || manifest == new_manifest, "round {round}: a damaged manifest");
        if now == old_tree {
            saw_old += 1;
        } else if now == new_tree {
            saw_new += 1;
        } else {
            panic!(
                "round {round}: a render killed after {delay:?} left a mixed tree; against the old one: {}; \
                 against the new one: {}",
                differences(&now, &old_tree),
                differences(&now, &new_tree)
            );
        }
        // Bring the tree to a known state for the next round.
        render(d);
    }
    eprintln!("kills left the old tree {saw_old} times and the new tree {saw_new} times");
}

#[test]
fn renders_into_the_same_directory_do_not_interleave() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Four different inputs, and the tree each renders on its own.
    let mut expected = Vec::new();
    for i in 0..4 {
        write_services(&d.join(format!("in{i}")), 200, 1 + i, "org/a");
        let input = format!("in{i}/services");
        let out = format!("ref{i}");
        let status = Command::new(bin()).current_dir(d).args(["-q", "render", &input, "--out", &out]).status().unwrap();
        assert!(status.success());
        expected.push(snapshot(&d.join(out)));
    }
    // All four at once into one directory: each waits for the one before.
    let spawned: Vec<_> = (0..4)
        .map(|i| {
            let input = format!("in{i}/services");
            Command::new(bin()).current_dir(d).args(["-q", "render", &input, "--out", "rendered"]).spawn().unwrap()
        })
        .collect();
    for mut c in spawned {
        assert!(c.wait().unwrap().success());
    }
    let result = snapshot(&d.join("rendered"));
    assert!(expected.contains(&result), "the tree is not any one render's output: renders interleaved");
}

#[cfg(unix)]
#[test]
fn unchanged_and_foreign_files_keep_their_inode_and_mtime() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_services(d, 3, 1, "org/a");
    render(d);
    let notes = d.join("rendered/NOTES.md");
    std::fs::write(&notes, "mine").unwrap();
    let stat = |p: &Path| {
        let m = std::fs::metadata(p).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec())
    };
    let untouched = d.join("rendered/ns-1/svc-1/deployment.yaml");
    let before = (stat(&untouched), stat(&notes));
    std::thread::sleep(Duration::from_millis(20));
    // Change one service only.
    let text = std::fs::read_to_string(d.join("services/all.yaml")).unwrap();
    std::fs::write(d.join("services/all.yaml"), text.replacen("replicas: 1", "replicas: 2", 1)).unwrap();
    render(d);
    assert_eq!((stat(&untouched), stat(&notes)), before);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine");
}
