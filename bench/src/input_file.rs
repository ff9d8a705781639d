//! Opening the files a run reads (datasets, tokenizers) defensively: regular files only
//! (never a device such as `/dev/zero`, a FIFO that would block, or a folder), under a
//! size cap, and opened without blocking, so a bad path is an error in milliseconds.

use crate::error::BenchError;
use std::fs::File;
use std::io::{BufRead, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Largest dataset read (the full ShareGPT V3 file is 642 MB).
pub const MAX_DATASET_BYTES: u64 = 4 << 30;
/// Largest tokenizer file (Qwen3's `tokenizer.json` is 11 MB).
pub const MAX_TOKENIZER_BYTES: u64 = 256 << 20;
/// Longest JSONL line: one prompt of several hundred thousand tokens fits.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// `path` opened for reading, when it is a regular file of at most `max_bytes`; the reader
/// stops at `max_bytes` even if the file grows meanwhile.
pub fn open_regular(path: &Path, max_bytes: u64) -> Result<std::io::Take<File>, BenchError> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. It
    // changes nothing for regular files, which are all that pass the check below.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| BenchError::io(path, e))?;
    let meta = file.metadata().map_err(|e| BenchError::io(path, e))?;
    if !meta.is_file() {
        return Err(BenchError::dataset(path, "is not a regular file"));
    }
    if meta.len() > max_bytes {
        return Err(BenchError::dataset(
            path,
            format!("is {} bytes; files above {max_bytes} bytes are refused", meta.len()),
        ));
    }
    Ok(file.take(max_bytes))
}

/// The next line of `r` (without its `\n`), `None` at the end; a line longer than
/// `MAX_LINE_BYTES` or not UTF-8 is an error naming its number.
pub fn next_line(r: &mut impl BufRead, number: usize, path: &Path) -> Result<Option<String>, BenchError> {
    let mut buf = Vec::new();
    let n = r
        .by_ref()
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', &mut buf)
        .map_err(|e| BenchError::io(path, e))?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > MAX_LINE_BYTES {
        return Err(BenchError::dataset(
            path,
            format!("line {number} is longer than {MAX_LINE_BYTES} bytes"),
        ));
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| BenchError::dataset(path, format!("line {number} is not UTF-8 text")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_folders_and_huge_files_are_refused_at_once() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        assert_eq!(
            unsafe { libc::mkfifo(std::ffi::CString::new(fifo.to_str().unwrap()).unwrap().as_ptr(), 0o600) },
            0
        );
        let t = std::time::Instant::now();
        for p in [Path::new("/dev/zero"), fifo.as_path(), d.path()] {
            let e = open_regular(p, 1 << 20).unwrap_err().to_string();
            assert!(e.contains("not a regular file") || e.contains("Is a directory"), "{p:?}: {e}");
        }
        assert!(t.elapsed().as_secs() < 2, "a FIFO must not block");
        let f = d.path().join("f");
        std::fs::write(&f, vec![b'x'; 100]).unwrap();
        assert!(open_regular(&f, 99).unwrap_err().to_string().contains("100 bytes"));
        assert!(open_regular(&f, 100).is_ok());
    }

    #[test]
    fn lines_are_capped_and_numbered() {
        let p = Path::new("x.jsonl");
        let mut ok = std::io::Cursor::new(b"a\nb".to_vec());
        assert_eq!(next_line(&mut ok, 1, p).unwrap().as_deref(), Some("a"));
        assert_eq!(next_line(&mut ok, 2, p).unwrap().as_deref(), Some("b"));
        assert_eq!(next_line(&mut ok, 3, p).unwrap(), None);
        let mut long = std::io::Cursor::new(vec![b'y'; MAX_LINE_BYTES + 10]);
        assert!(next_line(&mut long, 7, p).unwrap_err().to_string().contains("line 7 is longer"));
        let mut bad = std::io::Cursor::new(vec![0xff, b'\n']);
        assert!(next_line(&mut bad, 1, p).unwrap_err().to_string().contains("not UTF-8"));
    }
}
