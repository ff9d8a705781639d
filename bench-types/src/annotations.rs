//! What a person writes on a run or a comparison to find it again: tags (short words the
//! runs list filters on) and a free-text note. Checked the same way in the browser, the
//! JSON API and the pages' forms.

use crate::validate::ValidationErrors;
use serde::{Deserialize, Serialize};

/// Most tags one run or comparison may carry.
pub const MAX_TAGS: usize = 16;
/// Longest tag, in characters.
pub const MAX_TAG_CHARS: usize = 40;
/// Longest note, in characters (a paragraph or two, not a report).
pub const MAX_NOTE_CHARS: usize = 4000;

/// Tags and note, as `POST /api/runs/{id}/annotations` and
/// `POST /api/comparisons/{slug}/annotations` take them (the whole set replaces the old one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Annotations {
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub note: String,
}

/// Characters a tag may hold besides letters and digits: enough for `fp8`, `h100-sxm`,
/// `v0.11`, `team:serving`, `qwen3/8b`, and nothing a URL or a list needs to escape.
fn tag_char_ok(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '/' | '+')
}

/// Why `tag` (already trimmed) is not a tag, if it is not.
pub fn tag_problem(tag: &str) -> Option<String> {
    if tag.is_empty() {
        return Some("must not be empty".into());
    }
    if tag.chars().count() > MAX_TAG_CHARS {
        return Some(format!("must be at most {MAX_TAG_CHARS} characters"));
    }
    tag.chars().find(|&c| !tag_char_ok(c)).map(|c| {
        let shown =
            if c.is_control() || c.is_whitespace() { crate::text::describe(c) } else { format!("{c:?}") };
        format!("{tag:?} holds {shown}; tags are letters, digits and - _ . : / + (no spaces)")
    })
}

impl Annotations {
    /// Tags as a person types them in one box: separated by commas or spaces.
    pub fn from_form(tags: &str, note: &str) -> Self {
        Annotations {
            tags: tags
                .split([',', ' ', '\n', '\t'])
                .filter(|t| !t.trim().is_empty())
                .map(str::to_string)
                .collect(),
            note: note.to_string(),
        }
    }

    /// Trimmed, lower-cased, without repeats (first spelling kept), so that `FP8` and `fp8`
    /// filter as one tag; the note trimmed, its line breaks as `\n`.
    pub fn normalized(&self) -> Annotations {
        let mut tags: Vec<String> = Vec::new();
        for t in &self.tags {
            let t = t.trim().to_lowercase();
            if !tags.contains(&t) {
                tags.push(t);
            }
        }
        Annotations { tags, note: self.note.trim().replace("\r\n", "\n") }
    }

    /// Checks the normalized form; errors name `tags[i]` or `note`.
    pub fn validate(&self) -> Result<(), ValidationErrors> {
        let mut e = ValidationErrors::default();
        if self.tags.len() > MAX_TAGS {
            e.push("tags", format!("at most {MAX_TAGS} tags"));
        }
        for (i, t) in self.tags.iter().enumerate() {
            if let Some(p) = tag_problem(t) {
                e.push(&format!("tags[{i}]"), p);
            }
        }
        if self.note.chars().count() > MAX_NOTE_CHARS {
            e.push("note", format!("must be at most {MAX_NOTE_CHARS} characters"));
        }
        crate::text::check_chars(&mut e, "note", &self.note);
        e.into_result()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_box_becomes_lower_case_tags_without_repeats() {
        let a = Annotations::from_form(" FP8, h100-sxm  fp8,,team:serving ", "  warm cache\r\nsecond line ");
        let n = a.normalized();
        assert_eq!(n.tags, ["fp8", "h100-sxm", "team:serving"]);
        assert_eq!(n.note, "warm cache\nsecond line");
        assert_eq!(n.validate(), Ok(()));
    }

    #[test]
    fn bad_tags_and_notes_are_refused_naming_the_field() {
        let n = Annotations {
            tags: vec!["ok".into(), "has<angle".into(), "x".repeat(41)],
            note: "a\u{0}b".into(),
        };
        let e = n.validate().unwrap_err();
        let fields: Vec<&str> = e.0.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["tags[1]", "tags[2]", "note"]);
        assert!(e.for_field("tags[1]").unwrap().contains("'<'"), "{e}");
        assert!(e.for_field("note").unwrap().contains("NUL"), "{e}");
        let many = Annotations { tags: (0..17).map(|i| format!("t{i}")).collect(), note: String::new() };
        assert_eq!(many.validate().unwrap_err().0[0].field, "tags");
        let long = Annotations { tags: vec![], note: "n".repeat(MAX_NOTE_CHARS + 1) };
        assert_eq!(long.validate().unwrap_err().0[0].field, "note");
        let bidi = Annotations { tags: vec![], note: "x\u{202E}y".into() };
        assert!(bidi.validate().unwrap_err().to_string().contains("right-to-left"));
    }
}
