//! SDK configuration as the core sees it: already validated plain values (the JS facade owns
//! option parsing and warnings). It crosses the wasm boundary once, as one JSON object read
//! by `Config::from_json` with the core's own JSON reader and decimal parser (both already in
//! the wasm for the streams and Server-Timing).

use alloc::{string::String, vec::Vec};
use crate::core::stalls::DEFAULT_STALL_THRESHOLD_MS;
use crate::core::util::decimal::parse_decimal;
use crate::core::util::json_read::{self, Json};
use crate::core::util::text::{name, truncate};
use crate::core::util::url::{contains, origin_of, push_route, split};

/// Recorded URLs and pages are cut here: the collector refuses longer strings (2048 bytes),
/// and a beacon with one such record would be refused whole.
pub const MAX_URL: usize = 1024;

/// A per-metric budget: `metric` is a record key, or `group.stat` such as `itl.p95`.
#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    pub metric: String,
    pub limit: f64,
}

/// The app's word on which model and provider answer requests to some URLs (the `models`
/// option): for streams that name no model (AI SDK UI, text, the app's own formats) and for
/// the app's own backend, whose provider no host rule can know.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRule {
    /// A substring of the request's URL (absolute; as `urlTemplates` strings match).
    pub matches: String,
    /// Bounded like a streamed model name (`util::text::name`).
    pub model: Option<String>,
    pub provider: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Config {
    /// A gap longer than this between visible progress is a stall (see `stalls.rs`).
    pub stall_threshold_ms: f64,
    /// `location.origin` of the page, e.g. `https://chat.example.com`.
    pub page_origin: String,
    /// Cross-origin `traceparent` allowlist: origins (`https://api.example.com`) or URL
    /// prefixes (`https://api.example.com/v1/`).
    pub propagate: Vec<String>,
    pub budgets: Vec<Budget>,
    /// Strip `?query` and `#fragment` from recorded URLs (they often carry user data).
    pub strip_query: bool,
    /// Replace id-like path segments of recorded URLs and pages by `:id` (util/url.rs).
    pub template_ids: bool,
    /// The session's sampling decision; unsampled sessions propagate flags `00` and record
    /// nothing.
    pub sampled: bool,
    /// Response headers whose values the record carries in `correlation` (lower-case names).
    pub correlation: Vec<String>,
    /// A collector is configured: records (and `partial` snapshots) also wait in
    /// `Session::take_records` for the facade's beacon queue (js/deliver/queue.js); without
    /// one they go to `onRecord` only.
    pub collect: bool,
    /// `models`: the first rule whose `matches` is in the URL applies.
    pub models: Vec<ModelRule>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            stall_threshold_ms: DEFAULT_STALL_THRESHOLD_MS,
            page_origin: String::new(),
            propagate: Vec::new(),
            budgets: Vec::new(),
            strip_query: true,
            template_ids: true,
            sampled: true,
            correlation: Vec::new(),
            collect: false,
            models: Vec::new(),
        }
    }
}

/// A JSON string's unescaped text ("" for anything else).
fn text(v: Json<'_>) -> String {
    v.chars().collect()
}

/// A JSON number (`None` for anything else).
fn number(v: Json<'_>) -> Option<f64> {
    parse_decimal(v.text().as_bytes())
}

fn texts(v: Option<Json<'_>>) -> Vec<String> {
    v.map(|v| v.items().map(text).collect()).unwrap_or_default()
}

impl Config {
    /// The configuration js/core.js hands over, as one JSON object:
    /// `{"pageOrigin": "https://chat.example", "propagate": ["https://api.example/v1/"],
    /// "correlation": ["x-request-id"], "stallThresholdMs": 250, "stripQuery": true,
    /// "templateIds": true, "sampled": true, "budgets": [["ttft", 800], ["itl.p95", 150]],
    /// "collect": true, "models": [["/api/chat", "gpt-4o", "openai"], ["https://x.example/", null,
    /// "anthropic"]]}`. A member that is missing or of another type keeps its default
    /// (`collect` false: no collector).
    pub fn from_json(json: &str) -> Config {
        let mut cfg = Config::default();
        let Some(root) = json_read::parse(json) else { return cfg };
        let [origin, propagate, correlation, threshold, strip, template_ids, sampled, budgets, collect, models] = root.fields([
            "pageOrigin",
            "propagate",
            "correlation",
            "stallThresholdMs",
            "stripQuery",
            "templateIds",
            "sampled",
            "budgets",
            "collect",
            "models",
        ]);
        cfg.page_origin = origin.map(text).unwrap_or_default();
        cfg.propagate = texts(propagate);
        cfg.correlation = texts(correlation);
        if let Some(ms) = threshold.and_then(number) {
            cfg.stall_threshold_ms = ms;
        }
        if let Some(b) = strip.and_then(Json::as_bool) {
            cfg.strip_query = b;
        }
        if let Some(b) = template_ids.and_then(Json::as_bool) {
            cfg.template_ids = b;
        }
        if let Some(b) = sampled.and_then(Json::as_bool) {
            cfg.sampled = b;
        }
        for pair in budgets.into_iter().flat_map(Json::items) {
            let mut it = pair.items();
            if let (Some(metric), Some(limit)) = (it.next(), it.next().and_then(number)) {
                cfg.budgets.push(Budget { metric: text(metric), limit });
            }
        }
        if let Some(b) = collect.and_then(Json::as_bool) {
            cfg.collect = b;
        }
        for rule in models.into_iter().flat_map(Json::items) {
            let mut it = rule.items();
            let (Some(matches), model, provider) = (it.next().map(text).filter(|m| !m.is_empty()), it.next(), it.next()) else { continue };
            let bounded = |v: Option<Json<'_>>| v.and_then(|v| name(v.chars()));
            cfg.models.push(ModelRule { matches, model: bounded(model), provider: bounded(provider) });
        }
        cfg
    }

