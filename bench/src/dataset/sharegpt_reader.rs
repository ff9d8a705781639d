//! Reads a ShareGPT JSON array entry by entry, so the full 640 MB file and the packaged
//! copy that is cut off mid-entry both work: entries seen before a cut-off tail are kept,
//! the broken tail is reported, and only the first two turns of each conversation are
//! held in memory.

use crate::error::BenchError;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use std::fmt;
use std::io::BufReader;
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// A conversation with at least two turns: the first is the prompt, the second the
/// reference completion.
#[derive(Debug, Clone)]
pub struct Pair {
    pub prompt: String,
    pub completion: String,
}

#[derive(Debug, Default)]
pub struct ShareGptFile {
    /// Conversations with at least two turns, in file order.
    pub pairs: Vec<Pair>,
    /// Complete entries parsed (any number of turns).
    pub entries: usize,
    /// The file ended inside an entry (the packaged copy does).
    pub truncated: bool,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    conversations: Option<Vec<Turn>>,
}

#[derive(Deserialize)]
struct Turn {
    #[serde(default)]
    value: Option<String>,
}

struct Collect<'a>(&'a mut ShareGptFile, &'a CancellationToken);

impl<'de> DeserializeSeed<'de> for Collect<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Collect<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of ShareGPT conversations")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(entry) = seq.next_element::<Entry>()? {
            if self.1.is_cancelled() {
                return Err(serde::de::Error::custom(CANCELLED));
            }
            self.0.entries += 1;
            // vLLM keeps entries with a `conversations` list of at least two turns.
            let Some(turns) = entry.conversations else { continue };
            if turns.len() < 2 {
                continue;
            }
            let mut it = turns.into_iter();
            if let (Some(Turn { value: Some(p) }), Some(Turn { value: Some(c) })) = (it.next(), it.next()) {
                self.0.pairs.push(Pair { prompt: p, completion: c });
            }
        }
        Ok(())
    }
}

/// The marker a cancelled read stops with (serde errors carry text only).
const CANCELLED: &str = "latlab: reading cancelled";

pub fn read_sharegpt(path: &Path, cancel: &CancellationToken) -> Result<ShareGptFile, BenchError> {
    let file = crate::input_file::open_regular(path, crate::input_file::MAX_DATASET_BYTES)?;
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, file));
    let mut out = ShareGptFile::default();
    match Collect(&mut out, cancel).deserialize(&mut de) {
        Ok(()) => {}
        Err(e) if e.to_string().starts_with(CANCELLED) => return Err(BenchError::Cancelled),
        // Cut off mid-entry: keep what was whole.
        Err(e) if e.is_eof() && out.entries > 0 => out.truncated = true,
        Err(e) => return Err(BenchError::dataset(path, format!("not a ShareGPT JSON array: {e}"))),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("latlab-bench-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    fn read_sharegpt_now(p: &Path) -> Result<ShareGptFile, BenchError> {
        read_sharegpt(p, &CancellationToken::new())
    }

    #[test]
    fn a_cancelled_read_stops() {
        let c = CancellationToken::new();
        c.cancel();
        let p = write("cancel.json", r#"[{"conversations":[{"value":"a"},{"value":"b"}]}]"#);
        assert!(matches!(read_sharegpt(&p, &c), Err(BenchError::Cancelled)));
    }

    #[test]
    fn whole_and_cut_off_files_are_read() {
        let full = r#"[{"id":"a","conversations":[{"from":"human","value":"p1"},{"from":"gpt","value":"c1"}]},
            {"id":"b","conversations":[{"from":"human","value":"only one"}]},
            {"id":"c","conversations":[{"from":"human","value":"p2"},{"from":"gpt","value":"c2"},{"from":"human","value":"x"}]}]"#;
        let f = read_sharegpt_now(&write("full.json", full)).unwrap();
        assert_eq!((f.entries, f.pairs.len(), f.truncated), (3, 2, false));
        assert_eq!(f.pairs[1].completion, "c2");

        let cut = &full[..full.find("\"c2\"").unwrap()];
        let f = read_sharegpt_now(&write("cut.json", cut)).unwrap();
        assert_eq!((f.entries, f.pairs.len(), f.truncated), (2, 1, true));

        assert!(read_sharegpt_now(&write("bad.json", "{\"not\": \"an array\"}")).is_err());
        assert!(read_sharegpt_now(&write("garbage.json", "[{\"conversations\": [}]")).is_err());
    }
}
