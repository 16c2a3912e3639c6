//! Proposing: drafts normalized and validated, proposal files written,
//! object ids reserved; imported proposals (lifecycle proposals are
//! `lifecycle_proposals.rs`).

use super::*;
use crate::secrets;

pub(super) struct ProposeInput {
    pub(super) draft: Draft,
    /// Claims a pending proposal would create that a relation may join
    /// ([`propose_relation_awaiting`]); checked to be pending.
    pub(super) awaiting: HashSet<String>,
    /// Citations as given (spans not yet minted), for claims and relations.
    pub(super) citations: Vec<Citation>,
    pub(super) session_id: Option<String>,
    pub(super) rationale: Option<String>,
    pub(super) dry_run: bool,
    /// What to do with a secret in the text it would store.
    pub(super) secrets: SecretsPolicy,
}

impl ProposeInput {
    /// The pending proposal `id` of this input, for object `object_id`.
    fn proposal(
        &self,
        caller: &Caller,
        id: &str,
        object_id: &str,
        now: Timestamp,
    ) -> Result<Proposal> {
        pending_proposal(
            caller,
            id,
            object_id,
            now,
            &self.draft,
            self.session_id.clone(),
            self.rationale.clone(),
        )
    }
}

/// The [`ProposeInput`] of `draft` with its citations and the claims it
/// may await (none when not given), and the options every `kb.propose_*`
/// params struct `p` carries under the same names: a macro, as those
/// structs share the fields but no type.
macro_rules! input_of {
    ($p:ident, $draft:expr) => {
        input_of!($p, $draft, citations: Vec::new(), awaiting: HashSet::new())
    };
    ($p:ident, $draft:expr, citations: $citations:expr, awaiting: $awaiting:expr) => {
        ProposeInput {
            draft: $draft,
            awaiting: $awaiting,
            citations: $citations,
            session_id: $p.session_id,
            rationale: $p.rationale,
            dry_run: $p.dry_run,
            secrets: $p.secrets,
        }
    };
}

pub(super) fn ids_only(cites: &[Citation]) -> Vec<String> {
    cites
        .iter()
        .map(|c| match c {
            Citation::Id(id) => id.clone(),
            Citation::Span { source_id, .. } => source_id.clone(),
        })
        .collect()
}

/// `kb.propose_claim`: propose a cited claim for review. A valid one
/// lists approved claims almost the same in meaning, when an embedding
/// model is at hand.
pub fn propose_claim(kb: &Kb, caller: &Caller, p: ProposeClaimParams) -> Result<ProposeResult> {
    let text = p.text.trim().to_string();
    let mut result = propose_claim_draft(kb, caller, p)?;
    if result.valid {
        result.meta.possible_duplicates = near_duplicates(kb, &text);
    }
    Ok(result)
}

/// Approved claims almost the same in meaning as a proposed claim's
/// `text`, for the proposer to cite or supersede instead; empty without an
/// embedding model.
fn near_duplicates(kb: &Kb, text: &str) -> Vec<crate::model::meta::NearDuplicate> {
    crate::retrieval::semantic::near_duplicates(
        kb,
        text,
        crate::retrieval::semantic::ProposedText::Embed,
    )
    .unwrap_or_default()
}

pub(super) fn propose_claim_draft(
    kb: &Kb,
    caller: &Caller,
    p: ProposeClaimParams,
) -> Result<ProposeResult> {
    propose(kb, caller, claim_input(p))
}

/// What a claim's params propose.
fn claim_input(p: ProposeClaimParams) -> ProposeInput {
    let draft = Draft::Claim(ClaimDraft {
        text: p.text.trim().to_string(),
        claim_type: p.claim_type.unwrap_or(ClaimType::Observation),
        confidence: p.confidence.unwrap_or(0.7),
        evidence: ids_only(&p.evidence),
        entities: p.entities,
        scope: p.scope.map(|s| Value::String(s.as_str().into())),
        tags: p.tags,
        metadata: p.metadata,
        supersedes: p.supersedes,
    });
    input_of!(p, draft, citations: p.evidence, awaiting: HashSet::new())
}

