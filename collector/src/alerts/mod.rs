//! Budgets and alerts.
//!
//! A budget is `metric pQ <= limit` (e.g. `perceivedTtft p95<=1000`). At each evaluation the
//! engine computes the metric's Q-percentile over the sliding window `[now − window, now)`
//! (by the records' startEpochMs). A budget is *breaching* while that value is above the limit.
//! An alert fires when a breach has lasted `sustain` (every evaluation in between was above),
//! and clears at the first evaluation at or under the limit. A window with no records holds the
//! state (silence is neither a breach nor a recovery), so an incident that drives traffic to zero
//! does not clear its own alert.
//!
//! The engine is a pure function of (records via `Source`, now): time is passed in, never read,
//! so tests drive it with synthetic clocks and in-memory records.

pub mod rules;


use serde::Serialize;

use crate::query::is_metric;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budget {
    pub metric: String,
    /// 0..1 (p95 → 0.95).
    pub q: f64,
    pub limit: f64,
    /// Only the answers of this model (`ttft p95<=800 model=gpt-4o`); `None`: every answer.
    pub model: Option<String>,
    /// As written by the user, normalised: `perceivedTtft p95<=1000`, `ttft p95<=800 model=gpt-4o`.
    pub text: String,
}

/// Parses `metric pQ<=limit [model=NAME]` (spaces optional around `<=`; `≤` accepted; a
/// trailing `ms` too).
pub fn parse_budget(s: &str) -> Result<Budget, String> {
    let err = || format!("bad budget {s:?}: expected like 'perceivedTtft p95<=1000' or 'ttft p95<=800 model=gpt-4o'");
    let norm = s.replace('≤', "<=");
    let (lhs, rhs) = norm.split_once("<=").ok_or_else(err)?;
    let mut parts = lhs.split_whitespace();
    let metric = parts.next().ok_or_else(err)?.to_string();
    let pq = parts.next().ok_or_else(err)?;
    if parts.next().is_some() {
        return Err(err());
    }
    if !is_metric(&metric) {
        let known = crate::query::metric_names();
        return Err(format!(
            "bad budget {s:?}: unknown metric {metric:?} (known: {})",
            known.join(", ")
        ));
    }
    let qn: f64 = pq
        .strip_prefix('p')
        .ok_or_else(err)?
        .parse()
        .map_err(|_| err())?;
    if !(qn > 0.0 && qn <= 100.0) {
        return Err(err());
    }
    let r = rhs.trim();
    // The limit ends at the first space that is not before `ms` (`800 ms model=x`).
    let (r, scope) = match r.split_once(char::is_whitespace) {
        Some((l, rest)) if rest.trim_start().starts_with("ms") => {
            let rest = rest.trim_start();
            (&r[..l.len()], rest[2..].trim())
        }
        Some((l, rest)) => (l, rest.trim()),
        None => (r, ""),
    };
    let r = r.strip_suffix("ms").unwrap_or(r).trim();
    let limit: f64 = r.parse().map_err(|_| err())?;
    if !limit.is_finite() || limit < 0.0 {
        return Err(err());
    }
    let model = match scope.split_once('=') {
        _ if scope.is_empty() => None,
        Some(("model", m)) if !m.is_empty() && !m.contains(char::is_whitespace) => {
            // As ingest stores it, so the filter matches the stored model.
            Some(crate::ingest::keys::safe_key(m, 256))
        }
        _ => return Err(err()),
    };
    Ok(Budget {
        text: match &model {
            Some(m) => format!("{metric} {pq}<={limit} model={m}"),
            None => format!("{metric} {pq}<={limit}"),
        },
        metric,
        q: qn / 100.0,
        limit,
        model,
    })
}

