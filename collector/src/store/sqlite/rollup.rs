//! Rollups: per-period aggregates of the records, so a read never has to see every record.
//!
//! A rollup row is the `Agg` of the records whose `startEpochMs` falls in one period, for one
//! key (route, model, outcome). Three levels: minutes, hours, days (UTC). The writer thread
//! keeps the minute rows: each commit adds its records' part as a small delta row, in the same
//! transaction as the records themselves, merged into the minute rows once a second (reads
//! add the deltas they cover, so they always see every committed record). An hour (a day)
//! is built by merging the rows of the level below (*compaction*), in the background, once it
//! is complete (ended `GRACE_MS` ago) and quiet (no record for `QUIET`). A record marks its
//! hour and day *dirty* (`rollup_dirty`, same transaction) until compaction has rebuilt them,
//! and a read uses an hour or day row only when it is not dirty: so live traffic writes one
//! level, a late record (or a replaced partial) rebuilds its hour and day later, and a read is
//! always exact in what it counts. A window's read takes the coarsest clean periods inside it,
//! finer ones at its edges, and the raw records only for what is not a whole minute (`plan`).
//!
//! Keys are bounded: a minute keeps at most `MAX_KEYS` (route, model, outcome) keys, an hour or
//! day the `MAX_KEYS` largest; the rest fold into (`OTHER`, `OTHER`, outcome) and the period is
//! marked *overflowed*. Unfiltered reads still use its rows; reads filtered by route or model go
//! one level down, to the raw records for an overflowed minute. So any mix of beacons, however
//! hostile, costs at most `MAX_KEYS` rows per period.
//!
//! A stored `partial` replaced by its completed version is taken back out of its minute row
//! (`Agg::subtract`, after merging the deltas) before the new version goes in: rollups always
//! sum the stored records.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::query::agg::{Agg, Sample, Want, MAX_SERVER_STAGES};
use llm_rum_sketch::{get_varint, put_varint};

/// Period length per level, ms.
pub const LEVEL_MS: [i64; 3] = [60_000, 3_600_000, 86_400_000];
/// Keys per period at most.
pub const MAX_KEYS: usize = 256;
/// Route and model of folded keys; parentheses never survive `keys::safe_key`, so no real
/// route or model can collide with it.
pub const OTHER: &str = "(other)";
/// An hour (day) is compacted once it ended this long ago: most of its records have arrived.
pub const GRACE_MS: i64 = 5 * 60_000;
/// …and no record has touched it for this long (a backfill or a burst of late records
/// rebuilds it once, not once per commit).
pub const QUIET: Duration = Duration::from_secs(2);

/// Tables of migration 2.
pub const SCHEMA: &str = r#"
CREATE TABLE rollups (
  level   INTEGER NOT NULL,   -- 0 minute, 1 hour, 2 day
  period  INTEGER NOT NULL,   -- floor(start_ms / period length)
  route   TEXT NOT NULL,      -- '' when the record had none
  model   TEXT NOT NULL,
  outcome TEXT NOT NULL,
  n       INTEGER NOT NULL,
  data    BLOB NOT NULL       -- agg::Agg::encode
);
CREATE UNIQUE INDEX rollups_key ON rollups(level, period, route, model, outcome);
CREATE TABLE rollup_overflow (level INTEGER NOT NULL, period INTEGER NOT NULL,
                              PRIMARY KEY (level, period)) WITHOUT ROWID;
CREATE TABLE rollup_dirty (level INTEGER NOT NULL, period INTEGER NOT NULL,
                           PRIMARY KEY (level, period)) WITHOUT ROWID;
CREATE TABLE rollup_delta (minute INTEGER NOT NULL, data BLOB NOT NULL); -- one commit's part
CREATE INDEX rollup_delta_minute ON rollup_delta(minute);
CREATE TABLE beacon_rollups (
  minute         INTEGER PRIMARY KEY,   -- floor(received_ms / 60000)
  beacons        INTEGER NOT NULL,
  dropped        REAL NOT NULL,
  refused_old    REAL NOT NULL,
  refused_future REAL NOT NULL
);
"#;

