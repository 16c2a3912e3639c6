//! What the log says about the gate, read in one pass ([`Trail`]): which
//! proposals were created, every event hash, and which durable objects an
//! approval or an import let in — what `unaudited` marks and the approve
//! integrity checks ask.

use super::AuditLog;
use crate::error::Result;
use serde::Deserialize;
use serde_json::Value;

/// What the log says about the gate, read in one pass: which proposals were
/// created (their `proposal.create` events), every event hash, and which
/// durable objects an approval or an import let in.
#[derive(Default)]
pub struct Trail {
    /// Each proposal's create event, by proposal id.
    pub created: std::collections::HashMap<String, Value>,
    /// Every event's `hash`.
    pub hashes: std::collections::HashSet<String>,
    /// Ids of the durable objects an approval or an import let in.
    pub admitted: std::collections::HashSet<String>,
    /// The sha256 of each durable file as the last event that wrote it
    /// recorded it (`data.written`), by its path inside `.vouch/`: a file
    /// that no longer hashes to it was edited by hand since.
    pub written: std::collections::HashMap<String, String>,
    /// The ids of the objects some event recorded writing (any kind).
    pub written_ids: std::collections::HashSet<String>,
    /// An import logged by a vouch that did not name what it wrote (1.x,
    /// or this one before it did): objects it brought cannot be told apart.
    pub legacy_import: bool,
    /// The log was begun by vouch 1.x (its `kb.init` event), whose `init`
    /// seeds a starter claim and page without any event.
    pub begun_by_1x: bool,
    /// Who proposed and who decided, as the log tells it.
    pub actors: Actors,
    /// Imports by an agent ([`Actors`]): event id, actor and the objects
    /// it named, none of them let in.
    pub agent_imports: Vec<(String, String, Vec<String>)>,
    /// Approvals that let nothing in ([`Unfounded`]): event id, actor,
    /// proposal id, object and why.
    pub unfounded: Vec<(String, String, String, String, Unfounded)>,
    /// Reverts that put back nothing ([`Actors::take`]): event id, actor,
    /// the event it names (`data.reverts`, `?` when none) and the files it
    /// recorded writing, none of them reviewed.
    pub unfounded_reverts: Vec<(String, String, String, Vec<String>)>,
}

/// Why an approval lets nothing in: no `proposal.create` came before it,
/// or an earlier event already decided its proposal (a proposal is
/// decided once). Such an approval was written by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfounded {
    /// No earlier `proposal.create` made the proposal.
    NeverProposed,
    /// An earlier approval or rejection decided it already.
    DecidedBefore,
}

/// What one event lets into the durable knowledge.
pub enum Admits {
    /// It lets nothing in.
    Nothing,
    /// It lets in these object ids.
    Objects(Vec<String>),
    /// An import that does not name its objects.
    Unnamed,
}

impl Admits {
    /// `proposal.approve` (and 1.x's `proposal.<kind>.approve`) admits its
    /// object, `object_ids[1]`; `bundle.import` the objects in
    /// `data.objects`; 1.x's `claim.supersede`/`claim.contradict` the
    /// relation its link derives.
    pub fn of(ev: &Value) -> Admits {
        AdmitFields::deserialize(ev).map_or(Admits::Nothing, |f| f.admits())
    }

    /// Could this log line admit anything, or record what it wrote? (Skips
    /// parsing the rest.)
    pub fn may_admit(line: &[u8]) -> bool {
        let has = |needle: &[u8]| memchr::memmem::find(line, needle).is_some();
        has(b"\"written\":")
            || has(b"\"claim.")
            || has(b".create\"")
            || has(b".reject\"")
            || has(b"\"page.archive\"")
            || has(b"\"lifecycle.revert\"")
            || has(b".approve\"")
            || has(b"\"bundle.import\"")
    }
}

/// What one event says of the durable files: what it admits and the
/// files it wrote with the sha256 of each ([`written`]). An event that
/// rewrites a file and records nothing (vouch 1.x's, or a forged bare
/// `claim.confirm`) leaves what was recorded of that file standing: the
/// file then reads as edited, never as reviewed.
pub struct Logged {
    /// What it lets in.
    pub admits: Admits,
    /// `(path inside .vouch/, sha256)` of each file it recorded writing.
    pub written: Vec<(String, String)>,
    /// Who logged it.
    pub actor: String,
    /// What it does to a proposal, if anything.
    pub step: Option<ProposalStep>,
    /// Whether it is an import (`bundle.import`).
    pub import: bool,
    /// The proposal it creates or decides (`object_ids[0]`), when it does.
    pub proposal: Option<String>,
    /// Set by [`Actors::take`] for a decision of a proposal that is not
    /// open (never created, or decided already), or a revert of what is not
    /// the last lifecycle change of each file it wrote: it let nothing in.
    pub unfounded: bool,
    /// For a lifecycle event (archive, supersede, contradict, confirm, cite,
    /// revert): its id and, for a revert, the event it names.
    pub lifecycle: Option<LifecycleStep>,
}