/// Propose many claims in one pass (a knowledge import): each is checked as
/// [`propose_claim`] checks it, then every valid one is written together —
/// one lock, the files staged and fsynced together under a journal, one
/// audit append — so a crash leaves all of them or none (the next command
/// completes a batch whose events were logged, and discards one whose were
/// not). One result per claim, in order. Claims naming a session are
/// proposed one by one (their session file is updated with each).
pub fn propose_claims(
    kb: &Kb,
    caller: &Caller,
    claims: Vec<ProposeClaimParams>,
) -> Result<Vec<ProposeResult>> {
    check_actor(&caller.actor)?;
    let texts: Vec<String> = claims.iter().map(|p| p.text.trim().to_string()).collect();
    let mut results = propose_many(kb, caller, claims.into_iter().map(claim_input).collect())?;
    for (r, text) in results.iter_mut().zip(texts) {
        if r.valid && !r.dry_run {
            r.meta.possible_duplicates = near_duplicates(kb, &text);
        }
    }
    Ok(results)
}

fn propose_many(kb: &Kb, caller: &Caller, inputs: Vec<ProposeInput>) -> Result<Vec<ProposeResult>> {
    let mut results: Vec<Option<ProposeResult>> = Vec::with_capacity(inputs.len());
    let mut batched: Vec<(usize, ProposeInput)> = Vec::new();
    let mut recorded: HashMap<usize, Value> = HashMap::new();
    for (i, mut input) in inputs.into_iter().enumerate() {
        if input.session_id.is_some() {
            results.push(Some(propose(kb, caller, input)?));
            continue;
        }
        // One fact holding a secret is refused alone, as an invalid one is.
        match screen(caller, &mut input) {
            Ok(Some(r)) => {
                recorded.insert(i, r);
            }
            Ok(None) => {}
            Err(e) if matches!(e.kind, ErrorKind::HoldsSecret | ErrorKind::GateDenied) => {
                results.push(Some(invalid(&input, vec![e.message])));
                continue;
            }
            Err(e) => return Err(e),
        }
        let errors = validate(
            kb,
            &input.draft,
            Some(&input.citations),
            None,
            &HashSet::new(),
        );
        let errors = {
            let mut p = Problems(errors);
            if let Some(r) = &input.rationale {
                check_controls(&mut p, "rationale", r);
            }
            p.0
        };
        if errors.is_empty() {
            batched.push((i, input));
            results.push(None);
        } else {
            results.push(Some(invalid(&input, errors)));
        }
    }
    if !batched.is_empty() {
        let _lock = kb.lock()?;
        let queue = queue_objects(kb)?;
        let mut objects_taken: HashSet<(ProposalKind, String)> = HashSet::new();
        let mut ids_taken: HashSet<String> = HashSet::new();
        let mut minted: HashSet<String> = HashSet::new();
        let mut batch = atomic::Batch::new(kb.layout().root());
        let mut events = Vec::new();
        let now = kb.now();
        for (i, mut input) in batched {
            let kind = input.draft.kind();
            let key = object_key(kind).to_string();
            let object_id = free_object_id(kb, kind, &input.draft.slug_seed(), |oid| {
                queue.contains(&(kind, oid.to_string()))
                    || objects_taken.contains(&(kind, oid.to_string()))
            });
            objects_taken.insert((kind, object_id.clone()));
            let done = |proposal_id: String| ProposeResult {
                review_url: kb.review_link(&proposal_id),
                proposal_id,
                object: BTreeMap::from([(key.clone(), object_id.clone())]),
                valid: true,
                errors: Vec::new(),
                dry_run: input.dry_run,
                meta: ReadMeta::default(),
            };
            if input.dry_run {
                results[i] = Some(done(String::new()));
                continue;
            }
            let mut ids = Vec::new();
            for c in &input.citations {
                ids.push(match c {
                    Citation::Id(id) => id.clone(),
                    Citation::Span { source_id, quote } => {
                        match crate::sources::evidence_for(kb, source_id, quote)? {
                            crate::sources::EvidenceFor::Held(r) => r.evidence_id,
                            crate::sources::EvidenceFor::New(ev, r) => {
                                if minted.insert(ev.id.clone()) {
                                    events.push(crate::sources::evidence_event(kb, caller, &ev));
                                    batch.write(
                                        kb.layout().file(Dir::Evidence, &ev.id)?,
                                        crate::stored::Stored::encode(&*ev)?.into_bytes(),
                                    );
                                }
                                r.evidence_id
                            }
                        }
                    }
                });
            }
            input.draft.cite(ids);
            let proposal_id = new_proposal_id_except(kb, &now, &ids_taken)?;
            ids_taken.insert(proposal_id.clone());
            let proposal = input.proposal(caller, &proposal_id, &object_id, now)?;
            events.push(create_event(
                kb,
                caller,
                &proposal,
                secrets_data(recorded.remove(&i)),
            )?);
            batch.write(
                kb.layout().file(Dir::Proposed, &proposal_id)?,
                crate::store::yaml::to_yaml(&proposal)?.into_bytes(),
            );
            results[i] = Some(done(proposal_id));
        }
        if !batch.is_empty() {
            for dir in [Dir::Proposed, Dir::Evidence] {
                let path = kb.layout().dir(dir);
                crate::store::nofollow::ensure_dirs(kb.layout().root(), &path)
                    .map_err(|e| Error::io(&path, e))?;
            }
            // Staged and journaled before the events are logged: a crash
            // from here on is finished by the next command if they made it
            // to the log, and discarded if not.
            let (staged, batch_sha) = batch.stage_journaled(&events[0].id)?;
            events[0].data["batch_sha256"] = json!(batch_sha);
            if let Err(e) = kb.append_audit(&mut events) {
                staged.abandon();
                return Err(e);
            }
            crate::fail::point("propose.batch.logged");
            staged.finish().map_err(|e| {
                Error::internal(format!(
                    "proposing failed while writing ({e}); it is logged, and the next command \
                     completes it"
                ))
            })?;
        }
    }
    Ok(results
        .into_iter()
        .map(|r| r.expect("every input answered"))
        .collect())
}