    /// The app's `models` rule for a request to `url` (absolute), if one matches.
    pub fn model_rule(&self, url: &str) -> Option<&ModelRule> {
        self.models.iter().find(|r| contains(url, &r.matches))
    }

    /// A request's `url` as its record carries it: the origin, the path as `push_route` has it
    /// (`template`: the app's route template, when one of its `urlTemplates` matched), and
    /// the query and fragment unless stripped.
    pub fn record_url(&self, url: &str, template: Option<&str>) -> String {
        let (origin, path, rest) = split(url);
        let mut out = String::from(origin);
        push_route(&mut out, path, template, self.template_ids);
        if !self.strip_query {
            out.push_str(rest);
        }
        String::from(truncate(&out, MAX_URL))
    }

    /// The beacon's `page`: the page's path (`location.pathname`), as `record_url` has it.
    pub fn page(&self, path: &str, template: Option<&str>) -> String {
        let mut out = String::new();
        push_route(&mut out, path, template, self.template_ids);
        String::from(truncate(&out, MAX_URL))
    }

    /// Whether a `traceparent` may be added to a request for `url` (absolute). Same origin
    /// always; other origins only when allow-listed, because a non-safelisted header makes
    /// the request CORS-preflighted (Fetch §4.8), which can break the app.
    pub fn may_propagate(&self, url: &str) -> bool {
        let origin = origin_of(url);
        if origin.is_empty() {
            return false;
        }
        if origin.eq_ignore_ascii_case(&self.page_origin) {
            return true;
        }
        self.propagate.iter().any(|entry| {
            let entry = entry.trim();
            let entry_origin = origin_of(entry);
            if entry_origin.is_empty() {
                return false;
            }
            // `get` instead of indexing: no panic path (keeps core::fmt out of the wasm).
            let entry_path = entry.get(entry_origin.len()..).unwrap_or("");
            let url_path = url.get(origin.len()..).unwrap_or("");
            // An origin matches by equality; a path prefix also compares the path.
            entry_origin.eq_ignore_ascii_case(origin) && (entry_path == "/" || url_path.starts_with(entry_path))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(allow: &[&str]) -> Config {
        Config {
            page_origin: "https://chat.example.com".into(),
            propagate: allow.iter().map(|s| s.to_string()).collect(),
            ..Config::default()
        }
    }

    #[test]
    fn same_origin_always_propagates() {
        let c = cfg(&[]);
        assert!(c.may_propagate("https://chat.example.com/v1/chat"));
        assert!(!c.may_propagate("https://api.example.com/v1/chat"));
        assert!(!c.may_propagate("http://chat.example.com/v1/chat"), "scheme is part of the origin");
        assert!(!c.may_propagate("https://chat.example.com:8443/x"), "port is part of the origin");
        assert!(!c.may_propagate("data:text/plain,hi"));
        assert!(!c.may_propagate(""));
    }

    #[test]
    fn allowlist_by_origin_is_exact() {
        let c = cfg(&["https://api.example.com"]);
        assert!(c.may_propagate("https://api.example.com/v1/chat"));
        assert!(c.may_propagate("https://api.example.com"));
        assert!(!c.may_propagate("https://api.example.com.evil.test/v1"));
        assert!(!c.may_propagate("https://api.example.community/"));
        let c = cfg(&["https://api.example.com/"]);
        assert!(c.may_propagate("https://api.example.com/v1/chat"));
    }

    #[test]
    fn from_one_json_object() {
        let c = Config::from_json(
            r#"{"pageOrigin":"https://chat.example","propagate":["https://api.example.com","https://x.example/v1/"],
               "correlation":["x-request-id","openai-processing-ms"],"stallThresholdMs":120.5,"stripQuery":false,
               "sampled":false,"budgets":[["ttft",800],["itl.p95",1.5e2]],"collect":true}"#,
        );
        assert_eq!(c.page_origin, "https://chat.example");
        assert_eq!(c.propagate, ["https://api.example.com", "https://x.example/v1/"]);
        assert_eq!(c.correlation, ["x-request-id", "openai-processing-ms"]);
        assert_eq!((c.stall_threshold_ms, c.strip_query, c.sampled), (120.5, false, false));
        let budgets: Vec<(&str, f64)> = c.budgets.iter().map(|b| (b.metric.as_str(), b.limit)).collect();
        assert_eq!(budgets, [("ttft", 800.0), ("itl.p95", 150.0)]);
        assert!(c.collect);
        // Missing or mistyped members keep their defaults; no collector without `collect`.
        let d = Config::from_json(r#"{"pageOrigin":"https://a.example","stallThresholdMs":null,"sampled":1,"collect":null}"#);
        assert_eq!((d.stall_threshold_ms, d.sampled, d.strip_query), (250.0, true, true));
        assert!(!d.collect && d.budgets.is_empty() && d.propagate.is_empty());
        assert_eq!(Config::from_json("not json").page_origin, "");
        assert!(d.template_ids, "ids templated by default");
        let e = Config::from_json(r#"{"templateIds":false,"collect":1}"#);
        assert!(!e.template_ids && !e.collect, "mistyped: the default");
        assert!(d.models.is_empty());
    }

    #[test]
    fn model_rules() {
        let c = Config::from_json(
            r#"{"models":[["/api/chat","gpt-4o","openai"],["https://llm.internal/",null,"my \"llm\""],["", "x", "y"],["/only-model","claude-sonnet-4-5"],[],"junk",["/x","   ",""]]}"#,
        );
        let rule = |m: &str, model: Option<&str>, provider: Option<&str>| ModelRule { matches: m.into(), model: model.map(Into::into), provider: provider.map(Into::into) };
        assert_eq!(
            c.models,
            [
                rule("/api/chat", Some("gpt-4o"), Some("openai")),
                rule("https://llm.internal/", None, Some("my__llm_")),
                rule("/only-model", Some("claude-sonnet-4-5"), None),
                rule("/x", None, None),
            ],
            "an empty `match` would match everything: dropped; names bounded like streamed ones"
        );
        assert_eq!(c.model_rule("https://chat.example/api/chat").map(|r| r.model.as_deref()), Some(Some("gpt-4o")));
        assert_eq!(c.model_rule("https://llm.internal/v1/chat").and_then(|r| r.provider.as_deref()), Some("my__llm_"));
        assert!(c.model_rule("https://chat.example/api/other").is_none());
    }

    #[test]
    fn recorded_urls_and_pages() {
        let uuid = "3f6c1e2a-9b4d-4c8e-a1f0-7d2b5e9c4a61";
        let api = ["https://api.example.com/v1/threads/thread_9QxZr4kLmN2pT7vB1cD5eF8g/chat/completions?user=", uuid, "#x"].concat();
        let page = ["/c/", uuid].concat();
        let c = Config::default();
        assert_eq!(c.record_url(&api, None), "https://api.example.com/v1/threads/:id/chat/completions");
        assert_eq!(c.record_url(&api, Some("/v1/threads/:thread/chat/completions")), "https://api.example.com/v1/threads/:thread/chat/completions");
        assert_eq!(c.page(&page, None), "/c/:id");
        assert_eq!(c.page(&page, Some("/c/:conversation")), "/c/:conversation");
        // `stripQuery: false` keeps the query as it is (the app asked for it).
        let keep = Config { strip_query: false, ..Config::default() };
        assert!(keep.record_url(&api, None).ends_with("/v1/threads/:id/chat/completions?user=3f6c1e2a-9b4d-4c8e-a1f0-7d2b5e9c4a61#x"));
        // `templateIds: false`: paths as they are, the app's templates still apply.
        let raw = Config { template_ids: false, ..Config::default() };
        assert_eq!(raw.page(&page, None), ["/c/", uuid].concat());
        assert_eq!(raw.page(&page, Some("/c/:id")), "/c/:id");
        // Bounded: the collector refuses longer strings.
        let long = ["https://a.example/", &"word/".repeat(400)].concat();
        assert_eq!(c.record_url(&long, None).len(), MAX_URL);
    }

    #[test]
    fn allowlist_by_prefix() {
        let c = cfg(&["https://api.example.com/v1/"]);
        assert!(c.may_propagate("https://api.example.com/v1/chat"));
        assert!(!c.may_propagate("https://api.example.com/v2/chat"));
        assert!(!c.may_propagate("https://api.example.com.evil.test/v1/chat"));
    }
}
