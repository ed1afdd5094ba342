//! The built-in templates are built as code (`src/render/builtin.rs`)
//! unless a user overrides them. These tests hold that code equal to the
//! templates' text: every example, and generated services, compiled both
//! ways give the same objects, value for value and key order included.

use std::path::Path;

use crate::common::{example_inputs, service};
use crate::harness::Test;
use isvc::base::diagnostics::Source;
use isvc::model::objects::Object;
use isvc::{Compiler, Inputs, Options, Templates};
use proptest::prelude::*;
use serde_json::Value;

/// Every object as text: its identity, owner and value with key order.
fn fingerprint(objects: &[Object]) -> Vec<(String, String)> {
    objects.iter().map(|o| (format!("{} {:?} {:?}", o.id, o.owner, o.source), o.value.to_string())).collect()
}

fn assert_same(code: &[Object], text: &[Object], what: &str) {
    let (a, b) = (fingerprint(code), fingerprint(text));
    assert_eq!(a.len(), b.len(), "{what}: object counts differ");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "{what}: the built-in code and the template's text differ");
    }
}

#[test]
fn every_example_renders_the_same_built_as_code_and_as_text() {
    for example in crate::common::examples() {
        let code = Compiler::new(&example_inputs(&example, Templates::builtin()), Options::default()).compile();
        let text = Compiler::new(&example_inputs(&example, Templates::builtin_as_text()), Options::default()).compile();
        let (code, text) = (code.unwrap().objects, text.unwrap().objects);
        assert_same(&code, &text, &example.display().to_string());
    }
}

/// An override replaces only its own template: the others are still built
/// as code, and the override's own output is what the text says.
#[test]
fn an_override_replaces_its_template_only() {
    let overridden = isvc::BUILTIN_TEMPLATES.iter().find(|(n, _)| *n == "service.yaml").unwrap().1;
    let changed = overridden.replace("type: ClusterIP", "type: NodePort");
    let templates = Templates::new(vec![Source::new("templates/service.yaml", changed)]).unwrap();
    let objects = isvc::load::input_files(&[Path::new("examples/basic/services").to_path_buf()])
        .and_then(|f| isvc::load::load_services(&f))
        .unwrap();
    let compiled =
        Compiler::new(&Inputs::new(objects).with_templates(templates), Options::default()).compile().unwrap();
    let service = compiled.objects.iter().find(|o| o.id.kind == "Service").unwrap();
    assert_eq!(service.value["spec"]["type"], "NodePort");
    let deployment = compiled.objects.iter().find(|o| o.id.kind == "Deployment").unwrap();
    assert_eq!(deployment.value["kind"], "Deployment");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn generated_services_render_the_same_built_as_code_and_as_text(doc in service()) {
        let text = isvc::base::yaml::to_string(&doc);
        let test = Test::new().file("services/generated.yaml", text);
        let inputs = test.inputs().unwrap();
        let code = Compiler::new(&inputs, Options::default()).compile().unwrap().objects;
        let as_text = Compiler::new(&inputs.with_templates(Templates::builtin_as_text()), Options::default())
            .compile()
            .unwrap()
            .objects;
        prop_assert_eq!(fingerprint(&code), fingerprint(&as_text));
        prop_assert!(code.iter().all(|o| o.value != Value::Null));
    }
}
