//! A beacon as ClickHouse rows (`JSONEachRow`): one `records` row per record, one `beacons`
//! row per beacon, the columns of `schema.sql`.

use serde_json::{json, Map, Value};

use crate::query::agg::METRICS;
use crate::store::clickhouse::spool::Batch;
use crate::ingest::clock::Admitted;
use crate::ingest::{Beacon, Row, MARK_COLUMNS};

/// `YYYY-MM-DD` (UTC) of epoch ms: the partition a row lands in.
pub fn day(ms: f64) -> String {
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm, public domain).
    let z = (ms / 86_400_000.0).floor() as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!("{y:04}-{m:02}-{d:02}")
}

fn record(received_ms: i64, b: &Beacon, r: &Row) -> Value {
    let mut o = Map::new();
    o.insert("day".into(), json!(day(r.start_ms)));
    o.insert("minute".into(), json!((r.start_ms / 60_000.0).floor() as i64));
    o.insert("id".into(), json!(r.id));
    o.insert("version".into(), json!((r.outcome != "partial") as u8));
    o.insert("received_ms".into(), json!(received_ms));
    o.insert("start_ms".into(), json!(r.start_ms));
    o.insert("session".into(), json!(b.session));
    o.insert("page".into(), json!(b.page));
    o.insert("url".into(), json!(r.url));
    o.insert("route".into(), json!(r.route));
    o.insert("method".into(), json!(r.method));
    o.insert("status".into(), json!(r.status));
    o.insert("model".into(), json!(r.model));
    o.insert("model_source".into(), json!(r.model_source));
    o.insert("provider".into(), json!(r.provider));
    o.insert("outcome".into(), json!(r.outcome));
    o.insert("format".into(), json!(r.format));
    // The metric columns by the one metric table (stalls.count is stored as the integer).
    for m in &METRICS {
        o.insert(m.column.into(), json!((m.value)(r)));
    }
    o.insert("stalls_count".into(), json!(r.stalls_count));
    o.insert("stalls_network".into(), json!(r.stalls_network));
    o.insert("stalls_render".into(), json!(r.stalls_render));
    let flag = |b: Option<bool>| json!(b.map(u8::from));
    o.insert("buffered".into(), flag(r.buffered));
    o.insert("upstream_buffered".into(), flag(r.upstream_buffered));
    o.insert("hidden".into(), flag(r.hidden));
    for (col, v) in MARK_COLUMNS.iter().zip(r.marks) {
        o.insert((*col).into(), json!(v));
    }
    let (names, durs): (Vec<&str>, Vec<f64>) = r.stages.iter().map(|(n, d)| (n.as_str(), *d)).unzip();
    o.insert("server_names".into(), json!(names));
    o.insert("server_durs".into(), json!(durs));
    o.insert("raw".into(), json!(r.raw));
    Value::Object(o)
}

/// One beacon's rows, appended to `out` (`beacon_id`: the collector's id for the beacon).
pub fn beacon(
    out: &mut Batch,
    beacon_id: &str,
    received_ms: i64,
    client: Option<&str>,
    b: &Beacon,
    admitted: &Admitted,
) {
    for r in &b.records {
        serde_json::to_writer(&mut out.records, &record(received_ms, b, r)).expect("to a Vec");
        out.records.push(b'\n');
    }
    let row = json!({
        "day": day(received_ms as f64), "received_ms": received_ms, "id": beacon_id,
        "client": client, "sdk": b.sdk, "session": b.session, "page": b.page,
        "records": b.records.len() as u32, "dropped": b.dropped, "sent_ms": b.sent_at,
        "skew_ms": admitted.skew_ms, "refused_old": admitted.too_old, "refused_future": admitted.future,
    });
    serde_json::to_writer(&mut out.beacons, &row).expect("to a Vec");
    out.beacons.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_utc_calendar_days() {
        assert_eq!(day(0.0), "1970-01-01");
        assert_eq!(day(86_399_999.0), "1970-01-01");
        assert_eq!(day(951_782_400_000.0), "2000-02-29");
        assert_eq!(day(1_796_256_000_000.0), "2026-12-03");
    }
}
