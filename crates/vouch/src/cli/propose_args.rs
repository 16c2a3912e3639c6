//! The flags of the `propose-*` commands, and what every proposal takes.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub(crate) struct ProposeClaimArgs {
    /// The one-sentence assertion.
    pub(crate) text: String,
    /// A source id or evidence id this claim cites (repeatable; register
    /// a source with `vouch source add`).
    #[arg(long = "evidence", short = 'e', alias = "source")]
    pub(crate) evidence: Vec<String>,
    /// Cite a span: SOURCE_ID=exact quote (repeatable).
    #[arg(long = "quote")]
    pub(crate) quotes: Vec<String>,
    /// fact, decision, preference, workflow, observation, question, warning.
    #[arg(long = "type")]
    pub(crate) claim_type: Option<String>,
    /// 0..1 (default 0.7).
    #[arg(long)]
    pub(crate) confidence: Option<f64>,
    /// An approved entity this claim is about (repeatable).
    #[arg(long = "entity")]
    pub(crate) entities: Vec<String>,
    /// private, project, team, public.
    #[arg(long)]
    pub(crate) scope: Option<String>,
    /// A tag (repeatable).
    #[arg(long = "tag")]
    pub(crate) tags: Vec<String>,
    /// An approved claim this one corrects: approving the proposal
    /// supersedes it (repeatable).
    #[arg(long = "supersedes")]
    pub(crate) supersedes: Vec<String>,
    /// Why this claim should be approved, for the reviewer.
    #[arg(long)]
    pub(crate) rationale: Option<String>,
    #[command(flatten)]
    pub(crate) common: ProposeCommon,
}

/// Flags every propose-* command takes.
#[derive(Args, Debug)]
pub(crate) struct ProposeCommon {
    /// The work session this proposal belongs to (`vouch session start`).
    #[arg(long)]
    pub(crate) session: Option<String>,
    /// Validate only; write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    #[command(flatten)]
    pub(crate) secrets: SecretsFlags,
}

/// What to do with a secret — a private key, a cloud or API token, a JWT,
/// a password assignment (docs/secrets.md) — in what a command would
/// store. Without either flag it is refused, naming the line and the kind.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct SecretsFlags {
    /// Text holding a secret (a private key, a token, a password:
    /// docs/secrets.md) is refused unless this or --allow-secrets is given:
    /// store it with each secret replaced by [REDACTED:<kind>] (a source is
    /// masked before it is hashed: its id is the hash of what is stored,
    /// and quotes are found in the masked text).
    #[arg(long, conflicts_with = "allow_secrets")]
    pub(crate) mask_secrets: bool,
    /// Store text holding a secret as is: the secret is then committed with
    /// the knowledge base and shared with everyone who clones it.
    #[arg(long)]
    pub(crate) allow_secrets: bool,
}

impl SecretsFlags {
    /// The `secrets` param these flags stand for.
    pub(crate) fn policy(self) -> vouch_core::params::SecretsPolicy {
        use vouch_core::params::SecretsPolicy;
        match (self.mask_secrets, self.allow_secrets) {
            (true, _) => SecretsPolicy::Mask,
            (_, true) => SecretsPolicy::Allow,
            _ => SecretsPolicy::Refuse,
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct ProposePageArgs {
    /// The page's title.
    pub(crate) title: String,
    /// The markdown body.
    #[arg(long, conflicts_with = "body_file")]
    pub(crate) body: Option<String>,
    /// Read the markdown body from a file.
    #[arg(long)]
    pub(crate) body_file: Option<PathBuf>,
    /// entity, concept, decision, workflow, session, index, log, report, source-summary.
    #[arg(long = "type")]
    pub(crate) page_type: Option<String>,
    /// An approved claim the page draws on (repeatable).
    #[arg(long = "claim")]
    pub(crate) claims: Vec<String>,
    /// An approved entity the page is about (repeatable).
    #[arg(long = "entity")]
    pub(crate) entities: Vec<String>,
    /// A source id the page cites (repeatable).
    #[arg(long = "source")]
    pub(crate) sources: Vec<String>,
    /// A tag (repeatable).
    #[arg(long = "tag")]
    pub(crate) tags: Vec<String>,
    #[command(flatten)]
    pub(crate) common: ProposeCommon,
}

#[derive(Args, Debug)]
pub(crate) struct ProposeEntityArgs {
    /// The entity's name.
    pub(crate) name: String,
    /// person, project, repo, company, concept, decision, workflow, file, api, ...
    #[arg(long = "type", required = true)]
    pub(crate) entity_type: String,
    /// Another name it goes by (repeatable).
    #[arg(long = "alias")]
    pub(crate) aliases: Vec<String>,
    /// What it is, in a sentence.
    #[arg(long)]
    pub(crate) description: Option<String>,
    /// A tag (repeatable).
    #[arg(long = "tag")]
    pub(crate) tags: Vec<String>,
    #[command(flatten)]
    pub(crate) common: ProposeCommon,
}

#[derive(Args, Debug)]
pub(crate) struct ProposeRelationArgs {
    /// Id of the object at the start of the edge: any approved claim,
    /// entity, page, relation or evidence, or a source id.
    pub(crate) source: String,
    /// uses, depends_on, contradicts, supersedes, supports, caused_by, owned_by, ...
    pub(crate) relation: String,
    /// Id of the object at the end of the edge (as `source`).
    pub(crate) target: String,
    /// 0..1 (default 0.7).
    #[arg(long)]
    pub(crate) confidence: Option<f64>,
    /// A source id or evidence id the relation cites (repeatable).
    #[arg(long = "evidence", short = 'e')]
    pub(crate) evidence: Vec<String>,
    #[command(flatten)]
    pub(crate) common: ProposeCommon,
}
