//! Reading the log forward from an offset: what a follower (the index's
//! audit admission) reads of what was appended since it last looked.

use super::*;

impl AuditLog {
    /// The complete lines from byte `offset` on, and the offset just past
    /// the last of them. For readers that follow the log as it grows.
    pub fn read_from(&self, offset: u64) -> Result<(Vec<u8>, u64)> {
        let mut bytes = Vec::new();
        let end = self.read_in_pieces(offset, 1 << 20, |piece, _| {
            bytes.extend_from_slice(piece);
            Ok(())
        })?;
        Ok((bytes, end))
    }

    /// The complete lines from byte `offset` on, handed to `each` a piece
    /// of about `piece` bytes at a time (whole lines; a longer line makes
    /// its piece longer) with the offset the piece starts at; returns the
    /// offset after the last complete line. A follower reading a log of a
    /// million events holds one piece, not the log.
    pub fn read_in_pieces(
        &self,
        offset: u64,
        piece: usize,
        mut each: impl FnMut(&[u8], u64) -> Result<()>,
    ) -> Result<u64> {
        let mut f = match self.open_read() {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(Error::io(&self.path, e)),
        };
        f.seek(SeekFrom::Start(offset))
            .map_err(|e| Error::io(&self.path, e))?;
        let (mut at, mut buf) = (offset, Vec::with_capacity(piece));
        loop {
            let had = buf.len();
            let read = (&mut f)
                .take(piece as u64)
                .read_to_end(&mut buf)
                .map_err(|e| Error::io(&self.path, e))?;
            // Whole lines only: the rest waits for the next piece (at the
            // end of the file, a torn line is left out).
            if let Some(last) = buf[had..].iter().rposition(|b| *b == b'\n') {
                let complete = had + last + 1;
                each(&buf[..complete], at)?;
                at += complete as u64;
                buf.drain(..complete);
            }
            if read == 0 {
                return Ok(at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces of any size hand over every complete line once, in order,
    /// each at its offset — a line longer than a piece included — and
    /// leave a torn last line out.
    #[test]
    fn pieces_hand_over_whole_lines_at_their_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log.jsonl");
        let long = "x".repeat(50);
        let text = format!("a\nbb\n{long}\n\nccc\ntorn");
        std::fs::write(&path, &text).unwrap();
        let log = AuditLog::new(path);
        let whole = text.len() - "torn".len();
        for piece in [1, 3, 7, 64, 1 << 20] {
            for from in [0, 2, 5] {
                let mut seen = Vec::new();
                let end = log
                    .read_in_pieces(from as u64, piece, |bytes, at| {
                        assert_eq!(bytes.last(), Some(&b'\n'), "whole lines");
                        assert_eq!(&text.as_bytes()[at as usize..][..bytes.len()], bytes);
                        seen.extend_from_slice(bytes);
                        Ok(())
                    })
                    .unwrap();
                assert_eq!(end, whole as u64, "piece {piece} from {from}");
                assert_eq!(
                    seen,
                    text.as_bytes()[from..whole],
                    "piece {piece} from {from}"
                );
                assert_eq!(log.read_from(from as u64).unwrap(), (seen, end));
            }
        }
    }
}