/// `kb.propose_page`: propose a markdown page for review.
pub fn propose_page(kb: &Kb, caller: &Caller, p: ProposePageParams) -> Result<ProposeResult> {
    let draft = Draft::Page(PageDraft {
        title: p.title.trim().to_string(),
        body: p.body.unwrap_or_default(),
        page_type: p.page_type.unwrap_or(PageType::Concept),
        claims: p.claims,
        entities: p.entities,
        sources: p.sources,
        tags: p.tags,
    });
    propose(kb, caller, input_of!(p, draft))
}

/// `kb.propose_entity`: propose a named entity for review.
pub fn propose_entity(kb: &Kb, caller: &Caller, p: ProposeEntityParams) -> Result<ProposeResult> {
    let draft = Draft::Entity(EntityDraft {
        name: p.name.trim().to_string(),
        entity_type: p.entity_type,
        aliases: p.aliases,
        description: p.description,
        tags: p.tags,
    });
    propose(kb, caller, input_of!(p, draft))
}

/// `kb.propose_relation`: propose a typed edge between two approved
/// objects or sources, optionally cited, for review.
pub fn propose_relation(
    kb: &Kb,
    caller: &Caller,
    p: ProposeRelationParams,
) -> Result<ProposeResult> {
    propose_relation_awaiting(kb, caller, p, HashSet::new())
}

/// [`propose_relation`] where an end may also be a claim in `awaiting`
/// that a pending proposal would create (a knowledge import proposes the
/// facts and the links between them in one run). Such a relation is
/// approved once its ends are, or in the same list as them; alone before
/// them it is refused, naming them.
pub(crate) fn propose_relation_awaiting(
    kb: &Kb,
    caller: &Caller,
    p: ProposeRelationParams,
    awaiting: HashSet<String>,
) -> Result<ProposeResult> {
    let draft = Draft::Relation(RelationDraft {
        source: p.source,
        relation: p.relation,
        target: p.target,
        confidence: p.confidence.unwrap_or(0.7),
        evidence: ids_only(&p.evidence),
    });
    propose(
        kb,
        caller,
        input_of!(p, draft, citations: p.evidence, awaiting: awaiting),
    )
}

