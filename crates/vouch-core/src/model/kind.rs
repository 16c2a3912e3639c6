//! One definition per knowledge kind: the durable object and the draft a
//! proposal carries are written once, as the object's fields in the
//! file's order with `@draft` on those a proposal supplies. From that
//! [`knowledge_kind!`] makes
//!
//! - the object (`Claim`), exactly as written, with `@approval,` standing
//!   for the fields approval stamps (`created_at`, `updated_at`,
//!   `approved_by`, `extra`) where a kind writes them as the others do;
//! - the draft (`ClaimDraft`): the `@draft` fields with the same names,
//!   types, serde rules and docs, then the draft's own fields;
//! - the record (`ClaimRecord`, crate-private): the object's other fields,
//!   what approval adds (id, status, times, approver, unknown keys);
//! - the two conversions, so no field list is written by hand twice:
//!   `ClaimDraft::of(&claim, <the draft's own fields>)` and
//!   `Claim::assemble(draft, record)`.
//!
//! A field added with `@draft` reaches proposals, approval and bundles
//! without another edit; the agent-facing params of `kb.propose_*` are a
//! shape of their own (defaults, citations, strict vocabularies) and a test
//! in the gate fails when their fields and the draft's part.

/// See the module's docs. The object's docs must come before its other
/// attributes on each field (doc comments first, then `#[serde(...)]`).
macro_rules! knowledge_kind {
    (
        $(#[$meta:meta])*
        pub struct $Object:ident {
            $($fields:tt)*
        }
        $(#[$dmeta:meta])*
        draft $Draft:ident {
            $($(#[$own_meta:meta])* pub $own:ident : $own_ty:ty,)*
        }
        record $Record:ident;
    ) => {
        knowledge_kind!(@munch
            [$(#[$meta])* $Object]
            [$(#[$dmeta])* $Draft [$($(#[$own_meta])* pub $own : $own_ty,)*] [$($own : $own_ty,)*]]
            $Record
            object [] draft [] shared [] record []
            $($fields)*
        );
    };
    // The fields approval stamps, as every kind but a claim (whose
    // confirmation time sits among them) writes them: when it was approved
    // and last changed, by whom, and the keys this version does not know.
    (@munch $head:tt $draft_head:tt $Record:ident
        object $o:tt draft $d:tt shared $s:tt record $r:tt
        @approval, $($rest:tt)*
    ) => {
        knowledge_kind!(@munch $head $draft_head $Record
            object $o draft $d shared $s record $r
            /// When it was approved (became durable).
            pub created_at: Timestamp,
            /// When it last changed.
            pub updated_at: Timestamp,
            /// The actor who approved it: the file's word; the audit log is the proof.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub approved_by: Option<String>,
            /// Keys this version does not know, kept and written back (see [`Extra`]).
            #[serde(flatten)]
            pub extra: Extra,
            $($rest)*
        );
    };
    // A field the draft shares: in the object and the draft alike.
    (@munch $head:tt $draft_head:tt $Record:ident
        object [$($o:tt)*] draft [$($d:tt)*] shared [$($s:ident)*] record $r:tt
        $(#[$a:meta])* @draft pub $f:ident : $t:ty, $($rest:tt)*
    ) => {
        knowledge_kind!(@munch $head $draft_head $Record
            object [$($o)* $(#[$a])* pub $f: $t,]
            draft [$($d)* $(#[$a])* pub $f: $t,]
            shared [$($s)* $f]
            record $r
            $($rest)*
        );
    };
    // A field of the object alone: approval (or a later change) sets it.
    (@munch $head:tt $draft_head:tt $Record:ident
        object [$($o:tt)*] draft $d:tt shared $s:tt record [$($r:tt)*]
        $(#[$a:meta])* pub $f:ident : $t:ty, $($rest:tt)*
    ) => {
        knowledge_kind!(@munch $head $draft_head $Record
            object [$($o)* $(#[$a])* pub $f: $t,]
            draft $d
            shared $s
            record [$($r)* $f: $t,]
            $($rest)*
        );
    };
    (@munch [$(#[$meta:meta])* $Object:ident]
        [$(#[$dmeta:meta])* $Draft:ident [$($own_fields:tt)*] [$($own:ident : $own_ty:ty,)*]]
        $Record:ident
        object [$($o:tt)*] draft [$($d:tt)*] shared [$($s:ident)*]
        record [$($rf:ident : $rt:ty,)*]
    ) => {
        $(#[$meta])*
        pub struct $Object {
            $($o)*
        }

        $(#[$dmeta])*
        #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
        pub struct $Draft {
            $($d)*
            $($own_fields)*
        }

        #[doc = concat!(
            "What a [`", stringify!($Object), "`] holds beyond its draft: the fields \
             approval (or a later change) sets, as the object documents them."
        )]
        pub(crate) struct $Record {
            $(pub $rf: $rt,)*
        }

        impl $Draft {
            #[doc = concat!(
                "The draft `object` would have been approved from: its shared fields, \
                 and the draft's own as given."
            )]
            pub(crate) fn of(object: &$Object, $($own: $own_ty),*) -> $Draft {
                $Draft {
                    $($s: object.$s.clone(),)*
                    $($own,)*
                }
            }
        }

        impl $Object {
            #[doc = concat!(
                "The object a draft and what approval adds make; the draft's own \
                 fields are the caller's to carry over (take them first)."
            )]
            pub(crate) fn assemble(draft: $Draft, record: $Record) -> $Object {
                $Object {
                    $($s: draft.$s,)*
                    $($rf: record.$rf,)*
                }
            }
        }
    };
}

pub(crate) use knowledge_kind;
