//! Rollups: per-period aggregates of the records, written by the writer thread in the same
//! transaction as the records themselves, so a read never has to see every record.
//!
//! A rollup row is the `Agg` of the records whose `startEpochMs` falls in one period, for one
//! key (route, model, outcome). Three levels: minutes, hours, days (UTC). Minute rows are
//! written with every commit. An hour (a day) is *compacted* — its rows built by merging the
//! rows of the level below — once it has ended (plus `GRACE_MS`); from then on, a late record
//! updates its minute, hour and day rows alike. `through[level]` is the first period not yet
//! compacted (kept in `meta`): every period below it is complete at that level. A window's read
//! takes the coarsest complete periods inside it, finer ones at its edges, and the raw records
//! only for the part of the window that is not a whole minute (`plan`).
//!
//! Keys are bounded: a period keeps at most `MAX_KEYS` (route, model, outcome) keys; records
//! with keys past that fold into (`OTHER`, `OTHER`, outcome) and the period is marked
//! *overflowed* — unfiltered reads still use its rows, reads filtered by route or model go one
//! level down (and to the raw records for an overflowed minute). So any mix of beacons, however
//! hostile, costs at most `MAX_KEYS` rows per period.
//!
//! A stored `partial` that is replaced by its completed version is taken back out of its rows
//! (`Agg::subtract`) before the new version goes in: rollups always sum the stored records.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::agg::{Agg, Sample, Want, MAX_SERVER_STAGES};

/// Period length per level, ms.
pub const LEVEL_MS: [i64; 3] = [60_000, 3_600_000, 86_400_000];
/// Keys per period at most.
pub const MAX_KEYS: usize = 256;
/// Route and model of folded keys; parentheses never survive `keys::safe_key`, so no real
/// route or model can collide with it.
pub const OTHER: &str = "(other)";
/// An hour (day) is compacted this long after it ended: most of its records have arrived.
pub const GRACE_MS: i64 = 5 * 60_000;

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

/// Compacted-through watermarks (index 0, minutes, is always written: unused).
pub fn load_through(c: &Connection) -> rusqlite::Result<[i64; 3]> {
    let mut t = [i64::MAX, 0, 0];
    for (l, slot) in t.iter_mut().enumerate().skip(1) {
        *slot = c
            .query_row(
                "SELECT value FROM meta WHERE key = ?1",
                [format!("rollup_through_{l}")],
                |r| r.get::<_, i64>(0),
            )
            .optional()?
            .unwrap_or(0);
    }
    Ok(t)
}

#[derive(Default)]
struct PeriodKeys {
    set: HashSet<Key>,
    overflow: bool,
}

type RowKey = (usize, i64, Key);

/// The writer's side: a cache of the rows it is updating, and what each period holds.
pub struct Rollups {
    rows: HashMap<RowKey, Agg>,
    dirty: HashSet<RowKey>,
    keys: HashMap<(usize, i64), PeriodKeys>,
    new_overflow: Vec<(usize, i64)>,
    pub through: [i64; 3],
}

/// Rows and periods the writer keeps decoded between commits (the current minutes' rows are
/// touched by nearly every commit; re-reading and decoding them each time would cost more
/// than the rest of a commit).
const CACHE_ROWS: usize = 2048;
const CACHE_PERIODS: usize = 4096;

impl Rollups {
    pub fn load(c: &Connection) -> rusqlite::Result<Rollups> {
        Ok(Rollups {
            rows: HashMap::new(),
            dirty: HashSet::new(),
            keys: HashMap::new(),
            new_overflow: Vec::new(),
            through: load_through(c)?,
        })
    }