pub fn period(level: usize, t_ms: f64) -> i64 {
    (t_ms / LEVEL_MS[level] as f64).floor() as i64
}

/// (route, model, outcome) as stored.
pub type Key = (String, String, String);

pub fn key_of(s: &Sample) -> Key {
    (
        s.route.clone().unwrap_or_default(),
        s.model.clone().unwrap_or_default(),
        s.outcome.clone(),
    )
}

fn other(outcome: &str) -> Key {
    (OTHER.into(), OTHER.into(), outcome.into())
}

/// Periods at `level` with `lo <= period < hi` that are dirty (their rows are stale).
pub fn dirty(c: &Connection, level: usize, lo: i64, hi: i64) -> rusqlite::Result<HashSet<i64>> {
    let mut st = c.prepare_cached(
        "SELECT period FROM rollup_dirty WHERE level = ?1 AND period >= ?2 AND period < ?3",
    )?;
    let rows = st.query_map(params![level as i64, lo, hi], |r| r.get::<_, i64>(0))?;
    rows.collect()
}

#[derive(Default)]
struct MinuteKeys {
    set: HashSet<u32>,
    overflow: bool,
}

/// The writer's side. Each commit adds what its records contribute as one small *delta* row
/// per minute (`rollup_delta`: cost in proportion to the commit, not to the minute's rows); once
/// a second the deltas are merged into the minute rows, which the writer keeps decoded. Reads
/// add the deltas of the minutes they read, so nothing committed is ever missing from them.
#[derive(Default)]
pub struct Rollups {
    /// Keys interned to small ids (cheap to hash and compare per record).
    ids: HashMap<Key, u32>,
    names: Vec<Key>,
    /// Minute rows, decoded (the merge and a replaced partial update them).
    rows: HashMap<(i64, u32), Agg>,
    /// This transaction's contributions, per minute and key.
    pending: HashMap<i64, HashMap<u32, Agg>>,
    minutes: HashMap<i64, MinuteKeys>,
    new_overflow: Vec<i64>,
    /// Dirty marks in the database (as far as this writer knows) → last touched.
    marked: HashMap<(usize, i64), Instant>,
    new_marks: Vec<(usize, i64)>,
    /// Delta rows may be waiting to be merged.
    deltas: bool,
}

/// Rows and minutes kept decoded between merges (the current minutes' rows are merged into
/// every second), and interned keys at most.
const CACHE_ROWS: usize = 2048;
const CACHE_MINUTES: usize = 1024;
const MAX_IDS: usize = 100_000;

impl Rollups {
    pub fn new() -> Rollups {
        Rollups {
            deltas: true, // a previous run may have left some
            ..Rollups::default()
        }
    }

    fn intern(&mut self, k: Key) -> u32 {
        if let Some(id) = self.ids.get(&k) {
            return *id;
        }
        let id = self.names.len() as u32;
        self.names.push(k.clone());
        self.ids.insert(k, id);
        id
    }

    /// Adds (or, `sub`, takes back out) one record in its minute, and marks its hour and day
    /// dirty.
    pub fn apply(&mut self, tx: &Transaction, s: &Sample, sub: bool) -> rusqlite::Result<()> {
        let m = period(0, s.start_ms);
        let id = self.intern(key_of(s));
        let id = self.admit(tx, m, id, !sub)?;
        if sub {
            // The record may still be in a delta: merge everything first, then take it out of
            // the minute row itself (rare: a partial replaced by its completed version).
            self.write_pending(tx)?;
            self.merge(tx)?;
            let Some(row) = self.row(tx, (m, id), false)? else {
                return Ok(()); // not there (retention took it): nothing to undo
            };
            let mut one = Agg::default();
            one.add(s, usize::MAX);
            row.subtract(&one);
            self.write_rows(tx, &[(m, id)])?;
        } else {
            self.pending
                .entry(m)
                .or_default()
                .entry(id)
                .or_default()
                .add(s, MAX_SERVER_STAGES);
        }
        let now = Instant::now();
        for level in 1..LEVEL_MS.len() {
            let p = period(level, s.start_ms);
            if self.marked.insert((level, p), now).is_none() {
                self.new_marks.push((level, p));
            }
        }
        Ok(())
    }

