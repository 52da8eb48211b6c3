//! The local spool: batches acknowledged while ClickHouse could not take them, on disk until
//! it can.
//!
//! One file per batch (`<seq>.spool`: the records' JSONEachRow body, then the beacons'),
//! written to a temporary name, fsynced, renamed, and the folder fsynced: after a crash a
//! batch is either whole or absent, never half, and an acknowledged one is on disk. Bounded by
//! bytes (`--spool-max-mb`); past the bound `push` refuses and ingest answers 503 with
//! Retry-After (the SDK keeps the beacon and retries): nothing acknowledged is dropped.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A batch as ClickHouse takes it: two `JSONEachRow` bodies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    pub records: Vec<u8>,
    pub beacons: Vec<u8>,
}

impl Batch {
    pub fn len(&self) -> usize {
        self.records.len() + self.beacons.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn append(&mut self, o: &Batch) {
        self.records.extend_from_slice(&o.records);
        self.beacons.extend_from_slice(&o.beacons);
    }
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(8 + self.len());
        v.extend_from_slice(&(self.records.len() as u64).to_le_bytes());
        v.extend_from_slice(&self.records);
        v.extend_from_slice(&self.beacons);
        v
    }
    fn decode(b: &[u8]) -> io::Result<Batch> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "spool file: bad length");
        let n = u64::from_le_bytes(b.get(..8).ok_or_else(bad)?.try_into().map_err(|_| bad())?) as usize;
        let rest = &b[8..];
        if n > rest.len() {
            return Err(bad());
        }
        Ok(Batch {
            records: rest[..n].to_vec(),
            beacons: rest[n..].to_vec(),
        })
    }
}

#[derive(Debug)]
pub enum PushError {
    /// The spool holds its bound already.
    Full,
    Io(io::Error),
}

struct State {
    /// (sequence number, bytes on disk), oldest first.
    files: VecDeque<(u64, u64)>,
    bytes: u64,
    next: u64,
}

pub struct Spool {
    dir: PathBuf,
    pub max_bytes: u64,
    state: Mutex<State>,
}

impl Spool {
    /// Opens (creating) the folder and takes over the batches a previous run left there.
    pub fn open(dir: &Path, max_bytes: u64) -> io::Result<Spool> {
        fs::create_dir_all(dir)?;
        let mut files = Vec::new();
        for e in fs::read_dir(dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(seq) = name.strip_suffix(".spool").and_then(|s| s.parse::<u64>().ok()) {
                files.push((seq, e.metadata()?.len()));
            } else if name.ends_with(".tmp") {
                // A write that never reached its rename: never acknowledged.
                let _ = fs::remove_file(e.path());
            }
        }
        files.sort();
        let bytes = files.iter().map(|f| f.1).sum();
        let next = files.last().map_or(0, |f| f.0 + 1);
        Ok(Spool {
            dir: dir.to_path_buf(),
            max_bytes,
            state: Mutex::new(State {
                files: files.into(),
                bytes,
                next,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn path(&self, seq: u64) -> PathBuf {
        self.dir.join(format!("{seq:020}.spool"))
    }

    /// Writes a batch durably; `Full` when it would take the spool past its bound.
    pub fn push(&self, b: &Batch) -> Result<(), PushError> {
        let data = b.encode();
        let seq = {
            let mut s = self.lock();
            if s.bytes + data.len() as u64 > self.max_bytes {
                return Err(PushError::Full);
            }
            // Reserved now, so concurrent pushes cannot overshoot the bound together.
            s.bytes += data.len() as u64;
            s.next += 1;
            s.next - 1
        };
        let r = (|| {
            let tmp = self.dir.join(format!("{seq:020}.tmp"));
            let mut f = File::create(&tmp)?;
            f.write_all(&data)?;
            f.sync_all()?;
            fs::rename(&tmp, self.path(seq))?;
            File::open(&self.dir)?.sync_all()
        })();
        let mut s = self.lock();
        match r {
            Ok(()) => {
                // Kept in sequence order (pushes may finish out of order).
                let at = s.files.partition_point(|f| f.0 < seq);
                s.files.insert(at, (seq, data.len() as u64));
                Ok(())
            }
            Err(e) => {
                s.bytes -= data.len() as u64;
                Err(PushError::Io(e))
            }
        }
    }

    /// The oldest batches, joined into one of about `max_bytes` at most (at least one batch):
    /// a backlog drains in large inserts. Returns their sequence numbers and the joined batch.
    pub fn oldest_joined(&self, max_bytes: u64) -> io::Result<(Vec<u64>, Batch)> {
        let files: Vec<(u64, u64)> = {
            let s = self.lock();
            let mut total = 0;
            s.files
                .iter()
                .take_while(|(_, n)| {
                    total += n;
                    total <= max_bytes || total == *n
                })
                .copied()
                .collect()
        };
        let mut joined = Batch::default();
        for (seq, _) in &files {
            joined.append(&Batch::decode(&fs::read(self.path(*seq))?)?);
        }
        Ok((files.into_iter().map(|f| f.0).collect(), joined))
    }

    /// The batch is in ClickHouse: forget it.
    pub fn remove(&self, seq: u64) -> io::Result<()> {
        fs::remove_file(self.path(seq))?;
        let mut s = self.lock();
        if let Some(i) = s.files.iter().position(|f| f.0 == seq) {
            let (_, n) = s.files.remove(i).expect("present");
            s.bytes -= n;
        }
        Ok(())
    }

    /// (batches, bytes) waiting.
    pub fn size(&self) -> (usize, u64) {
        let s = self.lock();
        (s.files.len(), s.bytes)
    }

    pub fn is_empty(&self) -> bool {
        self.lock().files.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("llm-rum-spool-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn batches_survive_a_reopen_in_order_and_the_bound_refuses() {
        let d = dir("order");
        let b = |s: &str| Batch {
            records: s.as_bytes().to_vec(),
            beacons: b"{}\n".to_vec(),
        };
        let sp = Spool::open(&d, 60).unwrap();
        sp.push(&b("one\n")).unwrap();
        sp.push(&b("two\n")).unwrap();
        // 2 × (8 + 4 + 3) = 30 bytes held; a third and fourth fit, a fifth does not.
        assert_eq!(sp.size(), (2, 30));
        sp.push(&b("3333\n")).unwrap();
        assert!(matches!(sp.push(&b("4444\n")), Err(PushError::Full)));
        std::fs::write(d.join("00000000000000000099.tmp"), b"torn").unwrap();
        drop(sp);
        let sp = Spool::open(&d, 60).unwrap();
        assert_eq!(sp.size().0, 3);
        assert!(!d.join("00000000000000000099.tmp").exists());
        let (seq, first) = sp.oldest_joined(1).unwrap();
        assert_eq!(first, b("one\n"));
        sp.remove(seq[0]).unwrap();
        assert_eq!(sp.oldest_joined(1).unwrap().1, b("two\n"));
        assert_eq!(sp.size(), (2, 31));
        // Joined: as many oldest batches as fit the bytes given, at least one.
        let (seqs, j) = sp.oldest_joined(31).unwrap();
        assert_eq!((seqs.len(), j.records.as_slice(), j.beacons.as_slice()), (2, &b"two\n3333\n"[..], &b"{}\n{}\n"[..]));
        assert_eq!(sp.oldest_joined(1).unwrap().0.len(), 1);
        let _ = fs::remove_dir_all(&d);
    }
}