/// Where the engine reads records from: SQLite's rollups in the server, a Vec in tests.
pub trait Source {
    /// The nearest-rank `q`-percentile of `metric` over records with startEpochMs in
    /// `[from, to)` (of `model` only, when given); `None` when there are none.
    fn quantile(&self, metric: &str, q: f64, from: f64, to: f64, model: Option<&str>) -> Option<f64>;
    /// Median per stage for records in `[from, to)`.
    fn stage_medians(&self, from: f64, to: f64) -> Vec<(String, f64)>;
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageGrowth {
    pub stage: String,
    /// Median in the window before the breach began.
    pub before: Option<f64>,
    /// Median in the window when the alert fired.
    pub during: f64,
    pub delta: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Alert {
    pub id: u64,
    pub budget: String,
    pub metric: String,
    pub q: f64,
    pub limit: f64,
    /// "firing" or "resolved".
    pub state: &'static str,
    /// When the percentile first went above the limit (epoch ms).
    pub breach_since_ms: f64,
    pub fired_at_ms: f64,
    pub resolved_at_ms: Option<f64>,
    /// The windowed percentile at the latest evaluation while firing.
    pub value: f64,
    pub peak: f64,
    /// The stage whose median grew most between the window before the breach and the window
    /// at firing time (None when no stage data).
    pub grew_most: Option<StageGrowth>,
    /// The five largest stage growths, largest first.
    pub stage_growth: Vec<StageGrowth>,
}

#[derive(Debug, Default, Clone)]
struct Track {
    above_since: Option<f64>,
    firing: Option<usize>,
}

/// What one evaluation did, for logs and tests.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Fired(u64),
    Resolved(u64),
}

#[derive(Clone)]
pub struct Engine {
    pub budgets: Vec<Budget>,
    pub window_ms: f64,
    pub sustain_ms: f64,
    tracks: Vec<Track>,
    /// Every alert, oldest first; bounded (resolved ones beyond `KEEP` are forgotten).
    pub alerts: Vec<Alert>,
    /// Latest windowed value per budget (None: no records in the window).
    pub current: Vec<Option<f64>>,
    next_id: u64,
}

const KEEP: usize = 200;

impl Engine {
    pub fn new(budgets: Vec<Budget>, window_ms: f64, sustain_ms: f64) -> Engine {
        let n = budgets.len();
        Engine {
            budgets,
            window_ms,
            sustain_ms,
            tracks: vec![Track::default(); n],
            alerts: Vec::new(),
            current: vec![None; n],
            next_id: 1,
        }
    }

    pub fn evaluate(&mut self, src: &dyn Source, now: f64) -> Vec<Event> {
        let mut events = Vec::new();
        for i in 0..self.budgets.len() {
            let b = self.budgets[i].clone();
            let v = src.quantile(&b.metric, b.q, now - self.window_ms, now, b.model.as_deref());
            self.current[i] = v;
            let Some(v) = v else { continue };
            let t = &mut self.tracks[i];
            if v > b.limit {
                let since = *t.above_since.get_or_insert(now);
                if let Some(a) = t.firing {
                    let a = &mut self.alerts[a];
                    a.value = v;
                    a.peak = a.peak.max(v);
                } else if now - since >= self.sustain_ms {
                    let mut stage_growth = growth(src, since, now, self.window_ms);
                    let grew_most = pick(&stage_growth);
                    stage_growth.truncate(5);
                    let id = self.next_id;
                    self.next_id += 1;
                    self.alerts.push(Alert {
                        id,
                        budget: b.text.clone(),
                        metric: b.metric.clone(),
                        q: b.q,
                        limit: b.limit,
                        state: "firing",
                        breach_since_ms: since,
                        fired_at_ms: now,
                        resolved_at_ms: None,
                        value: v,
                        peak: v,
                        grew_most,
                        stage_growth,
                    });
                    self.tracks[i].firing = Some(self.alerts.len() - 1);
                    events.push(Event::Fired(id));
                }
            } else {
                t.above_since = None;
                if let Some(a) = t.firing.take() {
                    let a = &mut self.alerts[a];
                    a.state = "resolved";
                    a.resolved_at_ms = Some(now);
                    events.push(Event::Resolved(a.id));
                }
            }
        }
        self.trim();
        events
    }

    fn trim(&mut self) {
        while self.alerts.len() > KEEP {
            let Some(pos) = self.alerts.iter().position(|a| a.state == "resolved") else {
                break;
            };
            self.alerts.remove(pos);
            for t in &mut self.tracks {
                if let Some(f) = &mut t.firing {
                    if *f > pos {
                        *f -= 1;
                    }
                }
            }
        }
    }

