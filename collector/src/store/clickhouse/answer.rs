//! ClickHouse's answers as the collector reads them: typed `JSONCompact` rows (`select`), and
//! records as `Sample`s in `RowBinary` (`sample_cols`, `recs`), their copies collapsed as
//! `FINAL` would (`collapse`). What the rollups' builder (`rollup`) and the reads (`reader`)
//! share.

use std::collections::HashMap;
use std::time::Duration;

use hyper::body::Bytes;
use serde::Deserialize;

use crate::ingest::MARK_COLUMNS;
use crate::query::agg::{stages_of, Sample, Want, METRICS, N_METRICS};
use crate::query::plan::{QResult, QueryError};
use crate::store::clickhouse::http::ChError;
use crate::store::clickhouse::ClickHouse;

/// The columns of a record as a `Sample` (`Rec`'s order), read as `RowBinary` (a tenth of
/// ClickHouse's time and none of a JSON parse: 0.18 s against 0.61 s for the 148 000 records of
/// a 10 M-record window's two ragged minutes, measured); metrics `want` does not need read as
/// NULL. Metrics and marks as arrays of `Nullable(Float64)`.
pub(crate) fn sample_cols(want: Want) -> String {
    let metrics: Vec<String> = METRICS
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if want.has(i) {
                format!("toNullable(toFloat64({}))", m.column)
            } else {
                NULL_F64.to_string()
            }
        })
        .collect();
    let marks: Vec<String> = MARK_COLUMNS
        .iter()
        .map(|c| if want.stages { format!("toNullable(toFloat64({c}))") } else { NULL_F64.to_string() })
        .collect();
    let server = if want.stages { "server_names, server_durs" } else { "emptyArrayString(), emptyArrayFloat64()" };
    format!(
        "start_ms, outcome, route, model, [{}], stalls_count, stalls_network, stalls_render, \
         buffered, upstream_buffered, hidden, [{}], {server}, id, version",
        metrics.join(", "),
        marks.join(", ")
    )
}

/// A typed NULL (an array of bare NULLs would be `Array(Nullable(Nothing))`).
const NULL_F64: &str = "CAST(NULL AS Nullable(Float64))";


/// One row of `sample_cols`.
pub(crate) struct Rec(
    f64,
    String,
    Option<String>,
    Option<String>,
    Vec<Option<f64>>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<u8>,
    Option<u8>,
    Option<u8>,
    Vec<Option<f64>>,
    Vec<String>,
    Vec<f64>,
    String,
    u8,
);

/// The rows of `sample_cols` read without `FINAL`, collapsed here as `FINAL` would: one per
/// id, the highest version. `FINAL` merges the parts' granules on one thread: 0.17 s against
/// 0.04 s without it for one minute of a 10 M-record hour (33 000 records, measured), and the
/// same copies go either way.
pub(crate) fn collapse(rows: Vec<Rec>) -> Vec<Rec> {
    // The winners first, by borrowed id (no copy of an id per record), then moved out.
    let mut best: HashMap<&str, usize> = HashMap::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        let w = best.entry(r.14.as_str()).or_insert(i);
        if rows[*w].15 < r.15 {
            *w = i;
        }
    }
    let mut keep = vec![false; rows.len()];
    for i in best.into_values() {
        keep[i] = true;
    }
    rows.into_iter().zip(keep).filter_map(|(r, k)| k.then_some(r)).collect()
}

