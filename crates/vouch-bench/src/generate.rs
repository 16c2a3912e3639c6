//! The seeded, realistic knowledge-base generator.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use vouch_core::clock::SystemClock;
use vouch_core::ids::{sha256_hex, slugify};
use vouch_core::methods::dispatch;
use vouch_core::model::*;
use vouch_core::store::Dir;
use vouch_core::stored::Stored;
use vouch_core::{Caller, Kb, Transport};

/// The seeded generator every run builds the same KB with.
pub(crate) type Rng = vouch_core::clock::SeededRng;

pub(crate) const SYSTEMS: &[&str] = &[
    "billing",
    "auth",
    "gateway",
    "search",
    "payments",
    "ledger",
    "inventory",
    "notifications",
    "scheduler",
    "reporting",
    "identity",
    "storage",
    "analytics",
    "checkout",
    "shipping",
    "catalog",
    "pricing",
    "onboarding",
    "audit",
    "metrics",
    "ingest",
    "export",
    "sync",
    "mobile",
    "webhooks",
    "email",
    "sso",
    "cache",
    "queue",
    "frontend",
];
pub(crate) const COMPONENTS: &[&str] = &[
    "worker",
    "api",
    "database",
    "cron job",
    "consumer",
    "load balancer",
    "migration",
    "config",
    "dashboard",
    "retry policy",
    "rate limiter",
    "feature flag",
    "schema",
    "backup",
    "replica",
    "deploy pipeline",
    "alerting rule",
    "token store",
    "index",
    "connection pool",
];
pub(crate) const FACTS: &[&str] = &[
    "retries failed requests {n} times with exponential backoff",
    "times out after {n} seconds",
    "keeps {n} days of history",
    "is deployed every {day}",
    "rotates its signing keys every {n} hours",
    "must be restarted after a schema change",
    "reads from the primary only during month-end close",
    "pages the on-call engineer when errors exceed {n} per minute",
    "caches responses for {n} minutes",
    "was migrated to Postgres {n} in {month}",
    "depends on the {other} service for authentication",
    "is owned by the {team} team",
    "limits each client to {n} requests per second",
    "writes an audit record for every change",
    "drops messages older than {n} hours",
    "requires approval from {team} before deploys",
    "uses {n} shards keyed by customer id",
    "is blocked on the {other} upgrade",
    "falls back to the {other} replica when the primary is down",
    "encrypts data at rest with keys from the vault",
];
pub(crate) const TEAMS: &[&str] = &[
    "platform", "payments", "growth", "security", "data", "infra", "mobile", "support",
];
pub(crate) const DAYS: &[&str] = &["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"];
pub(crate) const MONTHS: &[&str] = &["March", "June", "September", "December"];
/// Paraphrase vocabulary used only in queries: words an agent might type.
pub(crate) const TASKS: &[&str] = &[
    "fix the {s} {c} timeout",
    "why does {s} retry so often",
    "who owns {s}",
    "deploy schedule for {s}",
    "how long does {s} keep history",
    "rotate {s} signing keys",
    "{s} {c} rate limit",
    "what does {s} depend on",
    "debug {s} {c} errors after a schema change",
    "{s} cache expiry",
];

