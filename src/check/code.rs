//! Code in the scenario's environment: a code step's snippet, run by the interpreter its
//! `lang` names, and `command_exit_code_is`'s command, with exit code, output and time.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use crate::case::scenario::Lang;
use crate::errors::StepError;
use crate::util::command::{findable, CommandSpec};

/// What a code step did.
#[derive(Debug)]
pub(crate) struct CodeResult {
    /// The exit code (`None` when a signal ended it).
    pub(crate) exit_code: Option<i32>,
    pub(crate) stdout: String,
    /// The last lines of its stderr.
    pub(crate) stderr: String,
    pub(crate) duration_ms: u64,
}

/// The first of `names` on the `PATH`.
fn on_path(names: &[&'static str], dir: &Path) -> Option<&'static str> {
    names
        .iter()
        .copied()
        .find(|n| findable(n, dir, std::iter::empty()))
}

/// Node's major and minor version, once.
fn node_version() -> Option<(u32, u32)> {
    static V: OnceLock<Option<(u32, u32)>> = OnceLock::new();
    *V.get_or_init(|| {
        let out = std::process::Command::new("node")
            .arg("--version")
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut parts = text.trim().trim_start_matches('v').split('.');
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    })
}

/// The command line that runs `code` in `lang`, or why it cannot run here.
fn argv(lang: Lang, code: &str, dir: &Path) -> Result<Vec<String>, StepError> {
    let missing = |what: &str, install: &str| {
        StepError::Broken(format!(
            "this code step needs {what}, which is not on the PATH; {install}"
        ))
    };
    let mut argv: Vec<String> = match lang {
        Lang::Shell => vec![
            on_path(&["bash", "sh"], dir)
                .ok_or_else(|| missing("bash or sh", "install a shell"))?
                .into(),
            "-c".into(),
        ],
        Lang::Python => vec![
            on_path(&["python3", "python"], dir)
                .ok_or_else(|| missing("python3", "install Python 3 or use another `lang`"))?
                .into(),
            "-c".into(),
        ],
        Lang::Node => {
            on_path(&["node"], dir)
                .ok_or_else(|| missing("node", "install Node.js or use another `lang`"))?;
            vec!["node".into(), "-e".into()]
        }
        Lang::TypeScript => {
            on_path(&["node"], dir)
                .ok_or_else(|| missing("node", "install Node.js 22.7 or later"))?;
            match node_version() {
                Some(v) if v >= (22, 7) => vec![
                    "node".into(),
                    "--experimental-strip-types".into(),
                    "--input-type=module-typescript".into(),
                    "-e".into(),
                ],
                found => {
                    let found = found
                        .map(|(a, b)| format!("{a}.{b}"))
                        .unwrap_or_else(|| "an unknown version".into());
                    return Err(StepError::Broken(format!(
                        "a typescript code step needs Node.js 22.7 or later (it strips the types), found {found}; upgrade Node.js or write the step in javascript"
                    )));
                }
            }
        }
    };
    argv.push(code.to_string());
    Ok(argv)
}

/// Runs `code` in `dir` until it exits or the case's deadline passes.
pub(crate) async fn run(
    lang: Lang,
    code: &str,
    dir: &Path,
    deadline: tokio::time::Instant,
) -> Result<CodeResult, StepError> {
    let spec = CommandSpec {
        argv: argv(lang, code, dir)?,
        cwd: dir.to_path_buf(),
        env: BTreeMap::new(),
        shown: format!("the {} code step", lang.name()),
    };
    let started = Instant::now();
    let out = spec
        .run(b"", deadline)
        .await
        .map_err(|e| StepError::Broken(e.to_string()))?;
    Ok(CodeResult {
        exit_code: out.code,
        stdout: out.stdout,
        stderr: out.stderr_tail,
        duration_ms: started.elapsed().as_millis() as u64,
    })
}

/// Runs a shell `command` in `dir` (for `command_exit_code_is`).
pub(crate) async fn shell(
    command: &str,
    dir: &Path,
    deadline: tokio::time::Instant,
) -> Result<CodeResult, StepError> {
    run(Lang::Shell, command, dir, deadline).await
}
