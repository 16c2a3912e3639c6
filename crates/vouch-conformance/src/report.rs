//! The kit's report: text for people, JSON for machines.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::check::{Check, Status};

pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    pub fn count(&self, st: Status) -> usize {
        self.checks.iter().filter(|c| c.status == st).count()
    }

    /// Nothing failed (skips allowed).
    pub fn ok(&self) -> bool {
        self.count(Status::Fail) == 0
    }

    pub fn failures(&self) -> Vec<&Check> {
        self.checks
            .iter()
            .filter(|c| c.status == Status::Fail)
            .collect()
    }

    /// Per area: (pass, fail, skip).
    pub fn by_area(&self) -> Vec<(String, [usize; 3])> {
        let mut order: Vec<String> = Vec::new();
        let mut m: BTreeMap<String, [usize; 3]> = BTreeMap::new();
        for c in &self.checks {
            if !m.contains_key(&c.area) {
                order.push(c.area.clone());
            }
            let e = m.entry(c.area.clone()).or_default();
            e[c.status as usize] += 1;
        }
        order.into_iter().map(|a| (a.clone(), m[&a])).collect()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "kit": "vouch-conformance",
            "spec": "vouch-0.1",
            "summary": {
                "pass": self.count(Status::Pass),
                "fail": self.count(Status::Fail),
                "skip": self.count(Status::Skip),
                "total": self.checks.len(),
            },
            "areas": self.by_area().into_iter().map(|(a, n)| json!({
                "area": a, "pass": n[0], "fail": n[1], "skip": n[2],
            })).collect::<Vec<_>>(),
            "checks": self.checks.iter().map(Check::to_json).collect::<Vec<_>>(),
        })
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let mut area = String::new();
        for c in &self.checks {
            if c.area != area {
                area = c.area.clone();
                out.push_str(&format!("\n{area}\n"));
            }
            let mark = match c.status {
                Status::Pass => "pass",
                Status::Fail => "FAIL",
                Status::Skip => "skip",
            };
            let d = match &c.decision {
                Some(p) => format!(" [DECISIONS: {p}]"),
                None => String::new(),
            };
            out.push_str(&format!("  {mark}  {}: {}{d}\n", c.name, c.detail));
        }
        out.push_str(&format!(
            "\n{} checks: {} pass, {} fail, {} skip\n",
            self.checks.len(),
            self.count(Status::Pass),
            self.count(Status::Fail),
            self.count(Status::Skip)
        ));
        out
    }
}