/// A made-up project name ("Kelvara"): two or three syllables from the index.
pub(crate) fn codename(mut i: usize) -> String {
    const SYLLABLES: &[&str] = &[
        "ka", "vel", "dor", "mi", "tan", "ro", "zek", "lu", "bri", "son", "qua", "fen", "ith",
        "mar", "no", "sel", "thu", "gar", "pe", "lin", "xo", "ru", "dal", "vin",
    ];
    let mut out = String::new();
    for _ in 0..3 {
        out.push_str(SYLLABLES[i % SYLLABLES.len()]);
        i /= SYLLABLES.len();
        if i == 0 && out.len() > 3 {
            break;
        }
    }
    let mut chars = out.chars();
    chars
        .next()
        .map(|f| f.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

pub(crate) fn fill(template: &str, rng: &mut Rng) -> String {
    let mut out = template.to_string();
    for (key, list) in [
        ("{team}", TEAMS),
        ("{other}", SYSTEMS),
        ("{day}", DAYS),
        ("{month}", MONTHS),
        ("{s}", SYSTEMS),
        ("{c}", COMPONENTS),
    ] {
        while out.contains(key) {
            let v = *rng.pick(list);
            out = out.replacen(key, v, 1);
        }
    }
    while out.contains("{n}") {
        let n = 2 + rng.below(98);
        out = out.replacen("{n}", &n.to_string(), 1);
    }
    out
}

/// A generated KB and what to ask it.
pub struct Generated {
    /// The project folder (holding `.vouch/`), removed when dropped.
    pub dir: tempfile::TempDir,
    /// 200 search queries: three in four name a codename, one in four is
    /// two common words.
    pub queries: Vec<String>,
    /// 100 context tasks, each a sentence naming a codename.
    pub tasks: Vec<String>,
    /// How many of each thing it holds (claims by status, sources,
    /// evidence, entities, relations, pages, pending proposals).
    pub counts: Value,
}

impl Generated {
    /// The project folder.
    pub fn project(&self) -> &Path {
        self.dir.path()
    }
    /// Its `.vouch/` folder.
    pub fn vouch(&self) -> PathBuf {
        self.dir.path().join(".vouch")
    }
}

/// Write `text` to `path`; panics naming the path when it cannot.
pub(crate) fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// One claim text drawn from `rng` ("The billing worker of Kelvara times
/// out after 30 seconds"), and the codename it names, one of `codenames`.
fn claim_text(rng: &mut Rng, codenames: usize) -> (String, String) {
    let s = *rng.pick(SYSTEMS);
    let c = *rng.pick(COMPONENTS);
    let fact = fill(rng.pick::<&str>(FACTS), rng);
    let code = codename(rng.below(codenames));
    (format!("The {s} {c} of {code} {fact}"), code)
}

/// How many codenames a KB of `n` claims names: real KBs name many
/// specific things (projects, hosts, customers), so a query can be as
/// narrow as an agent's usually is.
fn codenames_for(n: usize) -> usize {
    (n / 20).max(50)
}

/// `n` claim texts as [`generate`] writes them.
pub(crate) fn generate_texts(n: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| claim_text(&mut rng, codenames_for(n)).0)
        .collect()
}

/// Write `object` to its file in `layout`.
fn put<T: Stored>(layout: &vouch_core::store::Layout, object: &T) {
    write(
        &layout.file(T::DIR, object.id()).expect("path"),
        &object.encode().expect("encode"),
    );
}

/// One `bundle.import` event admitting every claim, page, entity and
/// relation written above, with the sha256 of each file (`data.written`),
/// as an import of a reviewed KB logs them: reads then check what a real
/// KB's are checked for (admission, and that each file is what was
/// written), not only find every object unaudited.
fn admit_as_imported(kb: &Kb) {
    let mut objects = Vec::new();
    let mut written = serde_json::Map::new();
    for dir in [Dir::Claims, Dir::Pages, Dir::Entities, Dir::Relations] {
        for id in kb.ids(dir).expect("ids") {
            let path = kb.layout().file(dir, &id).expect("path");
            let bytes = std::fs::read(&path).expect("read");
            written.insert(
                kb.layout().inside(&path),
                json!(vouch_core::ids::content_sha256(&bytes)),
            );
            objects.push(id);
        }
    }
    let mut ev = AuditEvent {
        id: sha256_hex(b"bench-import")[..32].to_string(),
        event: "bundle.import".into(),
        actor: "bench-reviewer".into(),
        created_at: kb.now(),
        object_ids: vec![sha256_hex(b"bench-bundle")],
        dry_run: false,
        reversible: false,
        data: json!({"objects": objects, "written": written}),
        prev_hash: String::new(),
        hash: String::new(),
        extra: Default::default(),
    };
    kb.audit_log()
        .append(std::slice::from_mut(&mut ev))
        .expect("append the import event");
}

/// A realistic KB of `n` approved claims, written as files: one source per
/// ten claims whose lines the claims quote as span evidence, entities and
/// relations, pages that cite claims, superseded, contested and archived
/// claims, and pending proposals made through the gate. The same `seed`
/// writes the same KB.
pub fn generate(n: usize, seed: u64) -> Generated {
    let dir = tempfile::tempdir().expect("tempdir");
    Kb::init(dir.path(), "bench", None).expect("init");
    let kb = Kb::open(&dir.path().join(".vouch"), Arc::new(SystemClock::default())).unwrap();
    let layout = kb.layout();
    let mut rng = Rng::new(seed);
    let now = kb.now();

    // Per N claims: N/20 entities and relations, N/100 pages and pending
    // proposals.
    let n_entities = (n / 20).max(1);
    let n_relations = n_entities;
    let (n_pages, n_pending) = ((n / 100).max(1), (n / 100).max(1));
    let entity_ids: Vec<String> = (0..n_entities)
        .map(|i| {
            let s = SYSTEMS[i % SYSTEMS.len()];
            let c = COMPONENTS[(i / SYSTEMS.len()) % COMPONENTS.len()];
            let name = format!("{s} {c} {i}");
            let e = Entity {
                id: slugify(&name),
                name: name.clone(),
                entity_type: if i % 3 == 0 {
                    EntityType::System
                } else {
                    EntityType::Tool
                },
                aliases: vec![format!("{s}-{c}")],
                description: Some(format!("The {c} of the {s} service.")),
                tags: vec![s.to_string()],
                created_at: now,
                updated_at: now,
                approved_by: Some("bench-reviewer".into()),
                extra: Default::default(),
            };
            put(layout, &e);
            e.id
        })
        .collect();

    let mut claim_ids: Vec<String> = Vec::with_capacity(n);
    let mut evidence_ids: Vec<String> = Vec::with_capacity(n);
    let mut source_ids: Vec<String> = Vec::new();
    let mut texts: Vec<String> = Vec::with_capacity(n);
    let mut codenames: Vec<String> = Vec::with_capacity(n);
    for _ in 0..n {
        let (text, code) = claim_text(&mut rng, codenames_for(n));
        texts.push(text);
        codenames.push(code);
    }
    for chunk_start in (0..n).step_by(10) {
        let chunk = &texts[chunk_start..(chunk_start + 10).min(n)];
        let content = chunk
            .iter()
            .map(|t| format!("{t}."))
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
        let id = sha256_hex(content.as_bytes());
        let source = Source {
            id: id.clone(),
            source_type: SourceType::File,
            locator: format!("docs/notes/{}.md", chunk_start / 10),
            title: Some(format!("Team notes {}", chunk_start / 10)),
            hash: Some(id.clone()),
            immutable: true,
            scope: None,
            byte_size: Some(content.len() as u64),
            media_type: "text/markdown".into(),
            created_at: now,
            metadata: None,
            tags: vec![],
            extra: Default::default(),
        };
        std::fs::create_dir_all(layout.source_dir(&id).unwrap()).unwrap();
        write(&layout.source_content(&id).unwrap(), &content);
        write(
            &layout.source_meta(&id).unwrap(),
            &vouch_core::store::yaml::to_yaml(&source).unwrap(),
        );
        for (line, text) in chunk.iter().enumerate() {
            let quote = format!("{text}.");
            let ev = Evidence {
                // Derived from the source and the quote, as vouch derives
                // it (an id that is not is refused as another span's).
                id: vouch_core::sources::evidence_id(&id, &quote),
                source_id: id.clone(),
                source_type: Some(SourceType::File),
                locator: format!("L{0}-L{0}", line + 1),
                hash: Some(sha256_hex(quote.as_bytes())),
                quote: Some(quote),
                created_at: now,
                extra: Default::default(),
            };
            put(layout, &ev);
            evidence_ids.push(ev.id);
        }
        source_ids.push(id);
    }
    for (i, text) in texts.iter().enumerate() {
        let slug = slugify(text);
        claim_ids.push(format!("{}-{i}", &slug[..slug.len().min(48)]));
    }
    let mut by_status = std::collections::BTreeMap::<&str, usize>::new();
    for i in 0..n {
        let bucket = i % 100;
        let (status, superseded_by, contradicts) = match bucket {
            0..=4 if i + 1 < n => (
                ClaimStatus::Superseded,
                Some(claim_ids[i + 1].clone()),
                vec![],
            ),
            5 | 6 if i + 1 < n => (
                ClaimStatus::Contested,
                None,
                vec![claim_ids[if bucket == 5 { i + 1 } else { i - 1 }].clone()],
            ),
            7 => (ClaimStatus::Archived, None, vec![]),
            8..=35 => (ClaimStatus::Stable, None, vec![]),
            _ => (ClaimStatus::Working, None, vec![]),
        };
        *by_status.entry(status.as_str()).or_default() += 1;
        let claim = Claim {
            id: claim_ids[i].clone(),
            text: texts[i].clone(),
            claim_type: if i % 7 == 0 {
                ClaimType::Decision
            } else {
                ClaimType::Fact
            },
            status,
            confidence: 0.5 + (rng.below(46) as f64) / 100.0,
            evidence: vec![evidence_ids[i].clone()],
            entities: vec![entity_ids[rng.below(n_entities)].clone()],
            superseded_by,
            contradicts,
            scope: None,
            tags: vec![],
            created_at: now,
            updated_at: now,
            last_confirmed_at: None,
            approved_by: Some("bench-reviewer".into()),
            extra: Default::default(),
            // The claim before it, when that one is superseded.
            supersedes: if i > 0 && (i - 1) % 100 <= 4 {
                vec![claim_ids[i - 1].clone()]
            } else {
                vec![]
            },
        };
        put(layout, &claim);
    }
    for i in 0..n_relations {
        let a = &entity_ids[rng.below(n_entities)];
        let b = &entity_ids[rng.below(n_entities)];
        let r = Relation {
            id: format!("rel-{i}"),
            source: a.clone(),
            relation: RelationType::DependsOn,
            target: b.clone(),
            confidence: 0.8,
            evidence: vec![evidence_ids[rng.below(n)].clone()],
            created_at: now,
            updated_at: now,
            approved_by: Some("bench-reviewer".into()),
            extra: Default::default(),
        };
        put(layout, &r);
    }
    for i in 0..n_pages {
        let s = SYSTEMS[i % SYSTEMS.len()];
        let cited: Vec<usize> = (0..5).map(|_| rng.below(n)).collect();
        let body = cited
            .iter()
            .map(|&k| format!("- {}", texts[k]))
            .collect::<Vec<_>>()
            .join("\n");
        let page = Page {
            id: format!("{s}-runbook-{i}"),
            title: format!("{s} runbook {i}"),
            page_type: PageType::Workflow,
            status: PageStatus::Active,
            claims: cited.iter().map(|&k| claim_ids[k].clone()).collect(),
            entities: vec![],
            sources: vec![source_ids[cited[0] / 10].clone()],
            tags: vec![s.to_string()],
            created_at: now,
            updated_at: now,
            approved_by: Some("bench-reviewer".into()),
            extra: Default::default(),
            body: format!("# {s} runbook\n\n{body}\n"),
        };
        put(layout, &page);
    }
    admit_as_imported(&kb);
    // Pending proposals go through the gate, as an agent's would.
    let agent = Caller::new("bench-agent", Transport::Jsonl);
    for i in 0..n_pending {
        let text = format!(
            "{} (pending review {i})",
            fill("The {s} {c} needs review", &mut rng)
        );
        dispatch(
            &kb,
            &agent,
            "kb.propose_claim",
            json!({"text": text, "evidence": [evidence_ids[i % n]]}),
        )
        .expect("propose");
    }
    // A mix: most queries name something specific (a codename with a word
    // from one of its claims); one in four is only common words.
    let queries = (0..200)
        .map(|_| {
            let i = rng.below(n);
            let words: Vec<&str> = texts[i].split(' ').filter(|w| w.len() > 3).collect();
            let word = words[rng.below(words.len())];
            match rng.below(4) {
                0 => codenames[i].clone(),
                1 | 2 => format!("{} {word}", codenames[i]),
                _ => format!("{} {}", *rng.pick(SYSTEMS), *rng.pick(COMPONENTS)),
            }
        })
        .collect();
    let tasks = (0..100)
        .map(|_| {
            let i = rng.below(n);
            format!(
                "{} for {}",
                fill(rng.pick::<&str>(TASKS), &mut rng),
                codenames[i]
            )
        })
        .collect();
    let counts = json!({
        "claims": n,
        "claim_status": by_status,
        "sources": source_ids.len(),
        "evidence": evidence_ids.len(),
        "entities": n_entities,
        "relations": n_relations,
        "pages": n_pages,
        "pending": n_pending,
    });
    Generated {
        dir,
        queries,
        tasks,
        counts,
    }
}
