//! `/metrics`: the Prometheus exposition (OpenMetrics text, by the `prometheus-client` crate),
//! the path past one machine. N collectors behind a load balancer each expose histograms of
//! what they stored; Prometheus sums them (`histogram_quantile(0.95, sum by (le) (rate(…)))`),
//! which is how latency SLOs are usually run, and `rules` turns budgets into its alerts.
//!
//! Families (times in seconds, the Prometheus base unit):
//! * `llm_rum_<metric>_seconds{route, model, outcome}` histograms of `histograms()`;
//! * `llm_rum_answers_total{route, model, outcome}`, `llm_rum_stalls_total{route, model, cause}`,
//!   `llm_rum_buffered_answers_total{route, model}` (the UI held the text back),
//!   `llm_rum_upstream_buffered_answers_total{route, model}` (a proxy or compression did),
//!   `llm_rum_partial_records_total`;
//! * the collector's own counters (`llm_rum_collector_*`): beacons and records by result,
//!   records dropped by SDK queues, connections by event, retention, plus gauges.
//!
//! * OpenTelemetry GenAI's client histograms, in the conventions' names, units and bucket
//!   boundaries (semantic-conventions-genai, docs/gen-ai/gen-ai-metrics.md; the OTLP → Prometheus
//!   name mapping): `gen_ai_client_operation_time_to_first_chunk_seconds` (one observation per
//!   answer: its `ttft`, measured in the browser) and
//!   `gen_ai_client_operation_time_per_output_chunk_seconds` (one observation per gap between
//!   content-bearing chunks: the record's `itl.buckets`, its sum `lastToken − firstToken`),
//!   labelled `gen_ai_operation_name` ("chat"), `gen_ai_provider_name`,
//!   `gen_ai_request_model` (a model the app named: `modelSource` "config") and
//!   `gen_ai_response_model` (the one the stream named: "stream"); a label it cannot know is
//!   empty, which Prometheus reads as absent.
//!
//! A record is observed once, when it is first stored as final: `partial` records (a page hid
//! mid-answer; their completed version may follow with the same id) are only counted, since a
//! Prometheus counter cannot take an observation back.
//!
//! Label cardinality is bounded: a route (already a template: the SDK replaces id-like path
//! segments with `:id`) or model gets its own label value when listed (`--metrics-route`,
//! `--metrics-model`), or — without a list — while fewer than `--metrics-max-routes` /
//! `--metrics-max-models` have been seen; every other one is `other`. Values are safe keys
//! (`keys::safe_key`: no quote, backslash or newline), which the text format needs.

pub mod counters;


use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

// OpenTelemetry GenAI's bucket boundaries (s): the SDK core's table, which `itl.buckets` counts by.
use llm_rum::core::record::genai::CHUNK_BUCKETS_S;

use crate::cli::Config;
use crate::metrics::counters::Counters;
use crate::ingest::Row;

pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Budget metric → histogram family and help, from the metric table (`agg::METRICS`). The
/// metrics a budget can name that have none (`itl.p50`, `itl.max`, `stalls.*`) have no
/// histogram: `rules` says so.
pub fn histograms() -> Vec<(&'static str, &'static str, &'static str)> {
    crate::query::agg::METRICS
        .iter()
        .filter_map(|m| m.histogram.map(|(family, help)| (m.name, family, help)))
        .collect()
}

/// Bucket bounds (s): 1–1.5–2–3–5–7.5 per decade, 5 ms to 60 s. `histogram_quantile`
/// interpolates inside a bucket, so its error is at most the bucket's width.
pub const BUCKETS: [f64; 25] = [
    0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5,
    2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 60.0,
];

/// Provider label values at most (a provider is the SDK's well-known name or the app's own).
const MAX_PROVIDERS: usize = 20;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GenAi {
    gen_ai_operation_name: &'static str,
    gen_ai_provider_name: String,
    gen_ai_request_model: String,
    gen_ai_response_model: String,
}

/// A Prometheus histogram fed counts per bucket (the record's `itl.buckets`, counted by the
/// SDK over every gap of the answer) rather than one value at a time.
#[derive(Debug, Default)]
struct Counted(Mutex<(f64, u64, [u64; crate::ingest::ITL_BUCKETS])>);

impl Counted {
    fn add(&self, counts: &[u64; crate::ingest::ITL_BUCKETS], sum_s: f64) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (sum, n, buckets) = &mut *g;
        *sum += sum_s;
        for (a, c) in buckets.iter_mut().zip(counts) {
            *a = a.saturating_add(*c);
            *n = n.saturating_add(*c);
        }
    }
}

