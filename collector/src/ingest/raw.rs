//! What is kept of a record as received (the `raw` column).
//!
//! The typed columns hold what queries use; `raw` keeps the rest of the record (trace ids,
//! stall list, correlation values, user marks) for later analysis. A beacon may carry up to
//! 64 KiB of anything, so `raw` is bounded: the record's fields known to the wire contract
//! (DESIGN.md §3, js/index.d.ts) come first, then fields this collector does not know (a newer
//! SDK's) up to `UNKNOWN_MAX` bytes in all, everything within `RAW_MAX` bytes. Fields left out
//! are listed by name in `"_cut"` (names too long to be field names are not listed).

use serde_json::{Map, Value};

/// The SDK's record size is ~1.4 KB; 8 KiB leaves room for long stall lists and marks.
pub const RAW_MAX: usize = 8 * 1024;
pub const UNKNOWN_MAX: usize = 1024;
const CUT_NAMES: usize = 16;
const CUT_NAME_MAX: usize = 64;

/// Record fields of the v1 contract, most useful first (kept first when space runs out).
pub const KNOWN_ORDER: &[&str] = &[
    "id",
    "traceId",
    "spanId",
    "traceSource",
    "sampled",
    "url",
    "method",
    "transport",
    "reconnectOf",
    "status",
    "outcome",
    "format",
    "model",
    "modelSource",
    "provider",
    "understood",
    "unseen",
    "complete",
    "startEpochMs",
    "marks",
    "ttft",
    "ttfp",
    "perceivedTtft",
    "total",
    "perceivedTotal",
    "renderDelay",
    "itl",
    "tpot",
    "stalls",
    "buffered",
    "paintErrorMs",
    "paintSource",
    "outputTokens",
    "outputTokensSource",
    "chars",
    "reasoningChars",
    "contentEvents",
    "chunks",
    "bytes",
    "delivery",
    "upstreamBuffered",
    "upstreamHints",
    "hidden",
    "serverTiming",
    "ttftSplit",
    "userMarks",
    "userStages",
    "budgetBreaches",
    "correlation",
    "stallList",
];

fn is_known(k: &str) -> bool {
    KNOWN.binary_search(&k).is_ok()
}

/// The same names, sorted (for `binary_search`).
const KNOWN: &[&str] = &[
    "budgetBreaches",
    "buffered",
    "bytes",
    "chars",
    "chunks",
    "complete",
    "contentEvents",
    "correlation",
    "delivery",
    "format",
    "hidden",
    "id",
    "itl",
    "marks",
    "method",
    "model",
    "modelSource",
    "outcome",
    "outputTokens",
    "outputTokensSource",
    "paintErrorMs",
    "paintSource",
    "perceivedTotal",
    "perceivedTtft",
    "provider",
    "reasoningChars",
    "reconnectOf",
    "renderDelay",
    "sampled",
    "serverTiming",
    "spanId",
    "stallList",
    "stalls",
    "startEpochMs",
    "status",
    "total",
    "tpot",
    "traceId",
    "traceSource",
    "transport",
    "ttfp",
    "ttft",
    "ttftSplit",
    "understood",
    "unseen",
    "upstreamBuffered",
    "upstreamHints",
    "url",
    "userMarks",
    "userStages",
];

/// The bounded JSON text of a record object.
pub fn bounded(o: &Map<String, Value>) -> String {
    // The common case, a record from the SDK: every field known and the whole within bounds.
    if o.keys().all(|k| is_known(k)) {
        if let Ok(all) = serde_json::to_string(o) {
            if all.len() <= RAW_MAX {
                return all;
            }
        }
    }
    // Known fields first (in KNOWN_ORDER: most useful first), then unknown ones.
    let mut out = String::from("{");
    let mut cut: Vec<&str> = Vec::new();
    let mut unknown = 0;
    let known = KNOWN_ORDER.iter().filter_map(|k| o.get_key_value(*k));
    let rest = o.iter().filter(|(k, _)| !is_known(k));
    for (is_known, (k, v)) in known.map(|kv| (true, kv)).chain(rest.map(|kv| (false, kv))) {
        let member = format!("{}:{}", Value::String(k.clone()), v);
        // Room for the comma, the closing brace and the `_cut` list.
        let fits = out.len() + member.len() + 2 + 64 + CUT_NAMES * (CUT_NAME_MAX + 3) <= RAW_MAX;
        let allowed = is_known || unknown + member.len() <= UNKNOWN_MAX;
        if fits && allowed {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(&member);
            if !is_known {
                unknown += member.len();
            }
        } else if cut.len() < CUT_NAMES && k.len() <= CUT_NAME_MAX {
            cut.push(k);
        }
    }
    if !cut.is_empty() {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str("\"_cut\":");
        out.push_str(&Value::from(cut).to_string());
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_sorted_list_is_the_ordered_one() {
        let mut a = KNOWN_ORDER.to_vec();
        a.sort_unstable();
        assert_eq!(a, KNOWN);
    }

    #[test]
    fn known_fields_are_kept_unknown_ones_bounded() {
        let small = json!({"id": "a", "traceId": "t", "marks": {"start": 0}, "newField": [1, 2]});
        let raw: Value = serde_json::from_str(&bounded(&obj(small.clone()))).unwrap();
        assert_eq!(raw, small, "a normal record is kept whole");

        let mut big =
            obj(json!({"id": "a", "traceId": "t", "correlation": {"x-request-id": "r1"}}));
        for i in 0..100 {
            big.insert(format!("junk{i:03}"), json!("x".repeat(600)));
        }
        big.insert("k".repeat(5000), json!(1));
        let text = bounded(&big);
        assert!(text.len() <= RAW_MAX, "{}", text.len());
        let raw: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (raw["id"].as_str(), raw["traceId"].as_str()),
            (Some("a"), Some("t"))
        );
        assert_eq!(raw["correlation"]["x-request-id"], "r1");
        let unknown: usize = raw
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| !is_known(k) && *k != "_cut")
            .map(|(k, v)| k.len() + v.to_string().len() + 3)
            .sum();
        assert!(unknown <= UNKNOWN_MAX, "{unknown}");
        let cut = raw["_cut"].as_array().unwrap();
        assert_eq!(cut.len(), CUT_NAMES);
        assert!(cut
            .iter()
            .all(|n| n.as_str().unwrap().len() <= CUT_NAME_MAX));

        // A known field stuffed past the bound is cut too, the rest of the record kept.
        let stuffed = obj(json!({"id": "a", "traceId": "t", "stallList": ["y".repeat(60_000)]}));
        let raw: Value = serde_json::from_str(&bounded(&stuffed)).unwrap();
        assert_eq!(
            raw,
            json!({"id": "a", "traceId": "t", "_cut": ["stallList"]})
        );
    }
}