/// A `RowBinary` answer, read column by column (ClickHouse's encoding: little-endian numbers,
/// strings and arrays prefixed by a LEB128 length, `Nullable` by a byte that is 1 for NULL).
pub(crate) struct RowBinary<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> RowBinary<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> RowBinary<'a> {
        RowBinary { buf, at: 0 }
    }
    fn bad() -> QueryError {
        QueryError::Failed("ClickHouse RowBinary answer: truncated".into())
    }
    pub(crate) fn done(&self) -> bool {
        self.at >= self.buf.len()
    }
    fn bytes(&mut self, n: usize) -> QResult<&'a [u8]> {
        let s = self.buf.get(self.at..self.at + n).ok_or_else(Self::bad)?;
        self.at += n;
        Ok(s)
    }
    fn len(&mut self) -> QResult<usize> {
        Ok(llm_rum_sketch::get_varint(self.buf, &mut self.at).ok_or_else(Self::bad)? as usize)
    }
    pub(crate) fn raw(&mut self) -> QResult<&'a [u8]> {
        let n = self.len()?;
        self.bytes(n)
    }
    pub(crate) fn string(&mut self) -> QResult<String> {
        Ok(String::from_utf8_lossy(self.raw()?).into_owned())
    }
    fn array<const N: usize>(&mut self) -> QResult<[u8; N]> {
        self.bytes(N)?.try_into().map_err(|_| Self::bad())
    }
    pub(crate) fn f64(&mut self) -> QResult<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }
    pub(crate) fn i64(&mut self) -> QResult<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    pub(crate) fn u8(&mut self) -> QResult<u8> {
        Ok(self.bytes(1)?[0])
    }
    fn nullable<T>(&mut self, f: impl FnOnce(&mut Self) -> QResult<T>) -> QResult<Option<T>> {
        if self.u8()? != 0 {
            Ok(None)
        } else {
            f(self).map(Some)
        }
    }
    fn list<T>(&mut self, f: impl Fn(&mut Self) -> QResult<T>) -> QResult<Vec<T>> {
        let n = self.len()?;
        (0..n).map(|_| f(self)).collect()
    }
    fn rec(&mut self) -> QResult<Rec> {
        Ok(Rec(
            self.f64()?,
            self.string()?,
            self.nullable(Self::string)?,
            self.nullable(Self::string)?,
            self.list(|r| r.nullable(Self::f64))?,
            self.nullable(Self::i64)?,
            self.nullable(Self::i64)?,
            self.nullable(Self::i64)?,
            self.nullable(Self::u8)?,
            self.nullable(Self::u8)?,
            self.nullable(Self::u8)?,
            self.list(|r| r.nullable(Self::f64))?,
            self.list(Self::string)?,
            self.list(Self::f64)?,
            self.string()?,
            self.u8()?,
        ))
    }
}

/// Every row of a `RowBinary` answer to `sample_cols`.
pub(crate) fn recs(body: &[u8]) -> QResult<Vec<Rec>> {
    let mut r = RowBinary::new(body);
    let mut out = Vec::new();
    while !r.done() {
        out.push(r.rec()?);
    }
    Ok(out)
}

impl Rec {
    pub(crate) fn sample(self) -> Sample {
        let mut metrics = [None; N_METRICS];
        for (m, v) in metrics.iter_mut().zip(self.4) {
            *m = v;
        }
        let mut marks = [None; 8];
        for (m, v) in marks.iter_mut().zip(self.11) {
            *m = v;
        }
        Sample {
            start_ms: self.0,
            outcome: self.1,
            route: self.2,
            model: self.3,
            metrics,
            stages: stages_of(&marks),
            stalls_count: self.5,
            stalls_network: self.6,
            stalls_render: self.7,
            buffered: self.8.map(|b| b != 0),
            upstream_buffered: self.9.map(|b| b != 0),
            hidden: self.10.map(|b| b != 0),
            server: self.12.into_iter().zip(self.13).collect(),
        }
    }
}

#[derive(Deserialize)]
struct Answer<T> {
    data: Vec<T>,
}

pub(crate) fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> QResult<Vec<T>> {
    serde_json::from_slice::<Answer<T>>(body)
        .map(|a| a.data)
        .map_err(|e| QueryError::Failed(format!("ClickHouse answer: {e}")))
}

pub(crate) fn failed(e: ChError) -> QueryError {
    match e {
        ChError::Timeout => QueryError::Budget,
        // TIMEOUT_EXCEEDED: ClickHouse stopped it at max_execution_time.
        ChError::Server(_, m) if m.contains("Code: 159") => QueryError::Budget,
        e => QueryError::Failed(e.to_string()),
    }
}