    /// Adds (or, `sub`, takes back out) one record in every row that holds it.
    pub fn apply(&mut self, tx: &Transaction, s: &Sample, sub: bool) -> rusqlite::Result<()> {
        let one = if sub {
            let mut a = Agg::default();
            a.add(s, usize::MAX);
            Some(a)
        } else {
            None
        };
        let base = key_of(s);
        for level in 0..LEVEL_MS.len() {
            let p = period(level, s.start_ms);
            if level > 0 && p >= self.through[level] {
                continue; // not compacted yet: compaction will merge the minute rows
            }
            let key = self.admit(tx, level, p, &base, !sub)?;
            let rk = (level, p, key);
            if !self.rows.contains_key(&rk) {
                match load_row(tx, &rk)? {
                    Some(a) => {
                        self.rows.insert(rk.clone(), a);
                    }
                    None if sub => continue, // not there (retention took it): nothing to undo
                    None => {
                        self.rows.insert(rk.clone(), Agg::default());
                    }
                }
            }
            let row = self.rows.get_mut(&rk).expect("present");
            match &one {
                Some(o) => row.subtract(o),
                None => row.add(s, MAX_SERVER_STAGES),
            }
            self.dirty.insert(rk);
        }
        Ok(())
    }

    /// The key a record is counted under in this period: its own while the period has room
    /// (or already has it), else the folded key. `create`: false when taking a record back out
    /// (its key is either there or was folded).
    fn admit(
        &mut self,
        tx: &Transaction,
        level: usize,
        p: i64,
        key: &Key,
        create: bool,
    ) -> rusqlite::Result<Key> {
        if !self.keys.contains_key(&(level, p)) {
            let pk = load_keys(tx, level, p)?;
            self.keys.insert((level, p), pk);
        }
        let pk = self.keys.get_mut(&(level, p)).expect("loaded");
        if pk.set.contains(key) {
            return Ok(key.clone());
        }
        if create && pk.set.len() < MAX_KEYS && key.0 != OTHER {
            pk.set.insert(key.clone());
            return Ok(key.clone());
        }
        let o = other(&key.2);
        if create {
            if !pk.overflow {
                pk.overflow = true;
                self.new_overflow.push((level, p));
            }
            pk.set.insert(o.clone());
        }
        Ok(o)
    }

    /// Writes every row changed since the last flush (in the caller's transaction).
    pub fn flush(&mut self, tx: &Transaction) -> rusqlite::Result<()> {
        let mut up = tx.prepare_cached(
            "INSERT INTO rollups(level, period, route, model, outcome, n, data) VALUES (?1,?2,?3,?4,?5,?6,?7) \
             ON CONFLICT(level, period, route, model, outcome) DO UPDATE SET n = excluded.n, data = excluded.data",
        )?;
        for rk in self.dirty.iter() {
            let a = &self.rows[rk];
            let (level, p, (route, model, outcome)) = rk;
            up.execute(params![*level as i64, p, route, model, outcome, a.n as i64, a.encode()])?;
        }
        let mut ov =
            tx.prepare_cached("INSERT OR IGNORE INTO rollup_overflow(level, period) VALUES (?1, ?2)")?;
        for (level, p) in &self.new_overflow {
            ov.execute(params![*level as i64, p])?;
        }
        Ok(())
    }

    /// After the transaction: on success the cache is the database again (trimmed to its
    /// bounds); on failure it may be ahead of it, so it is dropped.
    pub fn settle(&mut self, committed: bool) {
        let touched: HashSet<RowKey> = std::mem::take(&mut self.dirty);
        self.new_overflow.clear();
        if !committed {
            self.rows.clear();
            self.keys.clear();
            return;
        }
        if self.rows.len() > CACHE_ROWS {
            self.rows.retain(|k, _| touched.contains(k));
        }
        if self.keys.len() > CACHE_PERIODS {
            let live: HashSet<(usize, i64)> = touched.iter().map(|(l, p, _)| (*l, *p)).collect();
            self.keys.retain(|k, _| live.contains(k));
        }
    }

    /// Forgets cached rows (after retention deleted some).
    pub fn forget(&mut self) {
        self.rows.clear();
        self.keys.clear();
    }

