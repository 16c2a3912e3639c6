//! The review pages in a real browser: `vouch ui` (the real binary) serves
//! them, headless Chromium driven through WebDriver (Selenium,
//! tests/ui-client/review.py) signs in with the printed one-time link,
//! approves one proposal, rejects one with a reason, and loads a page from
//! another origin that posts a forged approval. Then the files and the
//! audit log on disk must show exactly the two decisions, by the person.
//! Screenshots land in target/ui-screenshots/ for a person to look at.
//!
//! What it needs (`scripts/test.sh` installs both): `VOUCH_UI_CLIENT_PYTHON`,
//! a Python with the pinned Selenium (tests/ui-client/requirements.txt),
//! and Debian's chromium and chromium-driver (`VOUCH_CHROMIUM`,
//! `VOUCH_CHROMEDRIVER`, default /usr/bin/…). Missing either, the test
//! FAILS with what to do; it never skips.

use crate::common::Project;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

const HOW: &str = "run `scripts/test.sh` (it installs Debian's chromium and chromium-driver \
                   and the pinned Selenium into target/ui-client-venv), or set \
                   VOUCH_UI_CLIENT_PYTHON to a Python that has `pip install -r \
                   tests/ui-client/requirements.txt` and VOUCH_CHROMIUM / VOUCH_CHROMEDRIVER";

fn python() -> String {
    let p = std::env::var("VOUCH_UI_CLIENT_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into());
    let ok = Command::new(&p)
        .args(["-c", "import selenium"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{p} cannot import selenium; this test does not skip; {HOW}"
    );
    p
}

fn tool(var: &str, default: &str) -> String {
    let t = std::env::var(var)
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| default.into());
    assert!(
        Path::new(&t).is_file(),
        "{t} is missing ({var}); this test does not skip; {HOW}"
    );
    t
}

/// A running `vouch ui` and the sign-in URL it printed.
struct Ui {
    child: std::process::Child,
    url: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run the WebDriver client `script` (tests/ui-client/) with `args` and
/// the screenshot folder; what it saw (its JSON) and that folder.
fn drive(script: &str, args: &[&str]) -> (Value, std::path::PathBuf) {
    let python = python();
    let chromium = tool("VOUCH_CHROMIUM", "/usr/bin/chromium");
    let driver = tool("VOUCH_CHROMEDRIVER", "/usr/bin/chromedriver");
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ui-screenshots");
    let out = Command::new(&python)
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/ui-client")
                .join(script),
        )
        .args(args)
        .arg(&shots)
        .env("VOUCH_CHROMIUM", &chromium)
        .env("VOUCH_CHROMEDRIVER", &driver)
        .output()
        .expect("run the WebDriver client");
    assert!(
        out.status.success(),
        "{script} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{script} prints JSON ({e})"));
    (seen, shots)
}

fn start_ui(p: &Project, person: &str) -> Ui {
    let mut child = p
        .command(person)
        .arg("ui")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start vouch ui");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.contains("/ui/login?secret="),
        "vouch ui printed {url:?}"
    );
    Ui { child, url }
}