    /// The minute row `rk`, from the cache or the database; created empty when `create`.
    fn row(&mut self, tx: &Transaction, rk: (i64, u32), create: bool) -> rusqlite::Result<Option<&mut Agg>> {
        if !self.rows.contains_key(&rk) {
            match load_row(tx, 0, rk.0, &self.names[rk.1 as usize])? {
                Some(a) => {
                    self.rows.insert(rk, a);
                }
                None if create => {
                    self.rows.insert(rk, Agg::default());
                }
                None => return Ok(None),
            }
        }
        Ok(self.rows.get_mut(&rk))
    }

    fn write_rows(&self, tx: &Transaction, rks: &[(i64, u32)]) -> rusqlite::Result<()> {
        let mut up = tx.prepare_cached(
            "INSERT INTO rollups(level, period, route, model, outcome, n, data) VALUES (0,?1,?2,?3,?4,?5,?6) \
             ON CONFLICT(level, period, route, model, outcome) DO UPDATE SET n = excluded.n, data = excluded.data",
        )?;
        for rk in rks {
            let a = &self.rows[rk];
            let (route, model, outcome) = &self.names[rk.1 as usize];
            up.execute(params![rk.0, route, model, outcome, a.n as i64, a.encode()])?;
        }
        Ok(())
    }

    /// The key a record is counted under in minute `m`: its own while the minute has room (or
    /// already has it), else the folded key. `create`: false when taking a record back out (its
    /// key is either there or was folded).
    fn admit(&mut self, tx: &Transaction, m: i64, id: u32, create: bool) -> rusqlite::Result<u32> {
        if !self.minutes.contains_key(&m) {
            let mut mk = MinuteKeys::default();
            for k in load_keys(tx, m)? {
                mk.set.insert(self.intern(k));
            }
            mk.overflow = tx
                .prepare_cached("SELECT 1 FROM rollup_overflow WHERE level = 0 AND period = ?1")?
                .exists([m])?;
            self.minutes.insert(m, mk);
        }
        let is_other = self.names[id as usize].0 == OTHER;
        let o = other(&self.names[id as usize].2);
        let oid = self.intern(o);
        let mk = self.minutes.get_mut(&m).expect("loaded");
        if mk.set.contains(&id) {
            return Ok(id);
        }
        if create && mk.set.len() < MAX_KEYS && !is_other {
            mk.set.insert(id);
            return Ok(id);
        }
        if create {
            if !mk.overflow {
                mk.overflow = true;
                self.new_overflow.push(m);
            }
            mk.set.insert(oid);
        }
        Ok(oid)
    }

