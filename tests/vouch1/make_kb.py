"""Write a realistic knowledge base with the real vouch 1.x (vouch-kb 1.5.0).

Every file is written by 1.x's own library calls — the ones its CLI makes —
so the result is what a team that used 1.x for months would bring: sources
registered from project files, claims proposed with byte-span receipts
(1.x's `ev-` + sha256("{source}:{start}:{end}") ids) and approved by a
second person, entities, relations between claims (whose file names run past
tar's 100 bytes), pages that cite claims, supersession chains, contradictions,
archived claims, rejected proposals and proposals still pending.

    python make_kb.py DIR [N_CLAIMS] [SEED]

Prints one JSON line of counts. Deterministic for a seed, except for the
timestamps and proposal ids 1.x mints itself.
"""

import json
import os
import random
import sys
from pathlib import Path

from vouch import lifecycle, proposals
from vouch import audit as audit_mod
from vouch.storage import KBStore

SYSTEMS = ["billing", "search", "tracing", "checkout", "inventory", "identity",
           "payments", "notifications", "ingest", "reporting", "scheduler", "gateway"]
COMPONENTS = ["queue consumer", "retry worker", "schema migration", "cache layer",
              "rate limiter", "export job", "webhook relay", "token service"]
FACTS = [
    "retries failed SQS messages {n} times with exponential backoff before dead-lettering them",
    "is owned by the {team} team, who answer its pages during business hours",
    "locked the orders table for {n} minutes when its migration ran without a batch size",
    "reads its configuration from the {team} parameter store at start-up only",
    "keeps {n} days of history and compacts older records every night",
    "must be deployed after the {team} service because it calls its new endpoint",
    "times out after {n} seconds and surfaces the error to the caller unchanged",
    "imports customer records in batches of {n} and skips rows without an email",
]
TEAMS = ["platform", "data", "growth", "core", "edge", "reliability"]
WORDS = ["amber", "basalt", "cobalt", "delta", "ember", "fjord", "garnet", "harbor",
         "indigo", "juniper", "kestrel", "lumen", "marlin", "nimbus", "onyx", "pylon"]


def main() -> None:
    root = Path(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 7)
    root.mkdir(parents=True, exist_ok=True)
    store = KBStore.init(root)
    log = lambda event, actor, ids: audit_mod.log_event(  # noqa: E731
        store.kb_dir, event=event, actor=actor, object_ids=ids)

    # Claim texts: unique, long enough that 1.x's 60-character slugs make
    # relation file names past 100 bytes.
    texts = []
    for i in range(n):
        code = f"{rng.choice(WORDS)}-{i:04d}"
        fact = rng.choice(FACTS).format(n=rng.randint(2, 90), team=rng.choice(TEAMS))
        texts.append(f"The {rng.choice(SYSTEMS)} {rng.choice(COMPONENTS)} of {code} {fact}")

    # One project file per ten claims, registered as 1.x's `source add` does.
    notes = root / "notes"
    notes.mkdir(exist_ok=True)
    source_of = []
    for start in range(0, n, 10):
        path = notes / f"notes-{start // 10:04d}.md"
        path.write_text("".join(f"{t}.\n" for t in texts[start:start + 10]), encoding="utf-8")
        data = path.read_bytes()
        src = store.put_source(data, title=path.name, locator=str(path.resolve()))
        log("source.add", "claude", [src.id])
        source_of.extend([src.id] * len(texts[start:start + 10]))

    def approve_all(pids):
        for pid in pids:
            proposals.approve(store, pid, approved_by="alice")

    # Entities, approved.
    entity_ids = []
    pids = []
    for i, s in enumerate(SYSTEMS):
        p = proposals.propose_entity(store, name=f"{s.title()} Service", entity_type="system",
                                     aliases=[s], description=f"The {s} service.",
                                     proposed_by="claude")
        pids.append(p.id)
        entity_ids.append(p.payload["id"])
    approve_all(pids)

    # Claims with byte-span receipts; all but the last 30 approved, the first
    # 20 of those 30 stay pending and the last 10 are rejected.
    claim_ids = []
    pending = []
    for i, text in enumerate(texts):
        ent = [entity_ids[SYSTEMS.index(text.split()[1])]]
        r = proposals.propose_quoted_claim(
            store, text=text, source_id=source_of[i], quote=text, proposed_by="claude",
            entities=ent, tags=[text.split()[1]], session_id=f"s-{i // 50:03d}")
        assert r is not None, text
        if i < n - 30:
            proposals.approve(store, r.proposal.id, approved_by="alice")
            claim_ids.append(r.proposal.payload["id"])
        elif i < n - 10:
            pending.append(r.proposal.id)
        else:
            proposals.reject(store, r.proposal.id, rejected_by="alice",
                             reason="duplicate of an approved claim")

    # Relations between claims (long file names), approved, and one pending.
    pids = []
    for i in range(0, len(claim_ids) - 1, 7):
        p = proposals.propose_relation(store, src=claim_ids[i], relation="depends_on",
                                       target=claim_ids[i + 1], proposed_by="claude")
        pids.append(p.id)
    approve_all(pids)
    p = proposals.propose_relation(store, src=claim_ids[3], relation="related_to",
                                   target=claim_ids[4], proposed_by="claude")
    pending.append(p.id)

    # Pages citing claims.
    pids = []
    for i, s in enumerate(SYSTEMS):
        cited = [c for c in claim_ids if f"-{s}-" in f"-{c}-"][:8]
        p = proposals.propose_page(store, title=f"{s.title()} runbook",
                                   body=f"What we know about {s}.\n", claim_ids=cited,
                                   entity_ids=[entity_ids[i]], proposed_by="claude")
        pids.append(p.id)
    approve_all(pids)

    # Supersession chains of three, contradictions, archived claims.
    superseded = contested = archived = 0
    for i in range(10, len(claim_ids) - 3, 97):
        a, b, c = claim_ids[i:i + 3]
        lifecycle.supersede(store, old_claim_id=a, new_claim_id=b, actor="alice")
        lifecycle.supersede(store, old_claim_id=b, new_claim_id=c, actor="alice")
        superseded += 2
    for i in range(50, len(claim_ids) - 1, 131):
        lifecycle.contradict(store, claim_a=claim_ids[i], claim_b=claim_ids[i + 1],
                             actor="alice")
        contested += 2
    for i in range(70, len(claim_ids), 211):
        lifecycle.archive(store, claim_id=claim_ids[i], actor="alice")
        archived += 1

    print(json.dumps({
        "claims": len(claim_ids), "pending": len(pending), "rejected": 10,
        "sources": len(set(source_of)), "entities": len(entity_ids),
        "superseded": superseded, "contested": contested, "archived": archived,
        "longest_relation_file": max(
            len(f"relations/{f.name}") for f in (store.kb_dir / "relations").iterdir()),
    }))


if __name__ == "__main__":
    os.environ.setdefault("VOUCH_AGENT", "claude")
    main()