#[test]
fn a_person_reviews_in_chromium_and_a_forged_post_is_refused() {
    let p = Project::new();
    let s = p.source(
        "Ops notes.\nThe staging database is reset every Monday at 06:00 UTC.\n\
         Deploys are frozen on Fridays.\nThe on-call rotation changes on Wednesdays.\n",
    );
    let propose = |text: &str, quote: &str| -> String {
        let v = p.ok(
            "agent",
            &["propose-claim", text, "--quote", &format!("{s}={quote}")],
        );
        v["proposal_id"].as_str().unwrap().to_string()
    };
    let approve_id = propose(
        "Staging is reset every Monday",
        "The staging database is reset every Monday at 06:00 UTC",
    );
    let reject_id = propose(
        "Deploys are frozen on Mondays",
        "Deploys are frozen on Fridays",
    );
    let forged_id = propose(
        "On-call changes on Wednesdays",
        "The on-call rotation changes on Wednesdays",
    );

    let ui = start_ui(&p, "alice");
    let (seen, shots) = drive("review.py", &[&ui.url, &approve_id, &reject_id, &forged_id]);

    // What the browser saw.
    assert_eq!(seen["queue_count"], 3, "{seen:#}");
    assert_eq!(seen["actor"], "alice");
    assert_eq!(
        seen["queue_links"][0], "Staging is reset every Monday",
        "oldest first"
    );
    assert_eq!(
        seen["highlighted"][0], "The staging database is reset every Monday at 06:00 UTC",
        "the quoted span is highlighted in its source"
    );
    assert_eq!(seen["after_approve"], format!("Approved {approve_id}."));
    assert_eq!(seen["count_after_approve"], 2);
    assert_eq!(seen["after_reject"], format!("Rejected {reject_id}."));
    assert!(
        seen["decided_page"]
            .as_str()
            .unwrap()
            .contains("Decided: approved by alice"),
        "{seen:#}"
    );
    // Its provenance, from the decided proposal; the gate's health.
    assert_eq!(seen["why_gate"], "Its file is what the gate wrote.");
    assert_eq!(
        seen["why_highlighted"][0],
        "The staging database is reset every Monday at 06:00 UTC"
    );
    let story = seen["why_proposals"].as_str().unwrap();
    assert!(
        story.contains(&approve_id) && story.contains("alice"),
        "{story}"
    );
    assert!(
        seen["stats_queue"]
            .as_str()
            .unwrap()
            .starts_with("1 pending"),
        "{seen:#}"
    );
    let oldest = seen["stats_oldest"].as_str().unwrap();
    assert!(oldest.contains(&forged_id), "{oldest}");
    assert!(
        seen["stats_reviewers"].as_str().unwrap().contains("alice"),
        "{seen:#}"
    );
    let forged = seen["forged_page"].as_str().unwrap();
    assert!(
        forged.contains("Refused") && forged.contains("another site"),
        "{forged}"
    );
    assert!(
        seen["second_sign_in"]
            .as_str()
            .unwrap()
            .contains("not valid, or was used already"),
        "{seen:#}"
    );
    assert!(
        seen["signed_out_queue"]
            .as_str()
            .unwrap()
            .contains("not signed in")
    );
    drop(ui);

    // What is on disk: the two decisions, by alice; the forged one pending.
    let shown = |id: &str| p.ok("x", &["show", id])["object"].clone();
    let a = shown(&approve_id);
    assert_eq!(a["status"], "approved");
    assert_eq!(a["decided_by"], "alice");
    let claim = shown("staging-is-reset-every-monday");
    assert_eq!(claim["approved_by"], "alice");
    let r = shown(&reject_id);
    assert_eq!(r["status"], "rejected");
    assert_eq!(r["reason"], "the source says Tuesday, not Monday");
    assert_eq!(shown(&forged_id)["status"], "pending");
    assert_eq!(
        p.audit_events("alice"),
        ["proposal.approve", "proposal.reject"]
    );
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], true);
    for shot in [
        "queue.png",
        "proposal.png",
        "after-decisions.png",
        "forged-post.png",
        "provenance.png",
        "gate-health.png",
    ] {
        assert!(shots.join(shot).is_file(), "{shot} was not written");
    }
}

/// One agent session's 30 proposals reviewed with the keyboard alone, in
/// real Chromium: the queue groups them under the session's task; the
/// group page shows each whole; `j` visits each, `x` deselects one, `a`
/// approves the other 29 together; the one left is opened and rejected
/// with a reason, by keys. Keys and page loads are counted.
#[test]
fn a_session_of_30_is_reviewed_with_the_keyboard_alone() {
    let p = Project::new();
    let lines: Vec<String> = (1..=30)
        .map(|i| format!("Service {i} is owned by team {i}."))
        .collect();
    let s = p.source(&(lines.join("\n") + "\n"));
    let session = p.start_session("agent", "map service ownership");
    let mut proposed = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let quote = line.trim_end_matches('.');
        let v = p.ok(
            "agent",
            &[
                "propose-claim",
                &format!("Team {} owns service {}", i + 1, i + 1),
                "--quote",
                &format!("{s}={quote}"),
                "--session",
                &session,
            ],
        );
        proposed.push(v["proposal_id"].as_str().unwrap().to_string());
    }

    let ui = start_ui(&p, "alice");
    let (seen, shots) = drive("session.py", &[&ui.url]);
    eprintln!("{seen:#}");
    assert!(seen.get("error").is_none(), "{seen:#}");
    assert_eq!(seen["queue_count"], 30);
    assert_eq!(seen["focused"], "together", "j goes to the session first");
    assert_eq!(seen["group_count"], 30);
    assert!(
        seen["group_task"]
            .as_str()
            .unwrap()
            .contains("map service ownership"),
        "{seen:#}"
    );
    assert_eq!(seen["visited"], 30, "j visits every proposal");
    let left = seen["deselected"].as_str().unwrap().to_string();
    assert!(proposed.contains(&left));
    assert_eq!(seen["notice"], "Approved 29 proposal(s) together.");
    assert_eq!(seen["count_after"], 1);
    assert_eq!(seen["opened"], left.as_str());
    assert_eq!(seen["final"], format!("Rejected {left}."));
    drop(ui);

    // On disk: 29 approved by alice, the one deselected rejected with the
    // reason typed; one chain.
    let shown = |id: &str| p.ok("x", &["show", id])["object"].clone();
    for id in &proposed {
        let o = shown(id);
        if *id == left {
            assert_eq!(o["status"], "rejected");
            assert_eq!(o["reason"], "it says the opposite of its source");
        } else {
            assert_eq!(o["status"], "approved", "{id}");
            assert_eq!(o["decided_by"], "alice");
        }
    }
    assert_eq!(p.ok("x", &["status"])["pending"], 0);
    assert_eq!(p.ok("x", &["audit", "verify"])["ok"], true);
    // Three page loads for 29 approvals (before: a page and a click each).
    assert!(seen["loads"].as_u64().unwrap() <= 6, "{seen:#}");
    assert!(shots.join("group.png").is_file());
}
