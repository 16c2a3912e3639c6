//! One check's verdict, and the context an area records them in.

use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    Skip,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

/// One check: its area, its name, what happened, and (when the spec is
/// silent) the DECISIONS.md point it rests on.
#[derive(Clone, Debug)]
pub struct Check {
    pub area: String,
    pub name: String,
    pub status: Status,
    pub detail: String,
    pub decision: Option<String>,
}

impl Check {
    pub fn to_json(&self) -> Value {
        json!({
            "area": self.area,
            "name": self.name,
            "status": self.status.as_str(),
            "detail": self.detail,
            "decision": self.decision,
        })
    }
}

/// Why a check did not pass.
#[derive(Debug)]
pub enum Miss {
    Fail(String),
    Skip(String),
}

impl From<String> for Miss {
    fn from(s: String) -> Self {
        Miss::Fail(s)
    }
}

impl From<&str> for Miss {
    fn from(s: &str) -> Self {
        Miss::Fail(s.to_string())
    }
}

/// A check's outcome: `Ok(detail)` passes.
pub type Res = Result<String, Miss>;

/// Fail with `msg` unless `cond`.
pub fn ensure(cond: bool, msg: impl Into<String>) -> Result<(), Miss> {
    if cond {
        Ok(())
    } else {
        Err(Miss::Fail(msg.into()))
    }
}

/// `v[key]` is the boolean `want`; else a miss that shows `what` and `v`.
pub fn ensure_flag(v: &Value, key: &str, want: bool, what: &str) -> Result<(), Miss> {
    ensure(
        v.get(key) == Some(&Value::Bool(want)),
        format!("{what}: {}", brief(v)),
    )
}

pub fn skip<T>(why: impl Into<String>) -> Result<T, Miss> {
    Err(Miss::Skip(why.into()))
}

pub struct Ctx {
    area: &'static str,
    checks: Vec<Check>,
}

impl Ctx {
    pub fn new(area: &'static str) -> Self {
        Ctx {
            area,
            checks: Vec::new(),
        }
    }

    /// Record a check that rests on the spec's text alone.
    pub fn record(&mut self, name: &str, res: Res) {
        self.push(name, res, None);
    }

    /// Record a check that rests on a DECISIONS.md point where the spec is
    /// silent or open; the point is named in the report.
    pub fn record_d(&mut self, name: &str, decision: &str, res: Res) {
        self.push(name, res, Some(decision.to_string()));
    }

    /// [`Ctx::record`] what `check` answers.
    pub fn check(&mut self, name: &str, check: impl FnOnce() -> Res) {
        self.record(name, check());
    }

    /// [`Ctx::record_d`] what `check` answers.
    pub fn check_d(&mut self, name: &str, decision: &str, check: impl FnOnce() -> Res) {
        self.record_d(name, decision, check());
    }

    /// Every named check is skipped for one reason (the area cannot run).
    pub fn skip_all(&mut self, names: &[&str], why: &str) {
        for n in names {
            self.record(n, skip(why));
        }
    }

    fn push(&mut self, name: &str, res: Res, decision: Option<String>) {
        let (status, detail) = match res {
            Ok(d) => (Status::Pass, d),
            Err(Miss::Fail(d)) => (Status::Fail, d),
            Err(Miss::Skip(d)) => (Status::Skip, d),
        };
        let detail = one_line(&detail);
        self.checks.push(Check {
            area: self.area.to_string(),
            name: name.to_string(),
            status,
            detail,
            decision,
        });
    }

    pub fn into_checks(self) -> Vec<Check> {
        self.checks
    }
}

/// A detail is one line, at most 300 characters.
pub fn one_line(s: &str) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 300 {
        let cut: String = flat.chars().take(297).collect();
        format!("{cut}...")
    } else {
        flat
    }
}

/// A short rendering of a JSON value for a detail.
/// That a capabilities descriptor's `transports` lists `name` (the
/// transport the kit is speaking to it over).
pub fn lists_transport(caps: &Value, name: &str) -> Result<(), Miss> {
    let t = caps
        .get("transports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    ensure(
        t.contains(&Value::String(name.into())),
        format!("transports {t:?} omit {name}, yet the server speaks it"),
    )
}

pub fn brief(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 160 {
        let cut: String = s.chars().take(157).collect();
        format!("{cut}...")
    } else {
        s
    }
}