    pub fn firing(&self) -> impl Iterator<Item = &Alert> {
        self.alerts.iter().filter(|a| a.state == "firing")
    }
}

/// Compares stage medians in the window that ended when the breach began with the window
/// ending now; returns every stage's growth, largest first. Server stages overlap the client
/// segments that contain them (start→headers, headers→firstToken), so a grown `prefill` also
/// grows `headers→firstToken`; `pick` prefers the more specific server stage then.
fn growth(src: &dyn Source, since: f64, now: f64, window: f64) -> Vec<StageGrowth> {
    let before = src.stage_medians(since - window, since);
    let during = src.stage_medians(now - window, now);
    let mut v: Vec<StageGrowth> = during
        .into_iter()
        .map(|(stage, d)| {
            let b = before.iter().find(|(n, _)| *n == stage).map(|(_, m)| *m);
            StageGrowth {
                delta: d - b.unwrap_or(0.0),
                before: b,
                during: d,
                stage,
            }
        })
        .collect();
    v.sort_by(|a, b| b.delta.total_cmp(&a.delta));
    v
}

/// The stage that grew most: the largest growth, except that a server stage explaining at
/// least half of an enclosing client segment's growth is named instead (it says *why*).
pub fn pick(growth: &[StageGrowth]) -> Option<StageGrowth> {
    let top = growth.first()?;
    if matches!(top.stage.as_str(), "start→headers" | "headers→firstToken") && top.delta > 0.0 {
        if let Some(s) = growth
            .iter()
            .find(|g| g.stage.starts_with("server:") && g.delta >= top.delta * 0.5)
        {
            return Some(s.clone());
        }
    }
    Some(top.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records in memory: (startEpochMs, ttft, prefill).
    struct Mem(Vec<(f64, f64, f64)>);

    impl Source for Mem {
        fn quantile(&self, metric: &str, q: f64, from: f64, to: f64, model: Option<&str>) -> Option<f64> {
            assert_eq!((metric, model), ("ttft", None));
            let mut v: Vec<f64> = self
                .0
                .iter()
                .filter(|r| r.0 >= from && r.0 < to)
                .map(|r| r.1)
                .collect();
            v.sort_by(f64::total_cmp);
            crate::query::percentile(&v, q)
        }
        fn stage_medians(&self, from: f64, to: f64) -> Vec<(String, f64)> {
            let sel: Vec<_> = self.0.iter().filter(|r| r.0 >= from && r.0 < to).collect();
            let med = |mut v: Vec<f64>| {
                v.sort_by(f64::total_cmp);
                crate::query::percentile(&v, 0.5)
            };
            let mut out = Vec::new();
            if let Some(m) = med(sel.iter().map(|r| r.1).collect()) {
                out.push(("headers→firstToken".to_string(), m));
            }
            if let Some(m) = med(sel.iter().map(|r| r.2).collect()) {
                out.push(("server:prefill".to_string(), m));
            }
            out
        }
    }

    /// One record every 100 ms from `from` to `to` (ms) with the given ttft and prefill.
    fn traffic(m: &mut Mem, from: f64, to: f64, ttft: f64, prefill: f64) {
        let mut t = from;
        while t < to {
            m.0.push((t, ttft, prefill));
            t += 100.0;
        }
    }

    fn budget() -> Budget {
        parse_budget("ttft p95<=500").unwrap()
    }

    #[test]
    fn parses_budgets() {
        let b = parse_budget("perceivedTtft p95<=1000").unwrap();
        assert_eq!(
            (b.metric.as_str(), b.q, b.limit),
            ("perceivedTtft", 0.95, 1000.0)
        );
        let b = parse_budget(" itl.p95  p99.9 ≤ 150ms ").unwrap();
        assert_eq!((b.metric.as_str(), b.limit), ("itl.p95", 150.0));
        assert!((b.q - 0.999).abs() < 1e-12);
        for bad in [
            "",
            "ttft",
            "ttft p95",
            "ttft <=1",
            "nope p95<=1",
            "ttft q95<=1",
            "ttft p0<=1",
            "ttft p101<=1",
            "ttft p95<=-1",
            "ttft p95<=x",
            "ttft p95 x<=1",
            "ttft p95<=1 model=",
            "ttft p95<=1 route=/x",
            "ttft p95<=1 model=a b",
            "ttft p95<=1 gpt-4o",
        ] {
            assert!(parse_budget(bad).is_err(), "{bad:?} should be rejected");
        }
        for text in ["ttft p95<=800 model=gpt-4o", "ttft p95 <= 800ms model=gpt-4o", "ttft p95<=800 ms  model=gpt-4o"] {
            let b = parse_budget(text).unwrap();
            assert_eq!((b.limit, b.model.as_deref(), b.text.as_str()), (800.0, Some("gpt-4o"), "ttft p95<=800 model=gpt-4o"), "{text}");
        }
        assert_eq!(parse_budget("ttft p95<=800").unwrap().model, None);
    }

    /// Fires exactly when the breach has lasted `sustain`, not before; clears on recovery.
    #[test]
    fn fires_only_after_sustain_and_clears_on_recovery() {
        let (window, sustain) = (10_000.0, 30_000.0);
        let mut src = Mem(Vec::new());
        traffic(&mut src, 0.0, 60_000.0, 100.0, 20.0); // healthy minute
        traffic(&mut src, 60_000.0, 120_000.0, 900.0, 700.0); // slow minute
        traffic(&mut src, 120_000.0, 200_000.0, 100.0, 20.0); // healthy again
        let mut e = Engine::new(vec![budget()], window, sustain);
        let mut fired_at = None;
        let mut resolved_at = None;
        let mut t = 1_000.0;
        while t <= 200_000.0 {
            for ev in e.evaluate(&src, t) {
                match ev {
                    Event::Fired(_) => fired_at = Some(t),
                    Event::Resolved(_) => resolved_at = Some(t),
                }
            }
            t += 1_000.0;
        }
        // p95 over [t-10s, t) first exceeds 500 once > 5% of the window is slow: at t = 61 s
        // (10 slow of 100 in the window).
        let a = &e.alerts[0];
        assert_eq!(a.breach_since_ms, 61_000.0);
        assert_eq!(
            fired_at,
            Some(91_000.0),
            "fires when the breach has lasted exactly 30 s"
        );
        assert_eq!(a.fired_at_ms, 91_000.0);
        // Recovery: p95 is the 95th of 100 sorted values, healthy when ≤ 5 are slow: the window
        // [t−10 s, t) holds (130 s − t)/100 ms slow ones, ≤ 5 from t = 129.5 s → tick 130 s.
        assert_eq!(resolved_at, Some(130_000.0));
        assert_eq!(a.state, "resolved");
        assert_eq!(a.peak, 900.0);
        let g = a.grew_most.as_ref().unwrap();
        assert_eq!(
            g.stage, "server:prefill",
            "the server stage explains the ttft growth"
        );
        assert_eq!((g.before, g.during), (Some(20.0), 700.0));
        assert_eq!(e.alerts.len(), 1);
    }

    /// A breach shorter than `sustain` never fires, and a dip resets the clock.
    #[test]
    fn short_or_interrupted_breaches_do_not_fire() {
        let (window, sustain) = (5_000.0, 20_000.0);
        let mut src = Mem(Vec::new());
        // Each slow phase breaches for its length + ~the window (< sustain), with a full
        // recovery between them: the clock must restart, not accumulate.
        traffic(&mut src, 0.0, 12_000.0, 900.0, 0.0);
        traffic(&mut src, 12_000.0, 22_000.0, 10.0, 0.0);
        traffic(&mut src, 22_000.0, 34_000.0, 900.0, 0.0);
        traffic(&mut src, 34_000.0, 60_000.0, 10.0, 0.0);
        let mut e = Engine::new(vec![budget()], window, sustain);
        let mut t = 0.0;
        while t <= 60_000.0 {
            assert!(e.evaluate(&src, t).is_empty(), "no event at {t}");
            t += 500.0;
        }
        assert!(e.alerts.is_empty());
    }

    /// No records in the window: state held (neither breach nor recovery).
    #[test]
    fn silence_holds_state() {
        let mut src = Mem(Vec::new());
        traffic(&mut src, 0.0, 10_000.0, 900.0, 0.0);
        let mut e = Engine::new(vec![budget()], 1_000.0, 5_000.0);
        let mut events = Vec::new();
        let mut t = 100.0;
        while t <= 30_000.0 {
            events.extend(e.evaluate(&src, t));
            t += 100.0;
        }
        assert_eq!(events, vec![Event::Fired(1)]);
        assert_eq!(
            e.firing().count(),
            1,
            "still firing through the silence after 10 s"
        );
    }
}
