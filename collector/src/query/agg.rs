//! What a set of records adds up to: `Agg`, the mergeable aggregate behind every read.
//!
//! Owner of "what one record contributes" (its metric values, stage durations, counts) and of
//! the stored form of an aggregate (a rollup row's `data`). Percentiles come from the SDK
//! core's log-histogram sketch (`llm_rum_sketch::LogHistogram`, DDSketch-style, relative
//! error α = 1 %), shared rather than re-implemented: per-period sketches merge into the
//! sketch of the whole window, so a read never has to see the records themselves.

use llm_rum_sketch::{get_varint, put_varint, LogHistogram};

use crate::ingest::Row;

/// One metric: its name (the record's key, DESIGN.md §1: what budgets, the API and the
/// dashboard say), its column (in SQLite's and ClickHouse's `records`), its value in a decoded
/// record, and its histogram on `/metrics` (family, help; `None`: not exported as one).
pub struct Metric {
    pub name: &'static str,
    pub column: &'static str,
    pub value: fn(&Row) -> Option<f64>,
    pub histogram: Option<(&'static str, &'static str)>,
}

/// The one metric table: every list of metrics (the sketches of an aggregate, the stored
/// columns, the reads, the ClickHouse rows, the Prometheus families and the rules generated
/// from budgets) derives from it, in this order.
pub const METRICS: [Metric; N_METRICS] = [
    Metric { name: "ttft", column: "ttft", value: |r| r.ttft,
             histogram: Some(("llm_rum_ttft_seconds", "time to the first token (network)")) },
    Metric { name: "ttfp", column: "ttfp", value: |r| r.ttfp,
             histogram: Some(("llm_rum_ttfp_seconds", "time to the first painted text")) },
    Metric { name: "perceivedTtft", column: "perceived_ttft", value: |r| r.perceived_ttft,
             histogram: Some(("llm_rum_perceived_ttft_seconds", "first painted text, from the user's action")) },
    Metric { name: "total", column: "total", value: |r| r.total,
             histogram: Some(("llm_rum_total_seconds", "start to the last token")) },
    Metric { name: "perceivedTotal", column: "perceived_total", value: |r| r.perceived_total,
             histogram: Some(("llm_rum_perceived_total_seconds", "the user's action to the last painted text")) },
    Metric { name: "tpot", column: "tpot", value: |r| r.tpot,
             histogram: Some(("llm_rum_tpot_seconds", "time per output token")) },
    Metric { name: "itl.p50", column: "itl_p50", value: |r| r.itl_p50, histogram: None },
    Metric { name: "itl.p95", column: "itl_p95", value: |r| r.itl_p95,
             histogram: Some(("llm_rum_itl_p95_seconds", "per answer: 95th percentile of the inter-token gaps")) },
    Metric { name: "itl.max", column: "itl_max", value: |r| r.itl_max, histogram: None },
    Metric { name: "renderDelay.p95", column: "render_delay_p95", value: |r| r.render_delay_p95,
             histogram: Some(("llm_rum_render_delay_p95_seconds", "per answer: 95th percentile of arrival-to-paint delay")) },
    Metric { name: "stalls.count", column: "stalls_count", value: |r| r.stalls_count.map(|c| c as f64), histogram: None },
    Metric { name: "stalls.totalMs", column: "stalls_total_ms", value: |r| r.stalls_total_ms, histogram: None },
];
pub const N_METRICS: usize = 12;

/// The stage decomposition of one answer, in time order. Server stages (Server-Timing) are
/// kept next to these by name; they overlap start→headers / headers→firstToken, so they are a
/// breakdown, not extra segments.
pub const STAGES: [&str; N_STAGES] = [
    "interaction→start",
    "start→headers",
    "headers→firstToken",
    "firstToken→firstPaint",
    "decode",
    "lastToken→lastPaint",
];
pub const N_STAGES: usize = 6;

/// Server-Timing names kept per stored aggregate (a rollup row); names past it are left to the
/// raw records. Beacons choose these names, so they must not grow a row without bound.
pub const MAX_SERVER_STAGES: usize = 16;

pub fn metric_index(name: &str) -> Option<usize> {
    METRICS.iter().position(|m| m.name == name)
}

