//! A namespace checked in parts (`compiler::parts`) gives what a whole one
//! does. Every compile of the harness holds that too
//! ([`crate::harness::same_in_parts`]); these tests add every example.

use crate::common::example_inputs;
use crate::harness::same_in_parts;
use isvc::Templates;

#[test]
fn every_example_compiles_the_same_in_parts() {
    let mut seen = 0;
    for entry in std::fs::read_dir("examples").unwrap() {
        let example = entry.unwrap().path();
        if !example.join("services").is_dir() {
            continue;
        }
        same_in_parts(&example_inputs(&example, Templates::builtin()));
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} examples");
}
