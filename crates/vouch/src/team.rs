//! A team server's database (`vouch-postgres`): which one this process
//! uses, and handing it to the knowledge base and the review pages.
//!
//! It comes from `vouch serve --transport http --database URL` (or
//! `VOUCH_DATABASE_URL`; a stdio server is one agent's, launched with an
//! environment a repository's host config may set, so it takes neither),
//! else from `server.database` in the person's own config for the working
//! tree it names in `server.tree` — never from the repository's
//! `.vouch/config.yaml`: a cloned repository must not choose where a
//! person's writes are ordered, nor learn a password; and a person's other
//! clones and knowledge bases keep their own order. One process serves one
//! knowledge base, so the choice is the process's: set once, before the
//! knowledge base opens.

use std::sync::{Arc, OnceLock};
use vouch_core::index::kept::KeptIndex;
use vouch_core::index::sqlite::SqliteIndex;
use vouch_core::store::lock::{SharedHold, SharedLock};
use vouch_core::store::queue::SharedQueue;
use vouch_core::{Error, Kb};
use vouch_postgres::{Database, Sessions, TeamIndex, TeamLock, TeamQueue, TeamVectors};

/// The team database this process uses, and what it keeps there.
pub(crate) struct Team {
    /// The database, as messages name it (no password).
    pub(crate) shown: String,
    /// The write lock and the chain's head.
    pub(crate) lock: Arc<TeamLock>,
    /// The review pages' sessions and sign-in links.
    pub(crate) sessions: Arc<Sessions>,
    /// The vectors the replicas' models made, by text.
    pub(crate) vectors: Arc<TeamVectors>,
    /// The pending proposals.
    pub(crate) queue: Arc<TeamQueue>,
    /// The database itself, where the derived index is kept.
    db: Arc<Database>,
}

/// The process's choice: `None` inside means "no team database".
static CHOSEN: OnceLock<Result<Option<Team>, String>> = OnceLock::new();

/// Where the choice came from, for messages.
fn open(url: &str, origin: &str) -> Result<Option<Team>, String> {
    let url = url.trim();
    if url.is_empty() {
        return Ok(None);
    }
    let db = Database::new(url).map_err(|e| format!("{origin}: {}", e.message))?;
    let db = Arc::new(db);
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    // Unique per process even where host names and pids repeat (two
    // containers, each the pid 1 of its own): followers skip only their
    // own writes.
    let mut nonce = [0u8; 4];
    let _ = getrandom::fill(&mut nonce);
    let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    let writer = format!("vouch {host} pid {} {nonce}", std::process::id());
    Ok(Some(Team {
        shown: db.shown().to_string(),
        lock: Arc::new(TeamLock::new(db.clone(), &writer)),
        sessions: Arc::new(Sessions::new(db.clone())),
        vectors: Arc::new(TeamVectors::new(db.clone())),
        queue: Arc::new(TeamQueue::new(db.clone())),
        db,
    }))
}

/// `vouch serve --database URL`: the process's team database, chosen
/// before the knowledge base opens (the person's config is not read for
/// it then). An empty URL means none.
pub(crate) fn choose_by_flag(url: &str) -> Result<(), Error> {
    let chosen = CHOSEN.get_or_init(|| open(url, "--database"));
    chosen
        .as_ref()
        .map(|_| ())
        .map_err(|e| Error::invalid(e.clone()))
}