/// The marks as stored (`ingest::MARKS` order) → the six client stages. A stage is known when
/// both its marks are (`interaction→start` is `−interaction`: the mark precedes start).
pub fn stages_of(m: &[Option<f64>; 8]) -> [Option<f64>; N_STAGES] {
    let d = |a: Option<f64>, b: Option<f64>| Some(b? - a?);
    let [interaction, headers, _first_byte, first_token, first_paint, last_token, last_paint, _end] =
        *m;
    [
        interaction.map(|i| -i),
        headers,
        d(headers, first_token),
        d(first_token, first_paint),
        d(first_token, last_token),
        d(last_token, last_paint),
    ]
}

/// One record's contribution.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub start_ms: f64,
    pub outcome: String,
    pub route: Option<String>,
    pub model: Option<String>,
    pub metrics: [Option<f64>; N_METRICS],
    pub stages: [Option<f64>; N_STAGES],
    pub stalls_count: Option<i64>,
    pub stalls_network: Option<i64>,
    pub stalls_render: Option<i64>,
    pub buffered: Option<bool>,
    /// Something between the model and the page delivered the text in bursts (SDK-decided).
    pub upstream_buffered: Option<bool>,
    pub hidden: Option<bool>,
    /// Server-Timing stages with a duration.
    pub server: Vec<(String, f64)>,
}

impl Sample {
    pub fn of(r: &Row) -> Sample {
        Sample {
            start_ms: r.start_ms,
            outcome: r.outcome.clone(),
            route: r.route.clone(),
            model: r.model.clone(),
            metrics: std::array::from_fn(|i| (METRICS[i].value)(r)),
            stages: stages_of(&r.marks),
            stalls_count: r.stalls_count,
            stalls_network: r.stalls_network,
            stalls_render: r.stalls_render,
            buffered: r.buffered,
            upstream_buffered: r.upstream_buffered,
            hidden: r.hidden,
            server: r.stages.clone(),
        }
    }
}

/// A sketch of values of either sign (client stages can be negative: a mark may precede
/// another in a hostile or odd record). Negative values are kept as magnitudes in `neg`.
#[derive(Debug, Clone, Default)]
pub struct Signed {
    pub pos: LogHistogram,
    pub neg: LogHistogram,
}

impl Signed {
    pub fn record(&mut self, v: f64) {
        if v < 0.0 {
            self.neg.record(-v)
        } else {
            self.pos.record(v)
        }
    }
    pub fn count(&self) -> u64 {
        self.pos.count() as u64 + self.neg.count() as u64
    }
    fn merge(&mut self, o: &Signed) {
        self.pos.merge(&o.pos);
        self.neg.merge(&o.neg);
    }
    fn subtract(&mut self, o: &Signed) {
        self.pos.subtract(&o.pos);
        self.neg.subtract(&o.neg);
    }
    /// Nearest-rank `q`-quantile over both signs, within the sketch's error of the exact one.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let (nn, np) = (self.neg.count() as u64, self.pos.count() as u64);
        let r = rank(q, nn + np)?;
        if r <= nn {
            // The r-th smallest of all is the (nn − r + 1)-th largest magnitude of the negatives.
            Some(-self.neg.quantile(at_rank(nn - r + 1, nn))?)
        } else {
            self.pos.quantile(at_rank(r - nn, np))
        }
    }
}

/// Nearest rank ⌈q·n⌉ in [1, n] (the convention of `LogHistogram::quantile`).
fn rank(q: f64, n: u64) -> Option<u64> {
    if n == 0 || q.is_nan() {
        return None;
    }
    let x = q.clamp(0.0, 1.0) * n as f64;
    Some(((x - x * 1e-12).ceil() as u64).clamp(1, n))
}

/// The `q` whose nearest rank among `n` is `r`: the middle of its rank interval.
fn at_rank(r: u64, n: u64) -> f64 {
    (r as f64 - 0.5) / n as f64
}

/// Which parts of a stored aggregate a read needs (decoding skips the rest).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Want {
    /// Bit i: `METRICS[i]`.
    pub metrics: u16,
    pub stages: bool,
}

