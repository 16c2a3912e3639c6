#!/usr/bin/env python3
"""Fusion sweep: how hybrid search would rank under other fusions, from the
same vectors and the same FTS5 hits (docs/search.md, "What a model embeds,
and the lexical weight").

  scripts/fusion-sweep.py tags eval/corpus.md > tags.txt   topic tags, a line per claim
  scripts/fusion-sweep.py export KB OUT.json               every cosine and BM25 score
  scripts/fusion-sweep.py sweep OUT.json                   recall@5 / MRR@10 per fusion

`export` drives `vouch serve --transport jsonl` ($VOUCH, default
target/release/vouch) on a KB built as scripts/eval.sh builds it and
embedded (`vouch index rebuild`); for a tagged KB pass each claim's line of
tags.txt to `propose-claim --tag`. The current fusion's row equals `vouch
eval`'s figures: the sweep reads hits as vouch does. Standard library only.
"""
import json
import math
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = os.path.join(HERE, "..", "eval", "queries.yaml")
# crates/vouch-core/src/index/mod.rs STOP_WORDS
STOP = set(
    "a about after all an and are as at be by can do does for from has have how i if in "
    "into is it its of on or so that the their then there this to was we what when where "
    "which who why will with you".split()
)
# Keyword rules for topic tags, as an agent might tag: at most three a claim.
TOPICS = {
    "payments": r"payment|charge|refund|card|stripe|checkout|purchase|storekit|billing|invoice",
    "billing": r"invoice|billing|plan|subscription|credit|tax|currency|vat",
    "auth": r"auth|token|login|password|session|sso|oauth|mfa|2fa|tls|certificate|saml",
    "security": r"secret|vulnerab|security|encrypt|penetration|access to|credential|tls|scan",
    "api": r"\bapi\b|webhook|request|endpoint|graphql|rest\b|gateway|rate",
    "database": r"database|postgres|mysql|replica|schema|migration|table|backup|index|query",
    "deploy": r"deploy|release|rollout|kubernetes|canary|vercel|feature flag|launchdarkly|staging|production",
    "observability": r"log|metric|prometheus|thanos|trace|alert|dashboard|grafana|monitor|sentry",
    "frontend": r"frontend|next\.js|react|css|browser|image|cdn|webp",
    "mobile": r"\bios\b|android|mobile|app store|push notification",
    "data": r"event|analytics|warehouse|tracking|etl|kafka|pipeline|dbt|snowflake",
    "compliance": r"gdpr|data protection|retention|retained|audit|compliance|privacy|pii|sla|uptime",
    "incident": r"incident|on-call|oncall|pager|severity|postmortem|outage|failover",
    "ownership": r"owned by|team\b|owner",
    "ci": r"\bci\b|pull request|lint|test|build|pre-commit|dependenc",
    "inventory": r"stock|inventory|warehouse|shipping|order|logistics",
    "email": r"email|newsletter|notification",
}


def load_queries():
    """eval/queries.yaml, read without a YAML library (its fixed shape)."""
    out, cur = [], None
    for line in open(QUERIES):
        m = re.match(r'\s*- query: "(.*)"\s*$', line)
        if m:
            cur = {"query": m.group(1)}
            out.append(cur)
            continue
        m = re.match(r"\s*expected: \[(.*)\]\s*$", line)
        if m and cur is not None:
            cur["expected"] = [x.strip() for x in m.group(1).split(",")]
            continue
        m = re.match(r"\s*note: (\S+)\s*$", line)
        if m and cur is not None:
            cur["note"] = m.group(1)
    return out


def tags(corpus):
    for line in open(corpus):
        if line.strip():
            low = line.lower()
            found = [t for t, p in TOPICS.items() if re.search(p, low)][:3]
            print(" ".join(found) if found else "general")


def export(kb, out):
    vouch = os.environ.get("VOUCH", os.path.join(HERE, "..", "target", "release", "vouch"))
    server = subprocess.Popen(
        [vouch, "--kb", kb, "serve", "--transport", "jsonl"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, VOUCH_AGENT="eval"),
    )
    n = 0

    def call(method, params):
        nonlocal n
        n += 1
        server.stdin.write(json.dumps({"id": n, "method": method, "params": params}) + "\n")
        server.stdin.flush()
        reply = json.loads(server.stdout.readline())
        if not reply["ok"]:
            sys.exit(f"{method}: {reply}")
        return reply["result"]

    rows = []
    for q in load_queries():
        search = {"query": q["query"], "limit": 1000, "kinds": ["claim"]}
        rows.append(
            {
                "q": q,
                "emb": call("kb.search", dict(search, backend="embedding")),
                "fts": call("kb.search", dict(search, backend="fts5")),
            }
        )
    server.stdin.close()
    server.wait()
    json.dump(rows, open(out, "w"))