pub(super) fn check_actor(actor: &str) -> Result<()> {
    if actor.trim().is_empty() {
        return Err(Error::invalid("no actor: set VOUCH_AGENT or pass --agent"));
    }
    if let Some(problem) = crate::ids::actor_name_problem(actor) {
        return Err(Error::invalid(format!("actor {actor:?} {problem}")));
    }
    Ok(())
}

/// The result of a proposal refused for `errors` before anything was written.
fn invalid(input: &ProposeInput, errors: Vec<String>) -> ProposeResult {
    ProposeResult {
        proposal_id: String::new(),
        object: BTreeMap::from([(object_key(input.draft.kind()).to_string(), String::new())]),
        valid: false,
        errors,
        dry_run: input.dry_run,
        review_url: None,
        meta: ReadMeta::default(),
    }
}

/// The command a person runs to propose a draft of this kind.
fn command_of(kind: ProposalKind) -> &'static str {
    match kind {
        ProposalKind::Claim => "vouch propose-claim",
        ProposalKind::Page => "vouch propose-page",
        ProposalKind::Entity => "vouch propose-entity",
        _ => "vouch propose-relation",
    }
}

/// The text a draft would store that a person may have masked, by the
/// param it came from.
fn texts_mut<'a>(
    draft: &'a mut Draft,
    rationale: &'a mut Option<String>,
) -> Vec<(String, &'a mut String)> {
    let mut texts: Vec<(String, &mut String)> = Vec::new();
    match draft {
        Draft::Claim(d) => texts.push(("text".into(), &mut d.text)),
        Draft::Page(d) => {
            texts.push(("title".into(), &mut d.title));
            texts.push(("body".into(), &mut d.body));
        }
        Draft::Entity(d) => {
            texts.push(("name".into(), &mut d.name));
            for (i, a) in d.aliases.iter_mut().enumerate() {
                texts.push((format!("aliases[{i}]"), a));
            }
            if let Some(desc) = &mut d.description {
                texts.push(("description".into(), desc));
            }
        }
        Draft::Relation(_) => {}
    }
    if let Some(r) = rationale {
        texts.push(("rationale".into(), r));
    }
    texts
}

/// The secret scan over what a proposal would store (crate::secrets): its
/// text, the rationale and quoted spans. Refused (an agent's, or a
/// person's who did not choose), masked in place, or let through as is;
/// what a person let through is returned for the proposal's event.
fn screen(caller: &Caller, input: &mut ProposeInput) -> Result<Option<Value>> {
    secrets::check_policy(caller, input.secrets)?;
    let door = secrets::Door {
        command: command_of(input.draft.kind()),
        maskable: true,
    };
    let mut texts = texts_mut(&mut input.draft, &mut input.rationale);
    let mut found: Vec<secrets::FieldFindings> = texts
        .iter()
        .map(|(field, text)| secrets::scan_field(field.clone(), true, text))
        .collect();
    for (i, c) in input.citations.iter().enumerate() {
        if let Citation::Span { quote, .. } = c {
            found.push(secrets::scan_field(
                format!("evidence[{i}].quote"),
                false,
                quote,
            ));
        }
    }
    let admitted = secrets::admit(caller, input.secrets, door, &found)?;
    if admitted == secrets::Admitted::Masked {
        for ((_, text), f) in texts.iter_mut().zip(&found) {
            **text = secrets::masked_text(text, f);
        }
    }
    Ok(secrets::recorded(admitted, &found))
}

/// A `proposal.create` event's data with what a person let through.
fn secrets_data(recorded: Option<Value>) -> Value {
    match recorded {
        Some(r) => json!({"secrets": r}),
        None => json!({}),
    }
}