impl Want {
    pub const ALL: Want = Want {
        metrics: (1 << N_METRICS) - 1,
        stages: true,
    };
    pub fn metric(i: usize) -> Want {
        Want {
            metrics: 1 << i,
            stages: false,
        }
    }
    pub const STAGES: Want = Want {
        metrics: 0,
        stages: true,
    };
    pub fn has(&self, i: usize) -> bool {
        self.metrics & (1 << i) != 0
    }
}

/// The aggregate of a set of records: counts exact, distributions as sketches.
#[derive(Debug, Clone)]
pub struct Agg {
    pub n: u64,
    /// Records carrying `stalls`, and those with at least one stall.
    pub stall_n: u64,
    pub stalled: u64,
    /// Records carrying `buffered`, and those buffered.
    pub buf_n: u64,
    pub buffered: u64,
    /// Records carrying `upstreamBuffered` (not null), and those upstream-buffered.
    pub up_n: u64,
    pub upstream: u64,
    pub hidden: u64,
    /// Sums of stall counts by cause (floats: sums of beacon values never overflow).
    pub net: f64,
    pub render: f64,
    pub metrics: [LogHistogram; N_METRICS],
    pub stages: [Signed; N_STAGES],
    /// Server-Timing stages by name, in first-seen order.
    pub server: Vec<(String, LogHistogram)>,
}

impl Default for Agg {
    fn default() -> Self {
        Agg {
            n: 0,
            stall_n: 0,
            stalled: 0,
            buf_n: 0,
            buffered: 0,
            up_n: 0,
            upstream: 0,
            hidden: 0,
            net: 0.0,
            render: 0.0,
            metrics: std::array::from_fn(|_| LogHistogram::new()),
            stages: std::array::from_fn(|_| Signed::default()),
            server: Vec::new(),
        }
    }
}

impl Agg {
    /// Adds one record. `max_server`: how many Server-Timing names this aggregate keeps.
    pub fn add(&mut self, s: &Sample, max_server: usize) {
        self.add_counts(s);
        for (h, v) in self.metrics.iter_mut().zip(s.metrics) {
            if let Some(v) = v {
                h.record(v);
            }
        }
        for (h, v) in self.stages.iter_mut().zip(s.stages) {
            if let Some(v) = v {
                h.record(v);
            }
        }
        for (name, dur) in &s.server {
            if let Some(h) = self.server_mut(name, max_server) {
                h.record(*dur);
            }
        }
    }

    /// Only the counts and the wanted sketches (a read that needs one metric).
    pub fn add_wanted(&mut self, s: &Sample, want: Want) {
        if want == Want::ALL {
            return self.add(s, usize::MAX);
        }
        self.add_counts(s);
        for (i, v) in s.metrics.iter().enumerate() {
            if let (true, Some(v)) = (want.has(i), v) {
                self.metrics[i].record(*v);
            }
        }
        if want.stages {
            for (h, v) in self.stages.iter_mut().zip(s.stages) {
                if let Some(v) = v {
                    h.record(v);
                }
            }
            for (name, dur) in &s.server {
                if let Some(h) = self.server_mut(name, usize::MAX) {
                    h.record(*dur);
                }
            }
        }
    }

    fn add_counts(&mut self, s: &Sample) {
        self.n += 1;
        if let Some(c) = s.stalls_count {
            self.stall_n += 1;
            self.stalled += (c > 0) as u64;
        }
        if let Some(b) = s.buffered {
            self.buf_n += 1;
            self.buffered += b as u64;
        }
        if let Some(u) = s.upstream_buffered {
            self.up_n += 1;
            self.upstream += u as u64;
        }
        self.hidden += (s.hidden == Some(true)) as u64;
        self.net += s.stalls_network.unwrap_or(0) as f64;
        self.render += s.stalls_render.unwrap_or(0) as f64;
    }

    fn server_mut(&mut self, name: &str, max: usize) -> Option<&mut LogHistogram> {
        match self.server.iter().position(|(n, _)| n == name) {
            Some(i) => Some(&mut self.server[i].1),
            None if self.server.len() < max => {
                self.server.push((name.to_string(), LogHistogram::new()));
                self.server.last_mut().map(|(_, h)| h)
            }
            None => None,
        }
    }

