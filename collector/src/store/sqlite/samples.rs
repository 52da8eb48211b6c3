//! Reading stored records back as `Sample`s (what each contributes to an aggregate): for the
//! edges of a window that no rollup covers, for taking a replaced partial back out of its
//! rollups, and for building rollups of records stored before rollups existed.

use rusqlite::{Row, ToSql};

use crate::ingest::MARK_COLUMNS;
use crate::query::agg::{Sample, Want, METRICS, N_METRICS};

/// Columns read per record, in `sample()`'s order: the key, the 12 metrics (`agg::METRICS`
/// order; `stalls_count` is also a count), the counts, the marks; then the Server-Timing list
/// and `upstream_buffered` (last: a migration step that runs before its column exists reads
/// NULL in its place, see `select_before_upstream`).
const KEY: &str = "start_ms, outcome, route, model";
const COUNTS: &str = "stalls_network, stalls_render, buffered, hidden";

/// Server-Timing stages of the record, `name US dur` joined by RS (names are safe keys, so
/// they hold neither separator; an older database's odd name is skipped, never misread).
const STAGES: &str = "(SELECT group_concat(name || char(31) || dur, char(30)) FROM stages WHERE record_id = records.id)";

/// `SELECT … FROM records WHERE {where}`, reading only what `want` needs (the rest is NULL in
/// its place): a raw read for one metric decodes one metric column, not all of them, and the
/// stages subquery is most of the cost of a raw read.
pub fn select(want: Want, where_: &str) -> String {
    select_with(want, where_, "upstream_buffered")
}

/// `select()` for the schema as it was before migration 3 (`records.upstream_buffered`): what
/// migration 2's backfill reads (its records have no upstream flag).
pub fn select_before_upstream(want: Want, where_: &str) -> String {
    select_with(want, where_, "NULL")
}

fn select_with(want: Want, where_: &str, upstream: &str) -> String {
    let metrics: Vec<&str> = METRICS
        .iter()
        .enumerate()
        .map(|(i, m)| if want.has(i) || m.column == "stalls_count" { m.column } else { "NULL" })
        .collect();
    let marks = if want.stages { MARK_COLUMNS.join(", ") } else { vec!["NULL"; MARK_COLUMNS.len()].join(", ") };
    format!(
        "SELECT {KEY}, {}, {COUNTS}, {marks}, {}, {upstream} FROM records WHERE {where_}",
        metrics.join(", "),
        if want.stages { STAGES } else { "NULL" }
    )
}

/// One row of `select()`.
pub fn sample(r: &Row) -> rusqlite::Result<Sample> {
    let f = |i: usize| r.get::<_, Option<f64>>(i);
    let mut metrics = [None; N_METRICS];
    for (k, m) in metrics.iter_mut().enumerate() {
        *m = f(4 + k)?;
    }
    let mut marks = [None; 8];
    for (k, m) in marks.iter_mut().enumerate() {
        *m = f(20 + k)?;
    }
    let server = r
        .get::<_, Option<String>>(28)?
        .map(|s| {
            s.split('\u{1e}')
                .filter_map(|e| {
                    let (n, d) = e.split_once('\u{1f}')?;
                    Some((n.to_string(), d.parse::<f64>().ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Sample {
        start_ms: r.get(0)?,
        outcome: r.get(1)?,
        route: r.get(2)?,
        model: r.get(3)?,
        metrics,
        stages: crate::query::agg::stages_of(&marks),
        stalls_count: r.get(14)?,
        stalls_network: r.get(16)?,
        stalls_render: r.get(17)?,
        buffered: r.get::<_, Option<i64>>(18)?.map(|b| b != 0),
        upstream_buffered: r.get::<_, Option<i64>>(29)?.map(|b| b != 0),
        hidden: r.get::<_, Option<i64>>(19)?.map(|b| b != 0),
        server,
    })
}

/// The stored record with this id, if it is a `partial` (the only kind a later version
/// replaces).
pub fn stored_partial(
    c: &rusqlite::Connection,
    id: &str,
) -> rusqlite::Result<Option<Sample>> {
    let mut st = c.prepare_cached(&select(Want::ALL, "id = ?1 AND outcome = 'partial'"))?;
    let mut rows = st.query([&id as &dyn ToSql])?;
    match rows.next()? {
        Some(r) => Ok(Some(sample(r)?)),
        None => Ok(None),
    }
}
