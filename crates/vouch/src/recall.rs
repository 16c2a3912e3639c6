//! `vouch recall`: the session-start digest (`kb.recall`) for a hook to
//! paste into an agent's context.

use serde_json::{Value, json};
use vouch_core::{Caller, Error, Kb, methods};

#[derive(clap::Args, Debug)]
pub struct RecallArgs {
    /// Upper bound on the digest's length in characters.
    #[arg(long, default_value_t = 4000)]
    pub max_chars: i64,
    /// A task: its context pack fills what the budget leaves.
    #[arg(long)]
    pub task: Option<String>,
    /// How many items each list shows at most.
    #[arg(long, default_value_t = 5)]
    pub per_section: i64,
}

pub fn recall(kb: &Kb, caller: &Caller, args: &RecallArgs) -> Result<Value, Error> {
    methods::dispatch(
        kb,
        caller,
        "kb.recall",
        json!({"max_chars": args.max_chars, "task": args.task, "per_section": args.per_section}),
    )
}