    /// This transaction's contributions as delta rows (one per minute).
    fn write_pending(&mut self, tx: &Transaction) -> rusqlite::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut ins = tx.prepare_cached("INSERT INTO rollup_delta(minute, data) VALUES (?1, ?2)")?;
        for (m, by) in std::mem::take(&mut self.pending) {
            let entries: Vec<(&Key, &Agg)> =
                by.iter().map(|(id, a)| (&self.names[*id as usize], a)).collect();
            ins.execute(params![m, encode_delta(&entries)])?;
        }
        self.deltas = true;
        Ok(())
    }

    /// Writes what this transaction's records contribute, the overflow and dirty marks (in the
    /// caller's transaction).
    pub fn flush(&mut self, tx: &Transaction) -> rusqlite::Result<()> {
        self.write_pending(tx)?;
        let mut ov = tx.prepare_cached(
            "INSERT OR IGNORE INTO rollup_overflow(level, period) VALUES (0, ?1)",
        )?;
        for m in &self.new_overflow {
            ov.execute([m])?;
        }
        let mut mark = tx.prepare_cached(
            "INSERT OR IGNORE INTO rollup_dirty(level, period) VALUES (?1, ?2)",
        )?;
        for (level, p) in &self.new_marks {
            mark.execute(params![*level as i64, p])?;
        }
        Ok(())
    }

    /// Merges every delta row into its minute rows, and deletes the deltas (in `tx`).
    fn merge(&mut self, tx: &Transaction) -> rusqlite::Result<()> {
        if !self.deltas {
            return Ok(());
        }
        let mut last: Option<i64> = None;
        let mut touched: HashSet<(i64, u32)> = HashSet::new();
        {
            let mut st = tx.prepare_cached("SELECT rowid, minute, data FROM rollup_delta ORDER BY rowid")?;
            let mut q = st.query([])?;
            while let Some(r) = q.next()? {
                last = Some(r.get(0)?);
                let m: i64 = r.get(1)?;
                let data: Vec<u8> = r.get(2)?;
                for (k, a) in decode_delta(&data, Want::ALL).unwrap_or_default() {
                    let id = self.intern(k);
                    if let Some(row) = self.row(tx, (m, id), true)? {
                        row.merge(&a, MAX_SERVER_STAGES);
                    }
                    touched.insert((m, id));
                }
            }
        }
        let touched: Vec<(i64, u32)> = touched.into_iter().collect();
        self.write_rows(tx, &touched)?;
        if let Some(last) = last {
            tx.execute("DELETE FROM rollup_delta WHERE rowid <= ?1", [last])?;
        }
        self.deltas = false;
        Ok(())
    }

    /// Merges the deltas in a transaction of its own (once a second).
    pub fn merge_step(&mut self, c: &mut Connection) -> rusqlite::Result<()> {
        if !self.deltas {
            return Ok(());
        }
        let tx = c.transaction()?;
        let r = self.merge(&tx).and_then(|_| tx.commit());
        if r.is_err() {
            self.forget();
        }
        self.trim();
        r
    }

    /// After a transaction that wrote records: on failure the caches may be ahead of the
    /// database, so they are dropped.
    pub fn settle(&mut self, committed: bool) {
        self.new_overflow.clear();
        self.new_marks.clear();
        if !committed {
            return self.forget();
        }
        self.trim();
    }

    fn trim(&mut self) {
        if self.rows.len() > CACHE_ROWS {
            // The newest minutes are the ones still being written.
            let newest = self.rows.keys().map(|k| k.0).max().unwrap_or(0);
            self.rows.retain(|k, _| k.0 >= newest - 1);
        }
        if self.minutes.len() > CACHE_MINUTES {
            let newest = self.minutes.keys().copied().max().unwrap_or(0);
            self.minutes.retain(|m, _| *m >= newest - 1);
        }
        if self.ids.len() > MAX_IDS {
            self.forget();
        }
    }

    /// Forgets everything cached (after a failed commit, or retention deleted rows).
    pub fn forget(&mut self) {
        *self = Rollups::new();
    }

    /// One step of compaction, if one is due: rebuilds the oldest dirty hour (then day) that is
    /// complete and quiet from the level below, in its own transaction. `Ok(false)`: none due.
    pub fn compact_step(&mut self, c: &mut Connection, now_ms: f64) -> rusqlite::Result<bool> {
        let marks: Vec<(usize, i64)> = c
            .prepare_cached("SELECT level, period FROM rollup_dirty ORDER BY level, period")?
            .query_map([], |r| Ok((r.get::<_, i64>(0)? as usize, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let due = marks.iter().copied().find(|&(level, p)| {
            let len = LEVEL_MS[level];
            let complete = (p + 1) * len + GRACE_MS <= now_ms as i64;
            let quiet = self.marked.get(&(level, p)).is_none_or(|t| t.elapsed() >= QUIET);
            // A day only from clean hours.
            let hours_clean = level != 2
                || !marks.iter().any(|&(l, h)| l == 1 && h.div_euclid(24) == p);
            level > 0 && complete && quiet && hours_clean
        });
        let Some((level, p)) = due else {
            return Ok(false);
        };
        let tx = c.transaction()?;
        let r = self.merge(&tx).and_then(|_| {
            compact(&tx, level, p)?;
            tx.execute(
                "DELETE FROM rollup_dirty WHERE level = ?1 AND period = ?2",
                params![level as i64, p],
            )?;
            tx.commit()
        });
        if r.is_err() {
            self.forget();
        }
        r?;
        self.marked.remove(&(level, p));
        Ok(true)
    }
}

/// A delta row's data: its (key, aggregate) pairs.
pub fn encode_delta(entries: &[(&Key, &Agg)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 * entries.len());
    put_varint(&mut out, entries.len() as u64);
    for ((route, model, outcome), a) in entries {
        for s in [route, model, outcome] {
            put_varint(&mut out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        let e = a.encode();
        put_varint(&mut out, e.len() as u64);
        out.extend_from_slice(&e);
    }
    out
}

/// The pairs of a delta row (decoding what `want` asks for); `None` when damaged.
pub fn decode_delta(buf: &[u8], want: Want) -> Option<Vec<(Key, Agg)>> {
    let mut at = 0;
    let n = get_varint(buf, &mut at)?;
    let mut out = Vec::new();
    let text = |at: &mut usize| -> Option<String> {
        let len = usize::try_from(get_varint(buf, at)?).ok()?;
        let s = std::str::from_utf8(buf.get(*at..at.checked_add(len)?)?).ok()?;
        *at += len;
        Some(s.to_string())
    };
    for _ in 0..n.min(1 << 16) {
        let key = (text(&mut at)?, text(&mut at)?, text(&mut at)?);
        let len = usize::try_from(get_varint(buf, &mut at)?).ok()?;
        let a = Agg::decode(buf.get(at..at.checked_add(len)?)?, want)?;
        at += len;
        out.push((key, a));
    }
    Some(out)
}

fn load_row(tx: &Transaction, level: usize, p: i64, key: &Key) -> rusqlite::Result<Option<Agg>> {
    let (route, model, outcome) = key;
    let mut st = tx.prepare_cached(
        "SELECT data FROM rollups WHERE level = ?1 AND period = ?2 AND route = ?3 AND model = ?4 AND outcome = ?5",
    )?;
    let data: Option<Vec<u8>> = st
        .query_row(params![level as i64, p, route, model, outcome], |r| r.get(0))
        .optional()?;
    // A row that does not decode (damaged) starts again from empty rather than failing ingest.
    Ok(data.map(|d| Agg::decode(&d, Want::ALL).unwrap_or_default()))
}

/// The keys minute `m` holds: its rows' and its deltas'.
fn load_keys(tx: &Transaction, m: i64) -> rusqlite::Result<Vec<Key>> {
    let mut st = tx.prepare_cached(
        "SELECT route, model, outcome FROM rollups WHERE level = 0 AND period = ?1",
    )?;
    let mut keys: Vec<Key> = st
        .query_map([m], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut st = tx.prepare_cached("SELECT data FROM rollup_delta WHERE minute = ?1")?;
    for d in st.query_map([m], |r| r.get::<_, Vec<u8>>(0))? {
        let d = d?;
        let stages_off = Want { metrics: 0, stages: false };
        for (k, _) in decode_delta(&d, stages_off).unwrap_or_default() {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    Ok(keys)
}

/// (Re)builds period `p` of `level` from the rows of the level below. The largest keys keep rows
/// of their own when the period has more than `MAX_KEYS`.
fn compact(tx: &Transaction, level: usize, p: i64) -> rusqlite::Result<()> {
    let ratio = LEVEL_MS[level] / LEVEL_MS[level - 1];
    let (lo, hi) = (p * ratio, (p + 1) * ratio);
    let below = (level - 1) as i64;
    tx.execute(
        "DELETE FROM rollups WHERE level = ?1 AND period = ?2",
        params![level as i64, p],
    )?;
    tx.execute(
        "DELETE FROM rollup_overflow WHERE level = ?1 AND period = ?2",
        params![level as i64, p],
    )?;
    let mut by: HashMap<Key, Agg> = HashMap::new();
    {
        let mut st = tx.prepare_cached(
            "SELECT route, model, outcome, data FROM rollups WHERE level = ?1 AND period >= ?2 AND period < ?3",
        )?;
        let mut rows = st.query(params![below, lo, hi])?;
        while let Some(r) = rows.next()? {
            let key: Key = (r.get(0)?, r.get(1)?, r.get(2)?);
            let data: Vec<u8> = r.get(3)?;
            if let Some(a) = Agg::decode(&data, Want::ALL) {
                by.entry(key).or_default().merge(&a, MAX_SERVER_STAGES);
            }
        }
    }
    let mut overflow = tx
        .prepare_cached("SELECT 1 FROM rollup_overflow WHERE level = ?1 AND period >= ?2 AND period < ?3")?
        .exists(params![below, lo, hi])?;
    let mut keys: Vec<(Key, Agg)> = by.into_iter().collect();
    keys.sort_by(|a, b| b.1.n.cmp(&a.1.n).then_with(|| a.0.cmp(&b.0)));
    let mut out: HashMap<Key, Agg> = HashMap::new();
    for (k, a) in keys {
        let k = if out.len() < MAX_KEYS && k.0 != OTHER || out.contains_key(&k) {
            k
        } else {
            overflow = true;
            other(&k.2)
        };
        out.entry(k).or_default().merge(&a, MAX_SERVER_STAGES);
    }
    let mut ins = tx.prepare_cached(
        "INSERT INTO rollups(level, period, route, model, outcome, n, data) VALUES (?1,?2,?3,?4,?5,?6,?7)",
    )?;
    for ((route, model, outcome), a) in &out {
        ins.execute(params![level as i64, p, route, model, outcome, a.n as i64, a.encode()])?;
    }
    if overflow {
        tx.execute(
            "INSERT OR IGNORE INTO rollup_overflow(level, period) VALUES (?1, ?2)",
            params![level as i64, p],
        )?;
    }
    Ok(())
}

/// Beacon counts per received minute, added in the commit that stores the beacons.
pub fn add_beacons(
    tx: &Transaction,
    minute: i64,
    beacons: u64,
    dropped: f64,
    refused_old: f64,
    refused_future: f64,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO beacon_rollups(minute, beacons, dropped, refused_old, refused_future) VALUES (?1,?2,?3,?4,?5) \
         ON CONFLICT(minute) DO UPDATE SET beacons = beacons + excluded.beacons, dropped = dropped + excluded.dropped, \
         refused_old = refused_old + excluded.refused_old, refused_future = refused_future + excluded.refused_future",
    )?
    .execute(params![minute, beacons as i64, dropped, refused_old, refused_future])?;
    Ok(())
}

/// Deletes up to `limit` rollup rows (of every level, and beacon rollups) whose period ended
/// before `cutoff_ms`. Returns how many went.
pub fn delete_before(tx: &Transaction, cutoff_ms: i64, limit: usize) -> rusqlite::Result<usize> {
    let mut n = 0;
    for (level, len) in LEVEL_MS.iter().enumerate() {
        let end = cutoff_ms.div_euclid(*len); // periods < end ended by the cutoff
        n += tx.execute(
            "DELETE FROM rollups WHERE rowid IN (SELECT rowid FROM rollups WHERE level = ?1 AND period < ?2 LIMIT ?3)",
            params![level as i64, end, limit as i64],
        )?;
        for table in ["rollup_overflow", "rollup_dirty"] {
            tx.execute(
                &format!("DELETE FROM {table} WHERE level = ?1 AND period < ?2"),
                params![level as i64, end],
            )?;
        }
    }
    tx.execute(
        "DELETE FROM rollup_delta WHERE minute < ?1",
        [cutoff_ms.div_euclid(60_000)],
    )?;
    n += tx.execute(
        "DELETE FROM beacon_rollups WHERE minute IN (SELECT minute FROM beacon_rollups WHERE minute < ?1 LIMIT ?2)",
        params![cutoff_ms.div_euclid(60_000), limit as i64],
    )?;
    Ok(n)
}

/// Migration 2's data step: minute rollups of every record already stored, beacon rollups of
/// every beacon. Records are read in start order, one minute at a time in memory.
pub fn backfill(tx: &Transaction) -> rusqlite::Result<()> {
    let t = std::time::Instant::now();
    let mut rows = 0usize;
    let mut records = 0usize;
    {
        // The records as they are at migration 2 (`upstream_buffered` comes with migration 3).
        let mut st = tx.prepare(&crate::store::sqlite::samples::select_before_upstream(Want::ALL, "1=1 ORDER BY start_ms"))?;
        let mut q = st.query([])?;
        let mut minute: Option<i64> = None;
        let mut acc: HashMap<Key, Agg> = HashMap::new();
        let mut overflow = false;
        let mut write = |m: i64, acc: &mut HashMap<Key, Agg>, overflow: bool| -> rusqlite::Result<()> {
            let mut ins = tx.prepare_cached(
                "INSERT INTO rollups(level, period, route, model, outcome, n, data) VALUES (0,?1,?2,?3,?4,?5,?6)",
            )?;
            for ((route, model, outcome), a) in acc.drain() {
                ins.execute(params![m, route, model, outcome, a.n as i64, a.encode()])?;
                rows += 1;
            }
            if overflow {
                tx.execute("INSERT OR IGNORE INTO rollup_overflow(level, period) VALUES (0, ?1)", [m])?;
            }
            // Its hour and day are built from it in the background.
            for level in 1..LEVEL_MS.len() {
                tx.execute(
                    "INSERT OR IGNORE INTO rollup_dirty(level, period) VALUES (?1, ?2)",
                    params![level as i64, (m * LEVEL_MS[0]).div_euclid(LEVEL_MS[level])],
                )?;
            }
            Ok(())
        };
        while let Some(r) = q.next()? {
            let s = crate::store::sqlite::samples::sample(r)?;
            records += 1;
            let m = period(0, s.start_ms);
            if minute != Some(m) {
                if let Some(prev) = minute {
                    write(prev, &mut acc, overflow)?;
                }
                minute = Some(m);
                overflow = false;
            }
            let mut k = key_of(&s);
            if !acc.contains_key(&k) && (acc.len() >= MAX_KEYS || k.0 == OTHER) {
                overflow = true;
                k = other(&k.2);
            }
            acc.entry(k).or_default().add(&s, MAX_SERVER_STAGES);
            if records % 1_000_000 == 0 {
                tracing::info!(records, "building rollups of stored records");
            }
        }
        if let Some(m) = minute {
            write(m, &mut acc, overflow)?;
        }
    }
    tx.execute_batch(
        "INSERT INTO beacon_rollups(minute, beacons, dropped, refused_old, refused_future) \
         SELECT received_ms / 60000, COUNT(*), TOTAL(dropped), TOTAL(refused_old), TOTAL(refused_future) \
         FROM beacons GROUP BY received_ms / 60000",
    )?;
    if records > 0 {
        tracing::info!(
            records,
            rows,
            ms = t.elapsed().as_millis() as u64,
            "built minute rollups of the stored records (hours and days follow in the background)"
        );
    }
    Ok(())
}
