//! ElizaOS scenario matrices (`*.matrix.yaml`): a base scenario, axes that each set one
//! field of it (`run[0].conversation.user_simulator.persona`) to each of their values,
//! the cartesian product, and `runs_per_combination`. Every combination and run is a
//! scenario of its own, checked like one.

use serde_json::Value;

use crate::errors::{FieldError, MatrixPathError};
use crate::source::fields::{check_keys, index, join, opt_str};
use crate::source::{path_steps, PathStep};

/// One axis: the field it sets, and its values.
#[derive(Debug, Clone)]
pub(crate) struct Axis {
    pub(crate) parameter: String,
    pub(crate) values: Vec<Value>,
}

/// A matrix file, read.
#[derive(Debug, Clone)]
pub(crate) struct Matrix {
    pub(crate) name: String,
    /// `base_scenario`, relative to the matrix file.
    pub(crate) base: String,
    pub(crate) axes: Vec<Axis>,
    /// `runs_per_combination` (default 1).
    pub(crate) runs: u32,
}

/// The most combinations × runs a matrix may expand to: far beyond a useful run, well
/// before one that exhausts memory.
const MAX_TRIALS: usize = 10_000;

pub(crate) fn read(v: &Value) -> Result<Matrix, FieldError> {
    let Value::Object(root) = v else {
        return Err(FieldError::new(
            "",
            "a matrix is a mapping with name, base_scenario and matrix",
        ));
    };
    check_keys(
        root,
        &[
            "name",
            "description",
            "base_scenario",
            "runs_per_combination",
            "matrix",
        ],
        "",
        "a scenario matrix",
    )?;
    let name = opt_str(root, "name", "")?.unwrap_or_default();
    opt_str(root, "description", "")?;
    let Some(base) = opt_str(root, "base_scenario", "")? else {
        return Err(FieldError::new(
            "base_scenario",
            "missing `base_scenario`: the scenario file the matrix varies, relative to this file",
        ));
    };
    let runs = match root.get("runs_per_combination") {
        None | Some(Value::Null) => 1,
        Some(n) => match n.as_u64() {
            Some(n @ 1..=100) => n as u32,
            _ => {
                return Err(FieldError::new(
                    "runs_per_combination",
                    format!("expected a whole number from 1 to 100, found {n}"),
                ))
            }
        },
    };
    let Some(Value::Array(list)) = root.get("matrix") else {
        return Err(FieldError::new(
            "matrix",
            "missing `matrix`: a list of axes, each `{parameter: run[0].input, values: [...]}`",
        ));
    };
    if list.is_empty() {
        return Err(FieldError::new("matrix", "the matrix has no axes; add one"));
    }
    let mut axes = Vec::new();
    for (i, a) in list.iter().enumerate() {
        let path = index("matrix", i);
        let Value::Object(obj) = a else {
            return Err(FieldError::new(
                path,
                "expected an axis: `{parameter, values}`",
            ));
        };
        check_keys(obj, &["parameter", "values"], &path, "a matrix axis")?;
        let Some(parameter) = opt_str(obj, "parameter", &path)? else {
            return Err(FieldError::new(
                join(&path, "parameter"),
                "missing `parameter`: the field the axis sets, like run[0].input",
            ));
        };
        let values = match obj.get("values") {
            Some(Value::Array(v)) if !v.is_empty() => v.clone(),
            _ => {
                return Err(FieldError::new(
                    join(&path, "values"),
                    "expected a non-empty list of values",
                ))
            }
        };
        if axes.iter().any(|x: &Axis| x.parameter == parameter) {
            return Err(FieldError::new(
                join(&path, "parameter"),
                format!("`{parameter}` is set by an earlier axis too; merge their values"),
            ));
        }
        axes.push(Axis { parameter, values });
    }
    let total = axes
        .iter()
        .try_fold(runs as usize, |n, a| n.checked_mul(a.values.len()))
        .unwrap_or(usize::MAX);
    if total > MAX_TRIALS {
        return Err(FieldError::new(
            "matrix",
            format!("the matrix expands to {total} trials, more than {MAX_TRIALS}; split it"),
        ));
    }
    Ok(Matrix {
        name,
        base,
        axes,
        runs,
    })
}