pub(super) fn propose(kb: &Kb, caller: &Caller, mut input: ProposeInput) -> Result<ProposeResult> {
    check_actor(&caller.actor)?;
    let recorded = screen(caller, &mut input)?;
    let kind = input.draft.kind();
    let key = object_key(kind).to_string();
    let mut errors = validate(
        kb,
        &input.draft,
        Some(&input.citations),
        None,
        &input.awaiting,
    );
    {
        let mut p = Problems(Vec::new());
        check_session(kb, &mut p, &input.session_id);
        if let Some(r) = &input.rationale {
            check_controls(&mut p, "rationale", r);
        }
        errors.extend(p.0);
    }
    let result =
        |proposal_id: String, object_id: String, errors: Vec<String>, dry_run| ProposeResult {
            review_url: kb.review_link(&proposal_id),
            proposal_id,
            object: BTreeMap::from([(key.clone(), object_id)]),
            valid: errors.is_empty(),
            errors,
            dry_run,
            meta: ReadMeta::default(),
        };
    if !errors.is_empty() {
        return Ok(result(String::new(), String::new(), errors, input.dry_run));
    }
    let _lock = kb.lock()?;
    let object_id = unique_object_id(kb, kind, &input.draft.slug_seed())?;
    if input.dry_run {
        return Ok(result(String::new(), object_id, Vec::new(), true));
    }
    // Each claim the relation joins is approved or still proposed.
    if !input.awaiting.is_empty() {
        let queue = queue_objects(kb)?;
        let gone: Vec<&String> = input
            .awaiting
            .iter()
            .filter(|id| {
                !kb.exists(Dir::Claims, id)
                    && !queue.contains(&(ProposalKind::Claim, (*id).clone()))
            })
            .collect();
        if !gone.is_empty() {
            return Err(Error::conflict(format!(
                "claim(s) {gone:?} are neither approved nor proposed any more"
            )));
        }
    }
    // Mint evidence for quoted spans (ungated: evidence is harmless and
    // content-addressed), then refer to it by id.
    if input
        .citations
        .iter()
        .any(|c| matches!(c, Citation::Span { .. }))
    {
        let mut ids = Vec::new();
        for c in &input.citations {
            ids.push(match c {
                Citation::Id(id) => id.clone(),
                Citation::Span { source_id, quote } => {
                    crate::sources::mint_evidence_locked(kb, caller, source_id, quote)?.evidence_id
                }
            });
        }
        input.draft.cite(ids);
    }
    let now = kb.now();
    let proposal_id = new_proposal_id(kb, &now)?;
    let proposal = input.proposal(caller, &proposal_id, &object_id, now)?;
    let mut ev = create_event(kb, caller, &proposal, secrets_data(recorded))?;
    let path = kb.layout().file(Dir::Proposed, &proposal_id)?;
    let yaml = crate::store::yaml::to_yaml(&proposal)?;
    kb.audited(std::slice::from_mut(&mut ev), || {
        if atomic::create_new(kb.layout().root(), &path, yaml.as_bytes())? {
            Ok(())
        } else {
            Err(Error::internal(format!(
                "proposal id {proposal_id} collided; retry"
            )))
        }
    })?;
    if let Some(sid) = &input.session_id
        && let Some(mut s) = kb.load::<Session>(sid)?
    {
        s.proposals.push(proposal_id.clone());
        kb.store(&s)?;
    }
    Ok(result(proposal_id, object_id, Vec::new(), false))
}

/// `YYYYMMDD-HHMMSS-<8 hex>`, unique across `proposed/` and `decided/`.
pub(super) fn new_proposal_id(kb: &Kb, now: &Timestamp) -> Result<String> {
    new_proposal_id_except(kb, now, &HashSet::new())
}