impl ClickHouse {
    /// A statement's answer within `budget` (`sql` names its format).
    pub async fn answer(&self, sql: &str, budget: Duration) -> QResult<Bytes> {
        let settings = [
            ("max_execution_time", format!("{}", budget.as_secs_f64().ceil().max(1.0))),
            ("output_format_json_quote_64bit_integers", "0".to_string()),
        ];
        self.http
            .run(sql, Bytes::new(), &settings, budget + Duration::from_secs(1))
            .await
            .map_err(failed)
    }

    pub(crate) fn db(&self) -> &str {
        &self.http.target.database
    }

    /// A read's rows, typed (`sql` without its format: `JSONCompact`).
    pub(crate) async fn select<T: for<'de> Deserialize<'de>>(&self, sql: &str, budget: Duration) -> QResult<Vec<T>> {
        parse(&self.answer(&format!("{sql} FORMAT JSONCompact"), budget).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, version: u8, outcome: &str) -> Rec {
        Rec(0.0, outcome.into(), None, None, vec![], None, None, None, None, None, None, vec![], vec![], vec![], id.into(), version)
    }

    #[test]
    fn copies_collapse_to_the_highest_version_as_final_does() {
        let rows = vec![
            rec("a", 0, "partial"),
            rec("b", 1, "ok"),
            rec("a", 1, "ok"),
            rec("b", 1, "ok"),
            rec("a", 0, "partial"), // a partial after its completed version: the completed stays
            rec("c", 0, "partial"),
        ];
        let mut out: Vec<(String, String)> = collapse(rows).into_iter().map(|r| (r.14, r.1)).collect();
        out.sort();
        let want = [("a", "ok"), ("b", "ok"), ("c", "partial")].map(|(a, b)| (a.to_string(), b.to_string()));
        assert_eq!(out, want);
    }

    #[test]
    fn row_binary_reads_what_clickhouse_writes() {
        // One row of sample_cols in RowBinary (tests/clickhouse.rs reads real 18.16 answers).
        let mut b = Vec::new();
        b.extend_from_slice(&1500.5f64.to_le_bytes());
        b.extend_from_slice(&[2, b'o', b'k']); // outcome
        b.extend_from_slice(&[0, 3, b'/', b'v', b'1']); // route: not NULL, "/v1"
        b.push(1); // model: NULL
        b.push(2); // metrics: [NULL, 7.25]
        b.push(1);
        b.push(0);
        b.extend_from_slice(&7.25f64.to_le_bytes());
        b.push(0); // stalls_count 2
        b.extend_from_slice(&2i64.to_le_bytes());
        b.extend_from_slice(&[1, 1, 0, 1, 1, 1]); // stalls_network/render NULL, buffered 1, upstream NULL, hidden NULL
        b.push(0); // marks: []
        b.extend_from_slice(&[1, 1, b'q']); // server_names ["q"]
        b.push(1);
        b.extend_from_slice(&4.0f64.to_le_bytes());
        b.extend_from_slice(&[2, b'i', b'd', 1]); // id, version
        let r = recs(&b).unwrap();
        assert_eq!(r.len(), 1);
        let s = recs(&b).unwrap().remove(0).sample();
        assert_eq!((s.start_ms, s.outcome.as_str(), s.route.as_deref(), s.model.as_deref()), (1500.5, "ok", Some("/v1"), None));
        assert_eq!((s.metrics[0], s.metrics[1], s.stalls_count, s.buffered), (None, Some(7.25), Some(2), Some(true)));
        assert_eq!(s.server, vec![("q".to_string(), 4.0)]);
        assert_eq!((r[0].14.as_str(), r[0].15), ("id", 1));
        assert!(recs(&b[..b.len() - 1]).is_err(), "a truncated answer is an error, not a short read");
    }
}