    /// Adds every record of `o` (server stage names past `max_server` are not kept).
    pub fn merge(&mut self, o: &Agg, max_server: usize) {
        self.n += o.n;
        self.stall_n += o.stall_n;
        self.stalled += o.stalled;
        self.buf_n += o.buf_n;
        self.buffered += o.buffered;
        self.up_n += o.up_n;
        self.upstream += o.upstream;
        self.hidden += o.hidden;
        self.net += o.net;
        self.render += o.render;
        for (a, b) in self.metrics.iter_mut().zip(&o.metrics) {
            a.merge(b);
        }
        for (a, b) in self.stages.iter_mut().zip(&o.stages) {
            a.merge(b);
        }
        for (name, h) in &o.server {
            if let Some(a) = self.server_mut(name, max_server) {
                a.merge(h);
            }
        }
    }

    /// Takes `o`'s records back out (a stored partial replaced by its completed version).
    pub fn subtract(&mut self, o: &Agg) {
        self.n = self.n.saturating_sub(o.n);
        self.stall_n = self.stall_n.saturating_sub(o.stall_n);
        self.stalled = self.stalled.saturating_sub(o.stalled);
        self.buf_n = self.buf_n.saturating_sub(o.buf_n);
        self.buffered = self.buffered.saturating_sub(o.buffered);
        self.up_n = self.up_n.saturating_sub(o.up_n);
        self.upstream = self.upstream.saturating_sub(o.upstream);
        self.hidden = self.hidden.saturating_sub(o.hidden);
        self.net = (self.net - o.net).max(0.0);
        self.render = (self.render - o.render).max(0.0);
        for (a, b) in self.metrics.iter_mut().zip(&o.metrics) {
            a.subtract(b);
        }
        for (a, b) in self.stages.iter_mut().zip(&o.stages) {
            a.subtract(b);
        }
        for (name, h) in &o.server {
            if let Some((_, a)) = self.server.iter_mut().find(|(n, _)| n == name) {
                a.subtract(h);
            }
        }
    }

