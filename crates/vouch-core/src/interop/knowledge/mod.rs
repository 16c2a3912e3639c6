//! Knowledge files (docs/knowledge.md): a `knowledge/` folder with a machine index
//! (`index.json`) and YAML fact files people edit (`global/*.yaml`,
//! `repos/<repo>.yaml`, `agents/<agent>.yaml`), read and checked here
//! ([`read`], [`validate`]), brought in as claim proposals citing spans of
//! the registered files ([`import`]), and written from current approved
//! claims ([`export`]). The mapping is documented in docs/knowledge.md.

mod export;
mod import;
mod parse;

pub use export::{ExportParams, ExportResult, export};
pub use import::{ImportParams, ImportResult, import};
pub use parse::{Fact, KnowledgeDir, read};

use crate::error::Result;
use crate::kb::Kb;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The categories of the knowledge-file format.
pub const CATEGORIES: &[&str] = &["fact", "pitfall", "pattern", "tool-quirk", "question"];

/// Largest file read from a knowledge folder (an export of 100,000
/// claims writes a 24 MB index.json).
pub const MAX_FILE_BYTES: u64 = 128 * 1024 * 1024;

/// One problem found in a knowledge folder.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Problem {
    /// `error` or `warn`.
    pub severity: String,
    /// Relative to the knowledge folder.
    pub file: String,
    /// 1-based line in `file`, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The fact's id, when the problem is one fact's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What is wrong and what to fix.
    pub message: String,
}

impl Problem {
    pub(crate) fn error(file: &str, line: Option<usize>, id: Option<&str>, m: String) -> Problem {
        Problem {
            severity: "error".into(),
            file: file.into(),
            line,
            id: id.map(str::to_string),
            message: m,
        }
    }
    pub(crate) fn warn(file: &str, line: Option<usize>, id: Option<&str>, m: String) -> Problem {
        Problem {
            severity: "warn".into(),
            ..Problem::error(file, line, id, m)
        }
    }
}

/// Params of `kb.knowledge_validate`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateParams {
    /// The knowledge folder (holding index.json), inside the project.
    pub path: String,
}

/// What `kb.knowledge_validate` returns.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ValidateReport {
    /// No errors (warnings allowed).
    pub ok: bool,
    /// YAML fact files read.
    pub files: usize,
    /// Facts in the YAML files.
    pub facts: usize,
    /// Problems of severity `error`.
    pub errors: usize,
    /// Problems of severity `warn`.
    pub warnings: usize,
    /// Every problem, with its file, line and fact id.
    pub problems: Vec<Problem>,
}

/// `kb.knowledge_validate`: check a knowledge folder inside the project, expiry
/// against today's date. Reads only.
pub fn validate(kb: &Kb, p: ValidateParams) -> Result<ValidateReport> {
    let dir = read(kb, &p.path)?;
    Ok(report(&dir, &kb.now().0.format("%Y-%m-%d").to_string()))
}

/// Validate a knowledge folder anywhere, no knowledge base needed: a check
/// of files (`vouch knowledge validate DIR` outside a project). `today`
/// (`YYYY-MM-DD`) dates the expiry checks.
pub fn validate_folder(dir: &std::path::Path, today: &str) -> Result<ValidateReport> {
    let shown = dir.display().to_string();
    let folder = parse::read_at(dir, dir, &shown)?;
    Ok(report(&folder, today))
}

pub(crate) fn report(dir: &KnowledgeDir, today: &str) -> ValidateReport {
    let problems = parse::check(dir, today);
    let errors = problems.iter().filter(|p| p.severity == "error").count();
    ValidateReport {
        ok: errors == 0,
        files: dir.files.len(),
        facts: dir.facts().len(),
        errors,
        warnings: problems.len() - errors,
        problems,
    }
}