/// As [`new_proposal_id`], also avoiding ids minted earlier in one batch.
pub(super) fn new_proposal_id_except(
    kb: &Kb,
    now: &Timestamp,
    taken: &HashSet<String>,
) -> Result<String> {
    for _ in 0..64 {
        let id = format!(
            "{}-{}",
            now.0.format("%Y%m%d-%H%M%S"),
            crate::clock::random_hex(kb.clock(), 8)
        );
        if !taken.contains(&id) && !kb.pending_exists(&id)? && !kb.exists(Dir::Decided, &id) {
            return Ok(id);
        }
    }
    Err(Error::internal("could not mint a unique proposal id"))
}

/// A pending proposal for an object that arrived in a bundle over an agent
/// transport: the gate stays on, so it becomes reviewed knowledge only when
/// someone approves it. Caller holds the lock and writes the proposal (with
/// its `proposal.create` event) in its own batch.
pub(crate) fn imported_proposal(
    kb: &Kb,
    caller: &Caller,
    draft: Draft,
    object_id: &str,
    rationale: String,
    taken: &mut HashSet<String>,
) -> Result<(Proposal, AuditEvent)> {
    check_actor(&caller.actor)?;
    let now = kb.now();
    let id = new_proposal_id_except(kb, &now, taken)?;
    taken.insert(id.clone());
    let proposal = pending_proposal(caller, &id, object_id, now, &draft, None, Some(rationale))?;
    let ev = create_event(kb, caller, &proposal, json!({"via": "bundle.import"}))?;
    Ok((proposal, ev))
}

/// A pending proposal of `draft`, as the gate files it.
fn pending_proposal(
    caller: &Caller,
    id: &str,
    object_id: &str,
    now: Timestamp,
    draft: &Draft,
    session_id: Option<String>,
    rationale: Option<String>,
) -> Result<Proposal> {
    Ok(Proposal {
        id: id.to_string(),
        kind: draft.kind(),
        status: ProposalStatus::Pending,
        object_id: object_id.to_string(),
        proposed_by: caller.actor.clone(),
        created_at: now,
        session_id,
        rationale,
        payload: draft.stored_payload(object_id)?,
        decided_by: None,
        decided_at: None,
        reason: None,
        decision_hash: None,
        extra: Default::default(),
    })
}

/// The `proposal.create` event of `proposal`: its kind and fingerprint
/// added to `data`.
fn create_event(
    kb: &Kb,
    caller: &Caller,
    proposal: &Proposal,
    mut data: Value,
) -> Result<AuditEvent> {
    data["kind"] = json!(proposal.kind.as_str());
    data[FINGERPRINT_KEY] = json!(proposal_fingerprint(proposal)?);
    Ok(kb.event(
        "proposal.create",
        &caller.actor,
        vec![proposal.id.clone(), proposal.object_id.clone()],
        data,
    ))
}

impl Draft {
    /// The draft a durable object would have been approved from.
    pub(crate) fn of_claim(c: &Claim) -> Draft {
        let metadata = c.extra.get("metadata").and_then(Value::as_object).cloned();
        let mut d = ClaimDraft::of(c, metadata);
        // A bundle's supersessions are checked and applied by the bundle
        // import itself.
        d.supersedes.clear();
        Draft::Claim(d)
    }
    pub(crate) fn of_page(p: &Page) -> Draft {
        Draft::Page(PageDraft::of(p, p.body.clone()))
    }
    pub(crate) fn of_entity(e: &Entity) -> Draft {
        Draft::Entity(EntityDraft::of(e))
    }
    pub(crate) fn of_relation(r: &Relation) -> Draft {
        Draft::Relation(RelationDraft::of(r))
    }
    /// Cite `ids` (the citations as given, their spans minted as evidence
    /// by now) as a claim's or a relation's evidence; a page or an entity
    /// cites nothing.
    fn cite(&mut self, ids: Vec<String>) {
        match self {
            Draft::Claim(d) => d.evidence = ids,
            Draft::Relation(d) => d.evidence = ids,
            _ => {}
        }
    }
}