    /// The stored form: a version byte, the counts, then every sketch length-prefixed (so a
    /// read that wants one metric skips the others without decoding them), then the server
    /// stages as (name, sketch). Format 2 added the upstream-buffered counts after the others.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(2048);
        out.push(FORMAT);
        for v in [
            self.n,
            self.stall_n,
            self.stalled,
            self.buf_n,
            self.buffered,
            self.hidden,
            self.up_n,
            self.upstream,
        ] {
            put_varint(&mut out, v);
        }
        out.extend_from_slice(&self.net.to_le_bytes());
        out.extend_from_slice(&self.render.to_le_bytes());
        let mut scratch = Vec::with_capacity(512);
        let mut sketch = |out: &mut Vec<u8>, h: &LogHistogram| {
            scratch.clear();
            h.encode(&mut scratch);
            put_varint(out, scratch.len() as u64);
            out.extend_from_slice(&scratch);
        };
        for h in &self.metrics {
            sketch(&mut out, h);
        }
        for s in &self.stages {
            sketch(&mut out, &s.pos);
            sketch(&mut out, &s.neg);
        }
        put_varint(&mut out, self.server.len() as u64);
        for (name, h) in &self.server {
            put_varint(&mut out, name.len() as u64);
            out.extend_from_slice(name.as_bytes());
            sketch(&mut out, h);
        }
        out
    }

    /// Reads a stored aggregate, decoding only what `want` asks for. `None` for a damaged or
    /// unknown encoding.
    pub fn decode(buf: &[u8], want: Want) -> Option<Agg> {
        let mut at = 0;
        let format = *buf.first()?;
        if format != FORMAT && format != FORMAT_1 {
            return None;
        }
        at += 1;
        let mut a = Agg::default();
        for v in [
            &mut a.n,
            &mut a.stall_n,
            &mut a.stalled,
            &mut a.buf_n,
            &mut a.buffered,
            &mut a.hidden,
        ] {
            *v = get_varint(buf, &mut at)?;
        }
        // A format 1 row (written before issue 16) counted no `upstreamBuffered`: its records
        // were stored before the column existed, so they have none (NULL) — zero is exact.
        if format == FORMAT {
            a.up_n = get_varint(buf, &mut at)?;
            a.upstream = get_varint(buf, &mut at)?;
        }
        for v in [&mut a.net, &mut a.render] {
            *v = f64::from_le_bytes(buf.get(at..at + 8)?.try_into().ok()?);
            at += 8;
        }
        // Each sketch: its length, then its bytes; decoded only when wanted.
        let next = |at: &mut usize, wanted: bool| -> Option<Option<LogHistogram>> {
            let len = usize::try_from(get_varint(buf, at)?).ok()?;
            let bytes = buf.get(*at..at.checked_add(len)?)?;
            *at += len;
            if !wanted {
                return Some(None);
            }
            let (h, used) = LogHistogram::decode(bytes)?;
            (used == len).then_some(Some(h))
        };
        for i in 0..N_METRICS {
            if let Some(h) = next(&mut at, want.has(i))? {
                a.metrics[i] = h;
            }
        }
        for s in a.stages.iter_mut() {
            for part in [&mut s.pos, &mut s.neg] {
                if let Some(h) = next(&mut at, want.stages)? {
                    *part = h;
                }
            }
        }
        if want.stages {
            let k = get_varint(buf, &mut at)?;
            for _ in 0..k.min(1 << 16) {
                let len = usize::try_from(get_varint(buf, &mut at)?).ok()?;
                let name = std::str::from_utf8(buf.get(at..at.checked_add(len)?)?).ok()?;
                at += len;
                let h = next(&mut at, true)??;
                a.server.push((name.to_string(), h));
            }
        }
        Some(a)
    }

    /// Server stages, the most frequent first, at most `max` (a bounded answer whatever names
    /// beacons invent).
    pub fn top_server(&self, max: usize) -> Vec<&(String, LogHistogram)> {
        let mut v: Vec<_> = self.server.iter().filter(|(_, h)| h.count() > 0).collect();
        v.sort_by(|a, b| b.1.count().cmp(&a.1.count()).then_with(|| a.0.cmp(&b.0)));
        v.truncate(max);
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

/// Version byte of `Agg::encode`: 2 since the upstream-buffered counts (issue 16); rows of
/// format 1 are still read.
const FORMAT: u8 = 2;
const FORMAT_1: u8 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(i: usize) -> Sample {
        let v = (i % 97) as f64 * 13.5;
        Sample {
            start_ms: 1e12 + i as f64,
            outcome: "ok".into(),
            route: Some("/v1/chat".into()),
            model: None,
            metrics: std::array::from_fn(|k| (k != 3 || i % 2 == 0).then_some(v + k as f64)),
            stages: [Some(-5.0 + (i % 11) as f64), Some(v), None, Some(16.0), Some(v * 3.0), None],
            stalls_count: Some((i % 3) as i64),
            stalls_network: Some(1),
            stalls_render: None,
            buffered: Some(i % 4 == 0),
            upstream_buffered: [None, Some(true), Some(false)][i % 3],
            hidden: Some(false),
            server: vec![("queue".into(), 3.0), (format!("s{}", i % 20), v)],
        }
    }

    /// Exact nearest rank, written independently.
    fn exact(mut v: Vec<f64>, q: f64) -> f64 {
        v.sort_by(f64::total_cmp);
        v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
    }

    #[test]
    fn signed_quantiles_are_within_alpha_of_exact() {
        let mut s = Signed::default();
        let vals: Vec<f64> = (0..1001).map(|i| (i as f64 - 300.0) * 1.7).collect();
        vals.iter().for_each(|&v| s.record(v));
        for q in [0.01, 0.1, 0.25, 0.29, 0.3, 0.31, 0.5, 0.95, 0.99, 1.0] {
            let (e, x) = (s.quantile(q).unwrap(), exact(vals.clone(), q));
            assert!((e - x).abs() <= 0.01 * x.abs() + 0.01, "q={q} {e} vs {x}");
        }
        assert_eq!(Signed::default().quantile(0.5), None);
    }

    #[test]
    fn encoded_aggregates_round_trip_and_merge_like_their_records() {
        let (mut all, mut a, mut b) = (Agg::default(), Agg::default(), Agg::default());
        for i in 0..500 {
            let s = sample(i);
            all.add(&s, usize::MAX);
            if i % 3 == 0 { &mut a } else { &mut b }.add(&s, usize::MAX);
        }
        let mut m = Agg::decode(&a.encode(), Want::ALL).unwrap();
        m.merge(&Agg::decode(&b.encode(), Want::ALL).unwrap(), usize::MAX);
        assert_eq!((m.n, m.stall_n, m.stalled, m.buf_n, m.buffered), (all.n, all.stall_n, all.stalled, all.buf_n, all.buffered));
        assert_eq!((m.up_n, m.upstream), (all.up_n, all.upstream));
        assert_eq!((all.up_n, all.upstream), (333, 167));
        assert_eq!((m.net, m.render, m.hidden), (500.0, 0.0, 0));
        for i in 0..N_METRICS {
            assert_eq!(m.metrics[i].quantile(0.95), all.metrics[i].quantile(0.95), "{i}");
        }
        assert_eq!(m.metrics[3].count(), 250);
        for k in 0..N_STAGES {
            assert_eq!(m.stages[k].quantile(0.5), all.stages[k].quantile(0.5));
        }
        assert_eq!(m.server.len(), 21);
        // Only what is wanted is decoded.
        let one = Agg::decode(&all.encode(), Want::metric(2)).unwrap();
        assert_eq!((one.n, one.metrics[2].count(), one.metrics[1].count(), one.server.len()), (500, 500, 0, 0));
        // Damaged bytes never panic.
        let enc = all.encode();
        for cut in 0..enc.len() {
            let _ = Agg::decode(&enc[..cut], Want::ALL);
        }
        assert!(Agg::decode(&[9], Want::ALL).is_none());
    }

    #[test]
    fn a_format_1_row_reads_with_no_upstream_counts() {
        let mut a = Agg::default();
        for i in 0..50 {
            a.add(&sample(i), usize::MAX);
        }
        // Format 1 is format 2 without the two upstream varints after `hidden`.
        let enc = a.encode();
        let mut at = 1;
        for _ in 0..6 {
            get_varint(&enc, &mut at).unwrap();
        }
        let mut after = at;
        for _ in 0..2 {
            get_varint(&enc, &mut after).unwrap();
        }
        let old: Vec<u8> = [&[FORMAT_1][..], &enc[1..at], &enc[after..]].concat();
        let d = Agg::decode(&old, Want::ALL).expect("format 1 decodes");
        assert_eq!((d.n, d.buf_n, d.buffered, d.hidden, d.up_n, d.upstream), (a.n, a.buf_n, a.buffered, a.hidden, 0, 0));
        assert_eq!(d.metrics[0].quantile(0.5), a.metrics[0].quantile(0.5));
        assert_eq!(d.server.len(), a.server.len());
        let now = Agg::decode(&enc, Want::ALL).unwrap();
        assert_eq!((now.up_n, now.upstream), (a.up_n, a.upstream));
    }

    #[test]
    fn server_stages_are_bounded_per_row_and_subtract_restores() {
        let mut row = Agg::default();
        for i in 0..100 {
            row.add(&sample(i), MAX_SERVER_STAGES);
        }
        assert_eq!(row.server.len(), MAX_SERVER_STAGES);
        let before = row.clone();
        let mut one = Agg::default();
        one.add(&sample(7), usize::MAX);
        row.merge(&one, MAX_SERVER_STAGES);
        row.subtract(&one);
        assert_eq!((row.n, row.stalled, row.net), (before.n, before.stalled, before.net));
        assert_eq!(row.metrics[0].quantile(0.5), before.metrics[0].quantile(0.5));
        assert_eq!(row.top_server(3).len(), 3);
        assert_eq!(row.top_server(3).iter().filter(|(n, _)| n == "queue").count(), 1, "the most frequent is kept");
    }

    #[test]
    fn stages_of_marks() {
        let m = [Some(-40.0), Some(80.0), Some(81.0), Some(210.0), Some(226.0), Some(1900.0), Some(1916.0), Some(1901.0)];
        assert_eq!(stages_of(&m), [Some(40.0), Some(80.0), Some(130.0), Some(16.0), Some(1690.0), Some(16.0)]);
        let mut n = m;
        n[1] = None;
        assert_eq!(stages_of(&n)[2], None);
    }
}