/// Sets the field at `path` in `v`; `Err` names the part of the path that is not there.
pub(crate) fn set(v: &mut Value, path: &str, value: Value) -> Result<(), MatrixPathError> {
    let steps = path_steps(path);
    if steps.is_empty() {
        return Err(MatrixPathError::Empty);
    }
    let mut at = v;
    let mut walked = String::new();
    for (i, step) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        at = match step {
            PathStep::Key(k) => {
                walked = join(&walked, k);
                let Some(obj) = at.as_object_mut() else {
                    return Err(MatrixPathError::NotMapping(walked));
                };
                match obj.get_mut(*k) {
                    Some(next) => next,
                    None => return Err(MatrixPathError::NoKey(walked)),
                }
            }
            PathStep::Index(n) => {
                walked = index(&walked, *n);
                let Some(list) = at.as_array_mut() else {
                    return Err(MatrixPathError::NotList(walked));
                };
                let len = list.len();
                match list.get_mut(*n) {
                    Some(next) => next,
                    None => return Err(MatrixPathError::NoItem { walked, len }),
                }
            }
        };
        if last {
            *at = value;
            return Ok(());
        }
    }
    Ok(())
}

/// Every combination, in order (the first axis varies slowest), each as the index of
/// its value on every axis.
pub(crate) fn combinations(axes: &[Axis]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new()];
    for a in axes {
        out = out
            .into_iter()
            .flat_map(|c| {
                (0..a.values.len()).map(move |i| {
                    let mut c = c.clone();
                    c.push(i);
                    c
                })
            })
            .collect();
    }
    out
}

/// A combination's name: `persona=frustrated-customer-who-ha,objective=...`, each axis
/// by the last part of its path and a short slug of its value.
pub(crate) fn combination_name(axes: &[Axis], picks: &[usize]) -> String {
    axes.iter()
        .zip(picks)
        .map(|(a, &i)| {
            let key = a
                .parameter
                .rsplit('.')
                .next()
                .unwrap_or(&a.parameter)
                .split('[')
                .next()
                .unwrap_or_default()
                .to_string();
            let value = match &a.values[i] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let mut slug = crate::util::slug(&value);
            if slug.chars().count() > 24 {
                slug = slug
                    .chars()
                    .take(24)
                    .collect::<String>()
                    .trim_end_matches('-')
                    .to_string();
            }
            format!("{key}={slug}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_replaces_a_field_that_exists_and_names_one_that_does_not() {
        let mut v = json!({"run": [{"conversation": {"user_simulator": {"persona": "a"}}}]});
        set(
            &mut v,
            "run[0].conversation.user_simulator.persona",
            json!("b"),
        )
        .unwrap();
        assert_eq!(
            v["run"][0]["conversation"]["user_simulator"]["persona"],
            "b"
        );
        assert_eq!(
            set(&mut v, "run[1].input", json!("x"))
                .unwrap_err()
                .to_string(),
            "the base scenario has no `run[1]` (that list has 1 item(s))"
        );
        assert_eq!(
            set(&mut v, "run[0].conversation.max_turns", json!(3))
                .unwrap_err()
                .to_string(),
            "the base scenario has no `run[0].conversation.max_turns`"
        );
    }

    #[test]
    fn combinations_cover_the_product_in_order() {
        let axes = vec![
            Axis {
                parameter: "a".into(),
                values: vec![json!(1), json!(2)],
            },
            Axis {
                parameter: "b.c".into(),
                values: vec![json!("x y"), json!("z")],
            },
        ];
        let all = combinations(&axes);
        assert_eq!(all, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
        assert_eq!(combination_name(&axes, &all[1]), "a=1,c=z");
        assert_eq!(combination_name(&axes, &all[0]), "a=1,c=x-y");
    }
}