impl prometheus_client::metrics::TypedMetric for Counted {
    const TYPE: prometheus_client::metrics::MetricType = prometheus_client::metrics::MetricType::Histogram;
}

impl EncodeMetric for Counted {
    fn encode(&self, mut e: prometheus_client::encoding::MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, counts) = *self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Upper bounds, then f64::MAX: what the encoder writes as `le="+Inf"`.
        let b: Vec<(f64, u64)> =
            CHUNK_BUCKETS_S.iter().copied().chain([f64::MAX]).zip(counts).collect();
        e.encode_histogram::<prometheus_client::encoding::NoLabelSet>(sum, count, &b, None)
    }
    fn metric_type(&self) -> prometheus_client::metrics::MetricType {
        <Self as prometheus_client::metrics::TypedMetric>::TYPE
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Answer {
    route: String,
    model: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Stall {
    route: String,
    model: String,
    cause: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteModel {
    route: String,
    model: String,
}

type Hist = Family<Answer, Histogram, fn() -> Histogram>;

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// Which label value a route or model gets (see the module docs).
struct Bounded {
    allow: Option<HashSet<String>>,
    seen: HashSet<String>,
    max: usize,
}

impl Bounded {
    fn new(allow: &[String], max: usize) -> Bounded {
        Bounded {
            allow: (!allow.is_empty()).then(|| allow.iter().cloned().collect()),
            seen: HashSet::new(),
            max,
        }
    }
    fn label(&mut self, v: Option<&str>) -> String {
        let Some(v) = v.filter(|v| !v.is_empty()) else {
            return "none".into();
        };
        let known = match &self.allow {
            Some(a) => a.contains(v),
            None => {
                self.seen.contains(v)
                    || (self.seen.len() < self.max && self.seen.insert(v.to_string()))
            }
        };
        if known {
            v.to_string()
        } else {
            "other".into()
        }
    }
}

pub struct Metrics {
    registry: Mutex<Registry>,
    hists: Vec<(usize, Hist)>,
    answers: Family<Answer, Counter>,
    stalls: Family<Stall, Counter>,
    buffered: Family<RouteModel, Counter>,
    upstream: Family<RouteModel, Counter>,
    partial: Counter,
    alert_eval: Histogram,
    routes: Mutex<Bounded>,
    models: Mutex<Bounded>,
    providers: Mutex<Bounded>,
    first_chunk: Family<GenAi, Histogram, fn() -> Histogram>,
    per_chunk: Family<GenAi, Counted>,
}

impl Metrics {
    pub fn new(cfg: &Config) -> Metrics {
        let mut r = Registry::default();
        let hists: Vec<(usize, Hist)> = histograms()
            .into_iter()
            .map(|(metric, name, help)| {
                let f = Hist::new_with_constructor(histogram as fn() -> Histogram);
                r.register(name, format!("{help} ({metric}), per answer"), f.clone());
                (crate::query::agg::metric_index(metric).expect("a known metric"), f)
            })
            .collect();
        let answers = Family::<Answer, Counter>::default();
        r.register(
            "llm_rum_answers",
            "answers stored (final records: ok, error, aborted)",
            answers.clone(),
        );
        let stalls = Family::<Stall, Counter>::default();
        r.register(
            "llm_rum_stalls",
            "stalls in stored answers, by cause (network: nothing to paint; render: text waited)",
            stalls.clone(),
        );
        let buffered = Family::<RouteModel, Counter>::default();
        r.register(
            "llm_rum_buffered_answers",
            "answers the UI painted only when (nearly) complete",
            buffered.clone(),
        );
        let upstream = Family::<RouteModel, Counter>::default();
        r.register(
            "llm_rum_upstream_buffered_answers",
            "answers that reached the page in bursts a streaming server does not produce (a buffering proxy, compression)",
            upstream.clone(),
        );
        let partial = Counter::default();
        r.register(
            "llm_rum_partial_records",
            "partial records stored (a page hid mid-answer; not in the histograms)",
            partial.clone(),
        );
        let first_chunk = Family::<GenAi, Histogram, fn() -> Histogram>::new_with_constructor(|| {
            Histogram::new(CHUNK_BUCKETS_S)
        });
        r.register(
            "gen_ai_client_operation_time_to_first_chunk_seconds",
            "OpenTelemetry GenAI: time to receive the first chunk, measured in the browser (the answer's ttft)",
            first_chunk.clone(),
        );
        let per_chunk = Family::<GenAi, Counted>::default();
        r.register(
            "gen_ai_client_operation_time_per_output_chunk_seconds",
            "OpenTelemetry GenAI: time per output chunk after the first, measured in the browser (each gap of the answer's itl)",
            per_chunk.clone(),
        );
        let alert_eval = Histogram::new([0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0]);
        r.register(
            "llm_rum_collector_alert_evaluation_seconds",
            "how long one evaluation of every budget took",
            alert_eval.clone(),
        );
        Metrics {
            registry: Mutex::new(r),
            hists,
            answers,
            stalls,
            buffered,
            upstream,
            partial,
            alert_eval,
            routes: Mutex::new(Bounded::new(&cfg.metrics_routes, cfg.metrics_max_routes)),
            models: Mutex::new(Bounded::new(&cfg.metrics_models, cfg.metrics_max_models)),
            providers: Mutex::new(Bounded::new(&[], MAX_PROVIDERS)),
            first_chunk,
            per_chunk,
        }
    }

    /// Adds the collector's own counters and gauges (read at each scrape).
    pub fn collect_collector(
        &self,
        counters: Arc<Counters>,
        writer_up: Box<dyn Fn() -> bool + Send + Sync>,
        connections: Arc<crate::serve::Registry>,
    ) {
        self.registry
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .register_collector(Box::new(Own {
                counters,
                writer_up,
                connections,
            }));
    }

    /// One stored record.
    pub fn observe(&self, r: &Row) {
        if r.outcome == "partial" {
            self.partial.inc();
            return;
        }
        let route = self.routes.lock().unwrap_or_else(|e| e.into_inner()).label(r.route.as_deref());
        let model = self.models.lock().unwrap_or_else(|e| e.into_inner()).label(r.model.as_deref());
        let a = Answer {
            route,
            model,
            outcome: r.outcome.clone(),
        };
        self.observe_genai(r);
        let values = crate::query::agg::Sample::of(r).metrics;
        for (i, h) in &self.hists {
            if let Some(v) = values[*i] {
                h.get_or_create(&a).observe(v / 1000.0);
            }
        }
        self.answers.get_or_create(&a).inc();
        for (cause, n) in [("network", r.stalls_network), ("render", r.stalls_render)] {
            if let Some(n) = n.filter(|n| *n > 0) {
                self.stalls
                    .get_or_create(&Stall {
                        route: a.route.clone(),
                        model: a.model.clone(),
                        cause: cause.into(),
                    })
                    .inc_by(n as u64);
            }
        }
        let key = RouteModel {
            route: a.route,
            model: a.model,
        };
        for (family, on) in [(&self.buffered, r.buffered), (&self.upstream, r.upstream_buffered)] {
            if on == Some(true) {
                family.get_or_create(&key).inc();
            }
        }
    }

    /// The GenAI histograms (see the module docs): a label the record cannot fill is empty.
    fn observe_genai(&self, r: &Row) {
        let model = |source: &str| -> String {
            match (r.model_source.as_deref(), r.model.as_deref()) {
                (Some(s), Some(_)) if s == source => {
                    self.models.lock().unwrap_or_else(|e| e.into_inner()).label(r.model.as_deref())
                }
                _ => String::new(),
            }
        };
        let labels = GenAi {
            gen_ai_operation_name: "chat",
            gen_ai_provider_name: match r.provider.as_deref() {
                Some(p) => self.providers.lock().unwrap_or_else(|e| e.into_inner()).label(Some(p)),
                None => String::new(),
            },
            gen_ai_request_model: model("config"),
            gen_ai_response_model: model("stream"),
        };
        if let Some(t) = r.ttft {
            self.first_chunk.get_or_create(&labels).observe(t / 1000.0);
        }
        let gaps = r.itl_buckets.filter(|b| b.iter().any(|&c| c > 0));
        let mark = |n: &str| crate::ingest::MARKS.iter().position(|m| *m == n).and_then(|i| r.marks[i]);
        if let (Some(b), Some(first), Some(last)) = (gaps, mark("firstToken"), mark("lastToken")) {
            // The gaps between content-bearing chunks sum to lastToken − firstToken exactly.
            self.per_chunk.get_or_create(&labels).add(&b, (last - first).max(0.0) / 1000.0);
        }
    }

    pub fn alert_evaluated(&self, seconds: f64) {
        self.alert_eval.observe(seconds);
    }

    pub fn render(&self) -> Result<String, String> {
        let mut out = String::with_capacity(64 * 1024);
        prometheus_client::encoding::text::encode(
            &mut out,
            &self.registry.lock().unwrap_or_else(|e| e.into_inner()),
        )
        .map_err(|e| format!("encoding /metrics: {e}"))?;
        Ok(out)
    }
}

/// The collector's own counters, grouped into families with a label where they are one
/// quantity by reason (beacons by result, records by result, connections by event); any
/// counter not grouped is exported under its own name, so none is ever left out.
struct Own {
    counters: Arc<Counters>,
    /// The store's health, asked at each scrape (a closure: metrics does not know stores).
    writer_up: Box<dyn Fn() -> bool + Send + Sync>,
    connections: Arc<crate::serve::Registry>,
}

impl std::fmt::Debug for Own {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("collector counters")
    }
}

/// counter → (family, label name, label value).
const GROUPS: &[(&str, &str, &str, &str)] = &[
    ("beacons_stored", "beacons", "result", "stored"),
    ("beacons_invalid", "beacons", "result", "invalid"),
    ("beacons_too_large", "beacons", "result", "too_large"),
    ("beacons_rate_limited", "beacons", "result", "rate_limited"),
    ("beacons_origin_refused", "beacons", "result", "origin_refused"),
    ("beacons_body_timeout", "beacons", "result", "body_timeout"),
    ("beacons_storage_failed", "beacons", "result", "storage_failed"),
    ("records_stored", "records", "result", "stored"),
    ("records_duplicate", "records", "result", "duplicate"),
    ("records_refused_too_old", "records", "result", "refused_too_old"),
    ("records_refused_future", "records", "result", "refused_future"),
    ("connections_accepted", "connections", "event", "accepted"),
    ("connections_evicted", "connections", "event", "evicted"),
    ("connections_refused", "connections", "event", "refused"),
    ("connections_header_timeout", "connections", "event", "header_timeout"),
    ("connections_idle_timeout", "connections", "event", "idle_timeout"),
];

const FAMILY_HELP: &[(&str, &str)] = &[
    ("beacons", "beacons received, by what became of them (stored = 2xx; the rest by refusal)"),
    ("records", "records received in accepted beacons, by result"),
    ("connections", "TCP connections, by event"),
];

impl Collector for Own {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snap = self.counters.snapshot();
        let value = |name: &str| snap.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v);
        for (family, help) in FAMILY_HELP {
            let c = ConstCounter::new(0u64);
            let name = format!("llm_rum_collector_{family}");
            let mut f = enc.encode_descriptor(&name, help, None, c.metric_type())?;
            for (counter, _, key, label) in GROUPS.iter().filter(|g| g.1 == *family) {
                let labels = [(*key, *label)];
                let m = f.encode_family(&labels)?;
                ConstCounter::new(value(counter)).encode(m)?;
            }
        }
        for (name, v) in &snap {
            if GROUPS.iter().any(|g| g.0 == *name) {
                continue;
            }
            let c = ConstCounter::new(*v);
            let full = format!("llm_rum_collector_{name}");
            let m = enc.encode_descriptor(&full, crate::metrics::counters::help(name), None, c.metric_type())?;
            c.encode(m)?;
        }
        for (name, help, v) in [
            (
                "writer_up",
                "1 while the writer's last commit (or probe) succeeded (ClickHouse: while inserts succeed or the spool has room)",
                (self.writer_up)() as i64,
            ),
            (
                "open_connections",
                "TCP connections open now",
                self.connections.open() as i64,
            ),
            (
                "log_lines_dropped",
                "log lines dropped because stderr could not keep up",
                crate::log::DROPPED.load(std::sync::atomic::Ordering::Relaxed) as i64,
            ),
        ] {
            let g = ConstGauge::new(v);
            let full = format!("llm_rum_collector_{name}");
            let m = enc.encode_descriptor(&full, help, None, g.metric_type())?;
            g.encode(m)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_bounded() {
        let mut b = Bounded::new(&[], 2);
        assert_eq!(b.label(Some("/a")), "/a");
        assert_eq!(b.label(Some("/b")), "/b");
        assert_eq!(b.label(Some("/c")), "other");
        assert_eq!(b.label(Some("/a")), "/a");
        assert_eq!(b.label(None), "none");
        let mut b = Bounded::new(&["gpt-4o".into()], 100);
        assert_eq!(b.label(Some("gpt-4o")), "gpt-4o");
        assert_eq!(b.label(Some("x")), "other");
    }

    #[test]
    fn every_budget_metric_with_a_histogram_is_a_known_metric() {
        for (m, name, _) in histograms() {
            assert!(crate::query::agg::metric_index(m).is_some(), "{m}");
            assert!(name.starts_with("llm_rum_") && name.ends_with("_seconds"));
        }
        assert!(BUCKETS.windows(2).all(|w| w[0] < w[1]));
    }
}
