//! Budgets (`budgets: { ttft: 800, 'itl.p95': 150 }`): the record metrics a budget may name,
//! read from a timeline. A record lists the budgets its values exceed in `budgetBreaches`.

use crate::core::record::seen::Seen;
use crate::core::request::timeline::Timeline;

/// Metrics a budget may name (`budgets: { ttft: 800, 'itl.p95': 150 }`), resolved against a
/// timeline. Unknown names resolve to `None` and never breach.
pub fn metric_value(tl: &Timeline, seen: &Seen<'_>, name: &str) -> Option<f64> {
    let (group, stat) = match name.split_once('.') {
        Some((g, s)) => (g, Some(s)),
        None => (name, None),
    };
    match (group, stat) {
        ("ttft", None) => tl.ttft(),
        ("total", None) => tl.total(),
        ("tpot", None) => tl.tpot(),
        ("ttfp", None) => seen.ttfp(),
        ("perceivedTtft", None) => seen.perceived_ttft(),
        ("perceivedTotal", None) => seen.perceived_total(),
        ("renderDelay", Some(s)) => seen.paint.render_delay.and_then(|d| match s {
            "first" => Some(d.first),
            "p50" => Some(d.p50),
            "p95" => Some(d.p95),
            "max" => Some(d.max),
            _ => None,
        }),
        ("itl", Some(s)) => match s {
            "p50" => tl.itl.quantile(0.5),
            "p95" => tl.itl.quantile(0.95),
            "p99" => tl.itl.quantile(0.99),
            "max" => tl.itl.max(),
            _ => None,
        },
        ("stalls", Some(s)) => {
            let st = seen.stalls();
            match s {
                "count" => Some(st.count as f64),
                "totalMs" => Some(st.total_ms),
                "longestMs" => Some(st.longest_ms),
                _ => None,
            }
        }
        _ => None,
    }
}
