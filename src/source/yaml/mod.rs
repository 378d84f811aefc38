//! YAML formats: ElizaOS scenarios (`*.scenario.yaml`) and their matrices.
//!
//! In progress (issue 12): the located YAML tree is here; the scenario reader that
//! uses it comes next, so parts of it are not called yet.

#[allow(dead_code)]
mod node;
