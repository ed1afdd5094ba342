//! The integration tests: one binary, a module per area, and one small
//! harness (`harness::Test`) that compiles services and platforms given as
//! text, or runs the `isvc` binary over them in a temporary directory.

mod combined;
mod common;
mod harness;

mod bad_inputs;
mod bench_peers;
mod builtin;
mod cache;
mod check_rules;
mod cli;
mod conversion;
mod crash;
mod examples;
mod gateway;
mod gitops;
mod groups;
mod hostile;
mod kustomize;
mod lora;
mod manifest;
mod parts;
mod plan;
mod properties;
mod readme;
mod real_inputs;
mod security;
mod tenancy;
mod validator_property;