/// A lifecycle event, as [`Actors::take`] reads it.
pub struct LifecycleStep {
    /// Its id.
    pub event: String,
    /// For a revert (`lifecycle.revert`), the event it names
    /// (`data.reverts`; `Some(None)` when it names none); `None` for
    /// another lifecycle event.
    pub reverts: Option<Option<String>>,
}

impl Logged {
    /// What an event says.
    pub fn of(ev: &Value) -> Logged {
        AdmitFields::deserialize(ev).map_or_else(|_| Logged::nothing(), |f| f.logged())
    }

    /// [`Logged::of`] a log line, parsing only the fields it reads (an
    /// index rebuild reads every line of a log that may hold 250,000).
    pub fn of_line(line: &[u8]) -> Logged {
        serde_json::from_slice::<AdmitFields>(line)
            .map_or_else(|_| Logged::nothing(), |f| f.logged())
    }

    fn nothing() -> Logged {
        Logged {
            admits: Admits::Nothing,
            written: Vec::new(),
            actor: String::new(),
            step: None,
            import: false,
            proposal: None,
            unfounded: false,
            lifecycle: None,
        }
    }
}

/// Who the log shows proposing and deciding, read in order. Agents
/// propose; people and the reviewers they name decide. An import by an
/// actor that has proposed and never decided — an agent — lets nothing in
/// and records nothing as reviewed: an agent's import files proposals, it
/// never writes knowledge, so such an event was forged. (Under a personal
/// `trusted-agent` config an agent's own import does write: it stays
/// unaudited until a person imports it again.) A decision never makes an
/// actor who has proposed one who decides: an agent that forges a
/// decision stays an agent. And an approval lets in nothing unless its
/// proposal is open: created by an earlier `proposal.create` and not
/// decided since. A revert puts back nothing unless the event it names is
/// the last lifecycle change that recorded writing each file it writes (an
/// event that is not a lifecycle change records no state a revert may put
/// back, whatever its `data.before` says).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Actors {
    /// Actors of `proposal.create` events.
    pub proposed: std::collections::BTreeSet<String>,
    /// Actors of approvals and rejections made before they ever proposed.
    pub decided: std::collections::BTreeSet<String>,
    /// Proposals created and not decided yet. `None` when read back from
    /// an index written before it was kept: approvals then let in what
    /// they name, as they did.
    #[serde(default)]
    pub open: Option<std::collections::BTreeSet<String>>,
    /// The last lifecycle event that recorded writing each file, by path
    /// inside `.vouch/` (dropped when another event writes it): the one
    /// event a revert of that file may name. `None` when read back from an
    /// index written before it was kept: reverts then stand, as they did.
    #[serde(default)]
    pub changed_by: Option<std::collections::BTreeMap<String, String>>,
}

impl Default for Actors {
    fn default() -> Self {
        Actors {
            proposed: Default::default(),
            decided: Default::default(),
            open: Some(Default::default()),
            changed_by: Some(Default::default()),
        }
    }
}

/// The sha256 recorded, in place of an agent import's, for each file it
/// wrote: no file hashes to it, so the file never reads as reviewed.
pub const NOT_REVIEWED: &str = "not-reviewed";

/// The sha256 an approved delete records as what it wrote at the path of
/// the file it removed (`data.written`; the removed bytes' own sha256 is
/// in `data.removed`): no file hashes to it, so a file put back there by
/// hand never reads as reviewed, and a file missing there is accounted for.
pub const REMOVED: &str = "removed";

impl Actors {
    /// An actor the log shows proposing and never deciding.
    pub fn is_agent(&self, actor: &str) -> bool {
        self.proposed.contains(actor) && !self.decided.contains(actor)
    }

    /// Take in the next event; an agent's import is stripped of what it
    /// admits and of what it recorded writing (answered `true`), and so is
    /// a decision of a proposal that is not open (`logged.unfounded`).
    /// `decisions` says whether its decisions make its actor one who
    /// decides (not for a pull request's own events; never an actor who
    /// has proposed).
    pub fn take(&mut self, logged: &mut Logged, decisions: bool) -> bool {
        match logged.step {
            Some(ProposalStep::Create) => {
                self.proposed.insert(logged.actor.clone());
                if let (Some(open), Some(p)) = (&mut self.open, &logged.proposal) {
                    open.insert(p.clone());
                }
            }
            Some(ProposalStep::Approve | ProposalStep::Reject) => {
                let founded = match (&mut self.open, &logged.proposal) {
                    (None, _) => true,
                    (Some(open), Some(p)) => open.remove(p),
                    (Some(_), None) => false,
                };
                if !founded {
                    logged.unfounded = true;
                    strip(logged);
                } else if decisions && !self.proposed.contains(&logged.actor) {
                    self.decided.insert(logged.actor.clone());
                }
            }
            None => {}
        }
        self.take_lifecycle(logged);
        if !logged.import || !self.is_agent(&logged.actor) {
            return false;
        }
        strip(logged);
        true
    }