/// `server.database` of the person's config (`cfg`, read from `path`),
/// unless a flag chose first; then give `kb` the team's write lock, its
/// queue, its vectors and its derived index.
pub(crate) fn attach(kb: &mut Kb, from_config: Option<(&std::path::Path, &serde_json::Value)>) {
    let chosen = CHOSEN.get_or_init(|| {
        let Some((path, cfg)) = from_config else {
            return Ok(None);
        };
        let server = &cfg["server"];
        match (&server["database"], &server["tree"]) {
            (serde_json::Value::Null, _) => Ok(None),
            (serde_json::Value::String(url), serde_json::Value::String(tree)) => {
                if serves(kb, tree) {
                    open(url, &format!("{}: server.database", path.display()))
                } else {
                    // Another clone, another knowledge base: not the team's tree.
                    Ok(None)
                }
            }
            (serde_json::Value::String(_), _) => {
                kb.warn(format!(
                    "{}: server.database is set without server.tree (the team server's working \
                     tree, e.g. /srv/vouch/repo); not used: your other clones and knowledge bases \
                     must not take the team's lock",
                    path.display()
                ));
                Ok(None)
            }
            _ => Err(format!(
                "{}: server.database is not a URL string",
                path.display()
            )),
        }
    });
    match chosen {
        Ok(Some(team)) => {
            kb.share_lock(team.lock.clone());
            kb.share_vectors(team.vectors.clone());
            kb.share_queue(team.queue.clone());
            keep_index_in_database(kb, team);
        }
        Ok(None) => {}
        // Writing without the lock the other replicas take is what would
        // be unsafe; reading is not: every write is refused, saying why
        // (and the review queue, kept there, is not listed).
        Err(why) => {
            let unusable = Arc::new(Unusable(why.clone()));
            kb.share_lock(unusable.clone());
            kb.share_queue(unusable);
        }
    }
}

/// Serve `kb`'s reads from the derived index in the team database, which
/// every replica shares. A database that cannot be reached now leaves the
/// index in the files' own `state.db`, said once: reads go on (writes
/// wait for the database anyway).
fn keep_index_in_database(kb: &mut Kb, team: &Team) {
    let stem = kb.settings().retrieval.fts5_porter;
    match TeamIndex::open(team.db.clone(), stem) {
        Ok(tables) => kb.set_index(Box::new(KeptIndex::new(Arc::new(tables)))),
        Err(e) => kb.warn(format!(
            "the derived index in the team database cannot be opened ({}); this process \
             keeps its own state.db, built from the files, until it restarts",
            e.message
        )),
    }
}

/// Keep `kb`'s derived index in `dir` (`--index-dir`): a `state.db` of
/// this process's own, built from the files, instead of the team
/// database's.
pub(crate) fn keep_index_in(kb: &mut Kb, dir: &std::path::Path) -> Result<(), Error> {
    kb.set_index(Box::new(SqliteIndex::default()));
    kb.place_index(dir)
}

/// Whether `kb` reads the derived index in the team database.
pub(crate) fn index_in_database(kb: &Kb) -> bool {
    kb.index().as_any().is::<KeptIndex>()
}

/// Whether `kb` is the working tree `tree` (its project folder, the one
/// holding `.vouch/`).
fn serves(kb: &Kb, tree: &str) -> bool {
    let (Some(project), Ok(tree)) = (
        kb.layout().root().parent(),
        std::fs::canonicalize(tree.trim()),
    ) else {
        return false;
    };
    std::fs::canonicalize(project).is_ok_and(|p| p == tree)
}

/// The team database this process uses, if any.
pub(crate) fn current() -> Option<&'static Team> {
    CHOSEN
        .get()
        .and_then(|c| c.as_ref().ok())
        .and_then(Option::as_ref)
}

/// A team database that could not be configured: every write is refused.
struct Unusable(String);

impl SharedLock for Unusable {
    fn describe(&self) -> String {
        format!("a team database that is not usable ({})", self.0)
    }
    fn still_held(&self) -> vouch_core::Result<bool> {
        Ok(false)
    }
    fn peek_head(&self) -> vouch_core::Result<Option<vouch_core::store::lock::ChainHead>> {
        Err(Error::invalid(SharedLock::describe(self)))
    }
    fn acquire(&self) -> vouch_core::Result<Box<dyn SharedHold>> {
        Err(Error::invalid(format!(
            "nothing was written: the team database is configured but not usable: {}; fix it, \
             or remove it to write without one",
            self.0
        )))
    }
}