    /// One step of compaction, if one is due: builds the rows of the oldest complete hour (or
    /// day) not compacted yet from the level below, in its own transaction. `Ok(false)`: nothing
    /// was due. Stretches without data are skipped in one step.
    pub fn compact_step(&mut self, c: &mut Connection, now_ms: f64) -> rusqlite::Result<bool> {
        for level in 1..LEVEL_MS.len() {
            let (len, below) = (LEVEL_MS[level], LEVEL_MS[level - 1]);
            let ratio = len / below;
            let mut target = ((now_ms as i64 - GRACE_MS).div_euclid(len)).max(0);
            if level == 2 {
                // A day only once all its hours are compacted.
                target = target.min(self.through[1].div_euclid(ratio));
            }
            let w = self.through[level];
            if w >= target {
                continue;
            }
            let next: Option<i64> = c.query_row(
                "SELECT MIN(period) FROM rollups WHERE level = ?1 AND period >= ?2",
                params![(level - 1) as i64, w * ratio],
                |r| r.get(0),
            )?;
            let tx = c.transaction()?;
            let first = next.map_or(target, |p| p.div_euclid(ratio)).max(w);
            let done = if first >= target {
                target // nothing below to merge up to the target
            } else if first > w {
                first // skip the empty stretch
            } else {
                compact(&tx, level, w)?;
                w + 1
            };
            tx.execute(
                "INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![format!("rollup_through_{level}"), done],
            )?;
            tx.commit()?;
            self.through[level] = done;
            self.keys.retain(|(l, _), _| *l != level);
            return Ok(true);
        }
        Ok(false)
    }
}

fn load_row(tx: &Transaction, rk: &RowKey) -> rusqlite::Result<Option<Agg>> {
    let (level, p, (route, model, outcome)) = rk;
    let mut st = tx.prepare_cached(
        "SELECT data FROM rollups WHERE level = ?1 AND period = ?2 AND route = ?3 AND model = ?4 AND outcome = ?5",
    )?;
    let data: Option<Vec<u8>> = st
        .query_row(params![*level as i64, p, route, model, outcome], |r| r.get(0))
        .optional()?;
    // A row that does not decode (damaged) starts again from empty rather than failing ingest.
    Ok(data.map(|d| Agg::decode(&d, Want::ALL).unwrap_or_default()))
}

fn load_keys(tx: &Transaction, level: usize, p: i64) -> rusqlite::Result<PeriodKeys> {
    let mut st = tx.prepare_cached(
        "SELECT route, model, outcome FROM rollups WHERE level = ?1 AND period = ?2",
    )?;
    let set = st
        .query_map(params![level as i64, p], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<HashSet<Key>>>()?;
    let overflow = tx
        .prepare_cached("SELECT 1 FROM rollup_overflow WHERE level = ?1 AND period = ?2")?
        .exists(params![level as i64, p])?;
    Ok(PeriodKeys { set, overflow })
}

/// Builds period `p` of `level` from the rows of the level below. The largest keys keep rows
/// of their own when the period has more than `MAX_KEYS`.
fn compact(tx: &Transaction, level: usize, p: i64) -> rusqlite::Result<()> {
    let ratio = LEVEL_MS[level] / LEVEL_MS[level - 1];
    let (lo, hi) = (p * ratio, (p + 1) * ratio);
    let below = (level - 1) as i64;
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
        "INSERT INTO rollups(level, period, route, model, outcome, n, data) VALUES (?1,?2,?3,?4,?5,?6,?7) \
         ON CONFLICT(level, period, route, model, outcome) DO UPDATE SET n = excluded.n, data = excluded.data",
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
        tx.execute(
            "DELETE FROM rollup_overflow WHERE level = ?1 AND period < ?2",
            params![level as i64, end],
        )?;
    }
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
        let mut st = tx.prepare(&crate::samples::select(true, "1=1 ORDER BY start_ms"))?;
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
            Ok(())
        };
        while let Some(r) = q.next()? {
            let s = crate::samples::sample(r)?;
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