def words(text):
    """crates/vouch-core/src/retrieval/mod.rs words()."""
    out, seen = [], set()
    for w in re.split(r"[\W_]+", text):
        w = w.lower()
        if w and w not in seen:
            seen.add(w)
            out.append(w)
    return out


def word_matches(word, doc_words):
    """crates/vouch-core/src/retrieval/hybrid.rs word_matches()."""
    numeric = any(c.isdigit() for c in word)
    for w in doc_words:
        if w == word:
            return True
        if numeric:
            continue
        common = 0
        for a, b in zip(w, word):
            if a != b:
                break
            common += 1
        if common >= 4 and common >= min(len(w), len(word)) - 2:
            return True
    return False


def sweep(path, k=5):
    rows = json.load(open(path))
    texts = {h["id"]: h["snippet"] for h in rows[0]["emb"]}
    doc_words = {i: words(t) for i, t in texts.items()}
    n_docs = len(texts)
    idf_cache = {}

    def idf(term):
        if term not in idf_cache:
            df = sum(1 for i in texts if word_matches(term, doc_words[i]))
            idf_cache[term] = math.log((n_docs - df + 0.5) / (df + 0.5) + 1)
        return idf_cache[term]

    def coverage(query, doc, weighted=False):
        terms = words(query)
        content = [t for t in terms if t not in STOP] or terms
        if not content:
            return 0.0
        weight = idf if weighted else (lambda _: 1.0)
        total = sum(weight(t) for t in content)
        return sum(weight(t) for t in content if word_matches(t, doc_words[doc])) / total

    def evaluate(score, keep=True):
        by_note, rrs = {}, []
        for r in rows:
            q = r["q"]
            cos = {h["id"]: h["score"] for h in r["emb"]}
            lexical = r["fts"][:50]  # semantic::CANDIDATES
            lex_ids = [h["id"] for h in lexical]
            bm25 = {h["id"]: h["score"] for h in lexical}
            sem = [h["id"] for h in r["emb"][:50]]
            cands = set(lex_ids) | set(sem)
            scored = {i: score(q["query"], i, cos, bm25) for i in cands}
            ranked = sorted(cands, key=lambda i: (-scored[i], i))
            if keep:
                # hybrid.rs: each side's best stays among the results.
                top_lex = lex_ids[0] if lex_ids and coverage(q["query"], lex_ids[0]) == 1.0 else None
                keep_ids = list(dict.fromkeys(x for x in [top_lex, sem[0]] if x))
                below = [b for b in keep_ids if ranked.index(b) >= k]
                if below and k > len(below):
                    for b in below:
                        ranked.remove(b)
                    ranked[k - len(below) : k - len(below)] = below
            expected = q["expected"]
            recall = len(set(expected) & set(ranked[:k])) / len(expected)
            rr = next((1 / (n + 1) for n, i in enumerate(ranked[:10]) if i in expected), 0)
            for note in ("all", q.get("note")):
                by_note.setdefault(note, []).append(recall)
            rrs.append(rr)
        return {n: sum(v) / len(v) for n, v in by_note.items()}, sum(rrs) / len(rrs)

    def show(name, score, **kw):
        r, mrr = evaluate(score, **kw)
        classes = " ".join(f"{n} {v:.3f}" for n, v in sorted(r.items()) if n != "all")
        print(f"{name:30s} all {r['all']:.3f}  {classes}  mrr@10 {mrr:.3f}")

    def minmax(values):
        lo, hi = min(values), max(values)
        return lambda x: (x - lo) / (hi - lo) if hi > lo else 0.0

    show("embedding alone", lambda q, i, c, b: c[i], keep=False)
    for w in [0.02, 0.05, 0.1, 0.2, 0.3]:
        show(f"coverage^2 w={w} (vouch)", lambda q, i, c, b, w=w: c[i] + (w * coverage(q, i) ** 2 if i in b else 0))
    for w in [0.02, 0.05, 0.1, 0.2]:
        show(f"idf coverage^2 w={w}", lambda q, i, c, b, w=w: c[i] + (w * coverage(q, i, True) ** 2 if i in b else 0))
    for w in [0.02, 0.05, 0.1]:
        show(f"coverage w={w}", lambda q, i, c, b, w=w: c[i] + (w * coverage(q, i) if i in b else 0))
    for w in [0.02, 0.05, 0.1, 0.2]:
        show(f"bm25/best w={w}", lambda q, i, c, b, w=w: c[i] + (w * b[i] / max(b.values()) if i in b else 0))
    for a in [0.6, 0.7, 0.8, 0.9]:

        def convex(q, i, c, b, a=a):
            nc = minmax(list(c.values()))
            nb = minmax(list(b.values())) if b else (lambda _: 0.0)
            return a * nc(c[i]) + (1 - a) * (nb(b[i]) if i in b else 0.0)

        show(f"convex min-max a={a}", convex)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "tags":
        tags(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "export":
        export(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "sweep":
        sweep(sys.argv[2])
    else:
        sys.exit(__doc__)