/// A slug not taken by a durable artifact or a pending proposal of the same
/// kind: `slug`, `slug-2`, `slug-3`, ... Caller holds the lock.
pub(super) fn unique_object_id(kb: &Kb, kind: ProposalKind, seed: &str) -> Result<String> {
    let queue = queue_objects(kb)?;
    Ok(free_object_id(kb, kind, seed, |oid| {
        queue.contains(&(kind, oid.to_string()))
    }))
}

/// The first of `slug`, `slug-2`, … that no durable object of the kind
/// holds and `pending` does not name.
fn free_object_id(
    kb: &Kb,
    kind: ProposalKind,
    seed: &str,
    pending: impl Fn(&str) -> bool,
) -> String {
    let base = slugify(seed);
    let dir = object_dir(kind);
    let mut n = 1;
    loop {
        let candidate = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        if !kb.exists(dir, &candidate) && !pending(&candidate) {
            return candidate;
        }
        n += 1;
    }
}

/// The (kind, object id) of every pending proposal. Each file is read once
/// per process and remembered by its signature: a bulk import of 10,000
/// facts read the whole queue for every proposal (O(n²)). A file is read by
/// its `kind:` and `object_id:` lines; only one without them (vouch 1.x
/// derives the id from the payload) is parsed whole. Caller holds the lock.
fn queue_objects(kb: &Kb) -> Result<HashSet<(ProposalKind, String)>> {
    /// The signature of a proposal kept in a team's queue: no file's.
    const QUEUED: (i64, i64) = (-1, -1);
    // A queued proposal's key in the memory, apart from a file under the
    // same id (whose object counts too).
    let queued_key = |id: &str| format!("{id} queued");
    let mut pending: HashSet<(ProposalKind, String)> = HashSet::new();
    // The inbox's files and the team's queue apart (without a queue,
    // `proposed/` is all): a file under an id the queue keeps with other
    // bytes reserves its object as well as the kept one.
    let (files, queued) = kb.pending_ids_apart()?;
    let mut cache = kb
        .proposal_objects
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let mut seen = crate::stored::ProposalObjects::new();
    for id in files {
        let path = kb.layout().file(Dir::Proposed, &id)?;
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let sig = (crate::store::mtime_ns(&meta), meta.len() as i64);
        let entry = match cache.remove(&id) {
            Some((s, v)) if s == sig => v,
            _ => read_object(kb, &path),
        };
        if let Some(o) = &entry {
            pending.insert(o.clone());
        }
        seen.insert(id, (sig, entry));
    }
    // Not read yet: read together, below.
    let mut unread = Vec::new();
    for id in queued {
        match cache.remove(&queued_key(&id)) {
            Some((QUEUED, entry)) => {
                if let Some(o) = &entry {
                    pending.insert(o.clone());
                }
                seen.insert(queued_key(&id), (QUEUED, entry));
            }
            _ => unread.push(id),
        }
    }
    for (id, read) in kb.read_queued(&unread)? {
        let entry = match read {
            Ok(p) => Some((p.kind, p.object_id)),
            Err(e) => {
                kb.warn(format!("skipped unreadable proposal: {e}"));
                None
            }
        };
        if let Some(o) = &entry {
            pending.insert(o.clone());
        }
        seen.insert(queued_key(&id), (QUEUED, entry));
    }
    *cache = seen;
    Ok(pending)
}

/// A pending proposal's (kind, object id): from its top-level lines, or by
/// parsing it when they are not there.
pub(super) fn read_object(kb: &Kb, path: &std::path::Path) -> Option<(ProposalKind, String)> {
    let text = kb.read_text(path).ok().flatten()?;
    let line = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().trim_matches(['"', '\'']).to_string())
    };
    if let (Some(k), Some(oid)) = (line("kind: "), line("object_id: "))
        && let Some(k) = ProposalKind::parse(&k)
        && !oid.is_empty()
    {
        return Some((k, oid));
    }
    match crate::store::yaml::from_yaml::<Proposal>(path, &text) {
        Ok(p) => Some((p.kind, p.object_id)),
        Err(e) => {
            kb.warn(format!("skipped unreadable file: {e}"));
            None
        }
    }
}