impl SharedQueue for Unusable {
    fn describe(&self) -> String {
        SharedLock::describe(self)
    }
    fn ids(&self) -> vouch_core::Result<Vec<String>> {
        Err(Error::invalid(format!(
            "the pending proposals are kept in the team database, which is configured but not \
             usable: {}",
            self.0
        )))
    }
    fn read(&self, _: &[String]) -> vouch_core::Result<Vec<(String, Vec<u8>)>> {
        self.ids().map(|_| Vec::new())
    }
    fn keep(&self, _: &[(String, Vec<u8>)]) -> vouch_core::Result<Vec<String>> {
        self.ids()
    }
    fn forget(&self, _: &[String]) -> vouch_core::Result<()> {
        self.ids().map(|_| ())
    }
}

/// `vouch team adopt`: this folder's audit log becomes the chain's head
/// the team database keeps (a person's choice that this history is the
/// team's). Answers the head replaced and the head recorded.
pub(crate) fn adopt(kb: &Kb) -> Result<serde_json::Value, Error> {
    let Some(team) = current() else {
        return Err(Error::invalid(
            "no team database is configured (vouch serve --database, VOUCH_DATABASE_URL or \
             server.database in your own config); there is no head to adopt",
        ));
    };
    let Some(head) = kb.audit_log().last_head() else {
        return Err(Error::invalid(
            "this knowledge base's audit log has no events yet: there is no head to adopt",
        ));
    };
    let before = team.lock.adopt(&head)?;
    Ok(serde_json::json!({
        "database": team.shown,
        "replaced": before.map(|h| serde_json::json!({"id": h.id, "hash": h.hash})),
        "head": {"id": head.id, "hash": head.hash},
    }))
}

/// `vouch team prune-vectors`: the team database's vectors of texts no
/// document holds any more removed (rows kept in the last hour left), and
/// with `other_models` every other model's.
pub(crate) fn prune_vectors(kb: &Kb, other_models: bool) -> Result<serde_json::Value, Error> {
    let (database, model, done) =
        kb.prune_shared_vectors(vouch_core::services::SHARED_PRUNE_GRACE, other_models)?;
    Ok(serde_json::json!({
        "database": database,
        "model": model,
        "removed": done.removed,
        "left": done.left,
        "other_models": {"removed": done.other_models_removed, "left": done.other_models_left},
    }))
}

/// [`prune_vectors`]'s answer for a person.
pub(crate) fn render_pruned(v: &serde_json::Value) -> String {
    let n = |p: &str| {
        v.pointer(p)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    let mut out = format!(
        "{}: removed {} rows of texts no document holds, left {} ({})\n",
        v["database"].as_str().unwrap_or_default(),
        n("/removed"),
        n("/left"),
        v["model"].as_str().unwrap_or_default(),
    );
    match (n("/other_models/removed"), n("/other_models/left")) {
        (0, 0) => {}
        (removed, 0) => out.push_str(&format!("removed {removed} rows of other models\n")),
        (_, left) => out.push_str(&format!(
            "{left} rows of other models left (--other-models removes them once every replica \
             runs this one)\n"
        )),
    }
    out
}

/// `vouch team pull`: `git pull` in the project holding `kb`, under the
/// knowledge base's write lock (and the team database's, when one orders
/// this tree), so no write interleaves with the merge; the head recorded
/// when the lock is given back is the merged log's, and every replica
/// hears of it. git's own output goes to the terminal; its exit code is
/// the command's.
pub(crate) fn pull(kb: &Kb, git_args: &[String]) -> Result<i32, Error> {
    let project = kb
        .layout()
        .root()
        .parent()
        .ok_or_else(|| Error::invalid("the knowledge base has no project folder"))?
        .to_path_buf();
    let args: Vec<String> = if git_args.is_empty() {
        vec!["--no-rebase".into(), "--no-edit".into()]
    } else {
        git_args.to_vec()
    };
    let status = kb.while_locked(|| {
        std::process::Command::new("git")
            .arg("pull")
            .args(&args)
            .current_dir(&project)
            .status()
    })?;
    let status = status.map_err(|e| Error::internal(format!("running git: {e}")))?;
    Ok(status.code().unwrap_or(1))
}