    /// Take in what an event wrote: a revert that does not name the last
    /// lifecycle change of every file it wrote is stripped (unfounded),
    /// and the files of a founded lifecycle change are its own to revert.
    fn take_lifecycle(&mut self, logged: &mut Logged) {
        let Some(changed_by) = &mut self.changed_by else {
            return;
        };
        let Some(LifecycleStep { event, reverts }) = &logged.lifecycle else {
            for (path, _) in &logged.written {
                changed_by.remove(path);
            }
            return;
        };
        let event = event.clone();
        if let Some(target) = reverts.clone() {
            let founded = logged
                .written
                .iter()
                .all(|(path, _)| target.is_some() && changed_by.get(path) == target.as_ref());
            if !founded {
                logged.unfounded = true;
                strip(logged);
            }
        }
        for (path, _) in &logged.written {
            if logged.unfounded {
                changed_by.remove(path);
            } else {
                changed_by.insert(path.clone(), event.clone());
            }
        }
    }
}

/// What an event admits and recorded writing, taken away: nothing it
/// names is let in, and no file it wrote reads as reviewed.
fn strip(logged: &mut Logged) {
    logged.admits = Admits::Nothing;
    for (_, sha) in &mut logged.written {
        *sha = NOT_REVIEWED.to_string();
    }
}

/// The files an event's `data.written` says it wrote, by path inside
/// `.vouch/`, with the sha256 of each.
pub fn written(data: &Value) -> Vec<(String, String)> {
    data.get("written")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(path, sha)| Some((path.clone(), sha.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The fields of an event that say what it admits.
#[derive(serde::Deserialize)]
struct AdmitFields<'a> {
    #[serde(borrow, default)]
    id: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    event: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    actor: std::borrow::Cow<'a, str>,
    #[serde(default)]
    object_ids: Vec<Value>,
    #[serde(default)]
    data: Value,
}

impl AdmitFields<'_> {
    fn logged(&self) -> Logged {
        Logged {
            admits: self.admits(),
            written: written(&self.data),
            actor: self.actor.to_string(),
            step: ProposalStep::of(&self.event),
            import: self.event == "bundle.import",
            proposal: ProposalStep::of(&self.event)
                .and(self.object_ids.first())
                .and_then(Value::as_str)
                .map(str::to_string),
            unfounded: false,
            lifecycle: crate::audit::is_lifecycle_event(&self.event).then(|| LifecycleStep {
                event: self.id.to_string(),
                reverts: (self.event == "lifecycle.revert").then(|| {
                    self.data
                        .get("reverts")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                }),
            }),
        }
    }

    fn admits(&self) -> Admits {
        let name = self.event.as_ref();
        let ids: Vec<&str> = self.object_ids.iter().filter_map(Value::as_str).collect();
        let approve = name == "proposal.approve"
            || (name.starts_with("proposal.") && name.ends_with(".approve"));
        if approve {
            return match self.object_ids.get(1).and_then(Value::as_str) {
                Some(o) => Admits::Objects(vec![o.to_string()]),
                None => Admits::Nothing,
            };
        }
        // vouch 1.x's supersede and contradict (person commands there, no
        // proposal) write the relation that mirrors the link and name it
        // third. Only the id that link derives is admitted.
        let derived = match (name, &ids[..]) {
            ("claim.supersede", [old, new, written]) => {
                (*written == format!("{new}--supersedes--{old}")).then_some(*written)
            }
            ("claim.contradict", [a, b, written]) => {
                (*written == format!("{a}--contradicts--{b}")).then_some(*written)
            }
            ("claim.supersede" | "claim.contradict", _) => None,
            _ if name == "bundle.import" => {
                return match self.data.get("objects").and_then(Value::as_array) {
                    Some(list) => Admits::Objects(
                        list.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect(),
                    ),
                    None => Admits::Unnamed,
                };
            }
            _ => None,
        };
        match derived {
            Some(id) => Admits::Objects(vec![id.to_string()]),
            None => Admits::Nothing,
        }
    }
}

/// What an event does to a proposal (`object_ids[0]`): ours
/// (`proposal.create`, `proposal.approve`, `proposal.reject`) and vouch
/// 1.x's, which name the kind (`proposal.claim.create`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProposalStep {
    /// The proposal was made.
    Create,
    /// The proposal was approved.
    Approve,
    /// The proposal was rejected.
    Reject,
}

