//! Incremental detokenization for streaming: text is released only once it is complete
//! UTF-8 (byte-level BPE can split a character across tokens), and text that might be the
//! start of a stop string is held back until it is known not to be.

use crate::error::Result;
use crate::tokenizer::Tokenizer;

/// Turns a stream of ids into text deltas without splitting characters (the offsets
/// technique of TGI/vLLM: re-decode a short window and emit what grew).
pub struct IncrementalDecoder {
    ids: Vec<u32>,
    prefix_offset: usize,
    read_offset: usize,
}

impl Default for IncrementalDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl IncrementalDecoder {
    pub fn new() -> Self {
        IncrementalDecoder { ids: vec![], prefix_offset: 0, read_offset: 0 }
    }

    /// Text that `id` completes; empty while a character is still partial.
    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> Result<String> {
        self.ids.push(id);
        let prefix = tok.decode(&self.ids[self.prefix_offset..self.read_offset])?;
        let full = tok.decode(&self.ids[self.prefix_offset..])?;
        if full.len() > prefix.len() && !full.ends_with('\u{FFFD}') && full.is_char_boundary(prefix.len()) {
            self.prefix_offset = self.read_offset;
            self.read_offset = self.ids.len();
            Ok(full[prefix.len()..].to_string())
        } else {
            Ok(String::new())
        }
    }

    /// At the end of the stream: whatever is still held (possibly a replacement character
    /// for truly invalid bytes).
    pub fn flush(&mut self, tok: &Tokenizer) -> Result<String> {
        let prefix = tok.decode(&self.ids[self.prefix_offset..self.read_offset])?;
        let full = tok.decode(&self.ids[self.prefix_offset..])?;
        self.prefix_offset = self.ids.len();
        self.read_offset = self.ids.len();
        Ok(full.get(prefix.len()..).unwrap_or("").to_string())
    }
}

/// Detokenizer plus stop strings: `push` returns the text safe to send and whether a stop
/// string was hit (the stop string itself is not returned, as in OpenAI's API).
pub struct TextStream {
    decoder: IncrementalDecoder,
    stops: Vec<String>,
    held: String,
    stopped: bool,
}

impl TextStream {
    pub fn new(stops: Vec<String>) -> Self {
        TextStream {
            decoder: IncrementalDecoder::new(),
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            held: String::new(),
            stopped: false,
        }
    }

    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> Result<(String, bool)> {
        if self.stopped {
            return Ok((String::new(), true));
        }
        let delta = self.decoder.push(tok, id)?;
        Ok(self.accept(delta))
    }

    /// End of generation: release held text.
    pub fn finish(&mut self, tok: &Tokenizer) -> Result<String> {
        if self.stopped {
            return Ok(String::new());
        }
        let delta = self.decoder.flush(tok)?;
        let (mut text, stopped) = self.accept(delta);
        if !stopped {
            text.push_str(&std::mem::take(&mut self.held));
        }
        Ok(text)
    }

    fn accept(&mut self, delta: String) -> (String, bool) {
        self.held.push_str(&delta);
        if let Some(i) = self.stops.iter().filter_map(|s| self.held.find(s.as_str())).min() {
            self.stopped = true;
            let out = self.held[..i].to_string();
            self.held.clear();
            return (out, true);
        }
        // Hold back the longest suffix that is a proper prefix of some stop string.
        let mut keep = 0;
        for s in &self.stops {
            for (n, _) in s.char_indices().skip(1) {
                if n > keep && self.held.ends_with(&s[..n]) {
                    keep = n;
                }
            }
        }
        let cut = self.held.len() - keep;
        let out = self.held[..cut].to_string();
        self.held.drain(..cut);
        (out, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::tests::qwen3;

    #[test]
    fn never_splits_a_character() {
        let t = qwen3();
        let text = "a𠜎𠜱b 你好 — ok 🦀";
        let ids = t.encode(text).unwrap();
        let mut d = IncrementalDecoder::new();
        let mut pieces = vec![];
        for &id in &ids {
            pieces.push(d.push(&t, id).unwrap());
        }
        pieces.push(d.flush(&t).unwrap());
        assert!(pieces.iter().all(|p| !p.contains('\u{FFFD}')));
        assert_eq!(pieces.concat(), text);
        // Rare 4-byte ideographs span several byte-level tokens: some pushes must return "".
        assert!(ids.len() > pieces.iter().filter(|p| !p.is_empty()).count());
    }

    /// Qwen3 pads its embedding to 151,936 rows but the tokenizer knows 151,669 ids; a random
    /// model can sample a padding id, which must decode to nothing rather than fail the request.
    #[test]
    fn padding_ids_decode_to_nothing() {
        let t = qwen3();
        let mut d = IncrementalDecoder::new();
        assert_eq!(d.push(&t, 9707).unwrap(), "Hello");
        assert_eq!(d.push(&t, 151_900).unwrap(), "");
        assert_eq!(d.push(&t, 1879).unwrap(), " world");
        assert_eq!(d.flush(&t).unwrap(), "");
    }

    #[test]
    fn stop_strings_cut_and_hold_back() {
        let t = qwen3();
        let ids = t.encode("one two three four").unwrap();
        let mut s = TextStream::new(vec![" three".into()]);
        let mut out = String::new();
        let mut stopped = false;
        for &id in &ids {
            let (txt, st) = s.push(&t, id).unwrap();
            out.push_str(&txt);
            if st {
                stopped = true;
                break;
            }
        }
        assert!(stopped);
        assert_eq!(out, "one two");
        // No stop hit: everything comes out, held text included.
        let mut s = TextStream::new(vec!["two!".into()]);
        let mut out = String::new();
        for &id in &ids {
            out.push_str(&s.push(&t, id).unwrap().0);
        }
        out.push_str(&s.finish(&t).unwrap());
        assert_eq!(out, "one two three four");
    }
}
