//! Reading the ledger file line by line, for checks that replay it (`Store::scan_lines`).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use bernstein_ledger::StoreError;

/// Feeds the lines of the first `end` bytes of `path` to `each` (without their newlines)
/// until it returns `false`.
pub fn lines(path: &Path, end: u64, each: &mut dyn FnMut(&[u8]) -> bool) -> Result<(), StoreError> {
    let io = |e: std::io::Error| StoreError::Io(format!("read {}: {e}", path.display()));
    let file = File::open(path).map_err(io)?;
    let mut reader = BufReader::with_capacity(1 << 20, file.take(end));
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io)? == 0 {
            return Ok(());
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if !each(text) {
            return Ok(());
        }
    }
}
