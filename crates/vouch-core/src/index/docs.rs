//! What each object contributes to retrieval: the text a backend indexes
//! (title, body) and the fields it filters on (kind, status, confidence).

use crate::model::{Claim, Entity, Page, Relation, Source};
use crate::store::mtime_ns;
use crate::stored::Store;

pub(crate) const SOURCE_TEXT_LIMIT: usize = 64 * 1024;

/// What one document contributes to the index: what every engine stores
/// of it ([`crate::index::engine::DocWrite`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    /// `claim`, `page`, `entity`, `relation` or `source`.
    pub kind: &'static str,
    /// Its id.
    pub id: String,
    /// What is weighted as its title (a claim's tags).
    pub title: String,
    /// Its text.
    pub body: String,
    /// Its status (claims and pages).
    pub status: Option<String>,
    /// Its confidence (claims and relations).
    pub confidence: Option<f64>,
}

/// A claim's tags are its title: found by word (weighted as a title), never
/// embedded ([`embedded_text`]) and never its snippet.
pub(crate) fn claim_doc(c: &Claim) -> Doc {
    Doc {
        kind: "claim",
        id: c.id.clone(),
        title: c.tags.join(" "),
        body: c.text.clone(),
        status: Some(c.status.as_str().to_string()),
        confidence: Some(c.confidence),
    }
}

/// A document's text as the words see it: title, then body.
pub fn full_text(title: String, body: String) -> String {
    if title.is_empty() {
        body
    } else {
        format!("{title}\n{body}")
    }
}

/// The text a model embeds for a document: what it says. A claim's tags
/// (its title column) are left out: labels shared by every claim of a
/// topic pull their vectors together, so the one that answers a question
/// stands out less from its neighbours. On the project's labelled set with
/// topic tags added, embedding a claim's tags with its text cost recall@5
/// 0.929 -> 0.903 (MPNet) and 0.853 -> 0.832 (MiniLM); docs/search.md.
pub fn embedded_text(kind: &str, title: String, body: String) -> String {
    if kind == "claim" {
        body
    } else {
        full_text(title, body)
    }
}

pub(crate) fn page_doc(p: &Page) -> Doc {
    Doc {
        kind: "page",
        id: p.id.clone(),
        title: p.title.clone(),
        body: p.body.clone(),
        status: Some(p.status.as_str().to_string()),
        confidence: None,
    }
}

pub(crate) fn entity_doc(e: &Entity) -> Doc {
    Doc {
        kind: "entity",
        id: e.id.clone(),
        title: e.name.clone(),
        body: format!(
            "{}\n{}",
            e.aliases.join(", "),
            e.description.clone().unwrap_or_default()
        ),
        status: None,
        confidence: None,
    }
}

pub(crate) fn source_doc(kb: &Store, s: &Source) -> Doc {
    let mut body = s.locator.clone();
    // Only content that hashes to its id is indexed (never a planted file).
    if let Ok(Some(bytes)) = kb.source_content(&s.id) {
        let cut = &bytes[..bytes.len().min(SOURCE_TEXT_LIMIT)];
        let text = String::from_utf8_lossy(cut);
        body.push('\n');
        body.push_str(&text);
    }
    Doc {
        kind: "source",
        id: s.id.clone(),
        title: s.title.clone().unwrap_or_default(),
        body,
        status: None,
        confidence: None,
    }
}

pub(crate) fn relation_doc(r: &Relation) -> Doc {
    Doc {
        kind: "relation",
        id: r.id.clone(),
        title: String::new(),
        body: format!("{} {} {}", r.source, r.relation, r.target),
        status: None,
        confidence: Some(r.confidence),
    }
}

/// One document read from its file (`kind` one of `claim`, `page`,
/// `entity`, `relation`, else a source), with the signature of the file
/// it read (modification time in ns, size: [`crate::index::engine::Sig`]),
/// taken from the open file (no second look at the name); `None` when
/// there is no such file. What every engine indexes of a file.
pub fn read_doc(
    kb: &Store,
    kind: &str,
    id: &str,
) -> crate::error::Result<Option<(Doc, (i64, i64))>> {
    fn signed<T>(
        loaded: crate::error::Result<Option<(T, std::fs::Metadata)>>,
        doc: impl FnOnce(&T) -> Doc,
    ) -> crate::error::Result<Option<(Doc, (i64, i64))>> {
        Ok(loaded?.map(|(object, m)| (doc(&object), (mtime_ns(&m), m.len() as i64))))
    }
    match kind {
        "claim" => signed(kb.load_with_meta::<Claim>(id), claim_doc),
        "page" => signed(kb.load_with_meta::<Page>(id), page_doc),
        "entity" => signed(kb.load_with_meta::<Entity>(id), entity_doc),
        "relation" => signed(kb.load_with_meta::<Relation>(id), relation_doc),
        _ => signed(kb.load_source_with_meta(id), |s| source_doc(kb, s)),
    }
}

/// The file a document of `kind` is read from (a source's `meta.yaml`).
pub(crate) fn doc_file(
    kb: &Store,
    kind: &str,
    id: &str,
) -> crate::error::Result<std::path::PathBuf> {
    use crate::store::Dir;
    match kind {
        "claim" => kb.layout().file(Dir::Claims, id),
        "page" => kb.layout().file(Dir::Pages, id),
        "entity" => kb.layout().file(Dir::Entities, id),
        "relation" => kb.layout().file(Dir::Relations, id),
        _ => kb.layout().source_meta(id),
    }
}

/// A regular file's (mtime, size): a link is never a document.
pub(crate) fn file_signature(path: &std::path::Path) -> Option<(i64, i64)> {
    let m = std::fs::symlink_metadata(path).ok()?;
    m.is_file().then(|| (mtime_ns(&m), m.len() as i64))
}

/// What an object just written contributes; `None` for a removal.
pub(crate) fn written_doc(kb: &Store, written: &crate::model::Written) -> Option<Doc> {
    use crate::model::Written;
    Some(match written {
        Written::Removed { .. } => return None,
        Written::Claim(c) => claim_doc(c),
        Written::Page(p) => page_doc(p),
        Written::Entity(e) => entity_doc(e),
        Written::Relation(r) => relation_doc(r),
        Written::Source(s) => source_doc(kb, s),
    })
}