impl ProposalStep {
    /// What an event name does to a proposal, if anything (ours or 1.x's).
    pub fn of(event: &str) -> Option<ProposalStep> {
        let rest = event.strip_prefix("proposal.")?;
        let verb = rest.rsplit('.').next()?;
        // `proposal.x.y.create` is no one's; one kind segment at most.
        if rest.matches('.').count() > 1 {
            return None;
        }
        match verb {
            "create" => Some(ProposalStep::Create),
            "approve" => Some(ProposalStep::Approve),
            "reject" => Some(ProposalStep::Reject),
            _ => None,
        }
    }
}

impl Trail {
    /// The trail of the whole log.
    pub fn read(log: &AuditLog) -> Result<Trail> {
        Ok(Self::of(log.read_all()?))
    }

    /// The trail of these events (e.g. [`AuditLog::read_parsed`]'s).
    pub fn of(events: Vec<Value>) -> Trail {
        let mut t = Trail::default();
        for ev in events {
            // An event twice (a cherry-pick merged back) is one event: its
            // second copy decides nothing again.
            if let Some(h) = ev.get("hash").and_then(Value::as_str)
                && !t.hashes.insert(h.to_string())
            {
                continue;
            }
            if ev
                .get("event")
                .and_then(Value::as_str)
                .and_then(ProposalStep::of)
                == Some(ProposalStep::Create)
                && let Some(p) = ev
                    .get("object_ids")
                    .and_then(Value::as_array)
                    .and_then(|ids| ids.first())
                    .and_then(Value::as_str)
            {
                t.created.insert(p.to_string(), ev.clone());
            }
            let mut logged = Logged::of(&ev);
            if let (true, Admits::Objects(ids)) = (t.actors.is_agent(&logged.actor), &logged.admits)
                && logged.import
                && !ids.is_empty()
            {
                t.agent_imports.push((
                    ev.get("id")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_string(),
                    logged.actor.clone(),
                    ids.clone(),
                ));
            }
            t.actors.take(&mut logged, true);
            if logged.unfounded && logged.step == Some(ProposalStep::Approve) {
                let proposal = logged.proposal.clone().unwrap_or_default();
                let why = if t.created.contains_key(&proposal) {
                    Unfounded::DecidedBefore
                } else {
                    Unfounded::NeverProposed
                };
                let object = ev
                    .get("object_ids")
                    .and_then(|ids| ids.get(1))
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                t.unfounded.push((
                    ev.get("id")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_string(),
                    logged.actor.clone(),
                    proposal,
                    object.to_string(),
                    why,
                ));
            }
            if logged.unfounded
                && let Some(LifecycleStep {
                    event,
                    reverts: Some(target),
                }) = &logged.lifecycle
            {
                t.unfounded_reverts.push((
                    event.clone(),
                    logged.actor.clone(),
                    target.clone().unwrap_or_else(|| "?".into()),
                    logged.written.iter().map(|(p, _)| p.clone()).collect(),
                ));
            }
            for (path, sha) in logged.written {
                t.written_ids
                    .insert(crate::store::layout::id_of_inside(&path).to_string());
                t.written.insert(path, sha);
            }
            match logged.admits {
                Admits::Nothing => {}
                Admits::Objects(ids) => t.admitted.extend(ids),
                Admits::Unnamed => t.legacy_import = true,
            }
            if ev.get("event").and_then(Value::as_str) == Some("kb.init") {
                t.begun_by_1x = true;
            }
        }
        t
    }

    /// Did an approval or an import let this durable object in?
    pub fn admits(&self, object_id: &str) -> bool {
        self.admitted.contains(object_id)
    }

    /// Whether the knowledge file at `path` (inside `.vouch/`), holding
    /// `bytes`, is reviewed knowledge: its id let in by an approval or an
    /// import, and the file what the last event that wrote it recorded.
    pub fn reviewed(&self, path: &str, bytes: &[u8]) -> bool {
        self.admits(crate::store::layout::id_of_inside(path)) && !self.edited(path, bytes)
    }

    /// Whether the file at `path` (inside `.vouch/`) holds `bytes` other
    /// than the last event that wrote it recorded: edited by hand since —
    /// or never written by an event that recorded it, while its id's were
    /// (a page written by hand under the id of an approved entity). `false`
    /// when no event recorded writing its id (a vouch before this one, or
    /// 1.x).
    pub fn edited(&self, path: &str, bytes: &[u8]) -> bool {
        match self.written.get(path) {
            Some(sha) => *sha != crate::ids::content_sha256(bytes),
            None => self
                .written_ids
                .contains(crate::store::layout::id_of_inside(path)),
        }
    }
}
