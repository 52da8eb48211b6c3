//! Scenarios: presets named by the request's `model`, overridden by parameters, and the content
//! schedule they imply.
//!
//! Owner of: "what should happen when" for one request. Pure (no I/O, no clock), so the
//! schedule can be unit-tested and the ground truth can be compared with it.
//!
//! Precedence, lowest first: the preset's values, then parameters written after `?` in the
//! model name itself (`"stall?stall_ms=900"`, handy for clients such as the `openai` npm package
//! that cannot add a query string per request), then the URL query.

use crate::formats::Format;

/// Upper bounds that keep every loop and buffer bounded whatever a test asks for.
pub const MAX_TOKENS: u64 = 1_000_000;
pub const MAX_MS: f64 = 600_000.0;
pub const MAX_STALLS: usize = 1_000;
/// The largest `proxy_buffer` (bytes held before a write).
pub const MAX_PROXY_BUFFER: u64 = 16 << 20;
/// The longest `served_model` (bytes): room for the SDK's bound tests, far past any real id.
pub const MAX_SERVED_MODEL: usize = 64 << 10;

#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The preset that was applied (`default` for unknown model names).
    pub preset: String,
    /// Delay from generation start (slot acquired) to the first content token.
    pub prefill_ms: f64,
    /// Nominal gap between consecutive content tokens.
    pub gap_ms: f64,
    /// Each token after the first moves by a uniform offset in [-jitter_ms, +jitter_ms] from its
    /// nominal time (not accumulated: there is no drift), clamped to keep order.
    pub jitter_ms: f64,
    pub seed: u64,
    /// Number of content tokens.
    pub tokens: u64,
    /// The answer starts at this token of the text (`from=`): two streams that say different
    /// things (the auto-mode tests' concurrent answers).
    pub from: u64,
    /// Which answer text (`answer=`, one of `answer::ANSWERS`): markdown-heavy answers opening
    /// with a list, a fenced code block naming its language, a heading and a numbered list.
    pub answer: &'static str,
    /// Content tokens per write (event). An event is sent when its last token is due.
    pub per_chunk: u64,
    /// (token index k, extra ms before token k); sorted by k. Delays add up and shift every
    /// later token.
    pub stalls: Vec<(u64, f64)>,
    /// Headers only when the first content is ready (servers that buffer through prefill).
    pub headers_late: bool,
    /// Force the usage chunk on/off (OpenAI chat); `None` = as the request body says.
    pub usage: Option<bool>,
    /// Reply with this HTTP status and a JSON error body instead of a stream.
    pub status: Option<u16>,
    /// Drop the connection abruptly before the write carrying token k.
    pub fail_at: Option<u64>,
    /// In place of the write carrying token k, the format's in-band error event; then nothing
    /// more until the client goes away (as a provider's overload mid-answer: the official
    /// clients abort the request when they see it).
    pub error_at: Option<u64>,
    /// Which in-band error: `error` (every SSE format's error event, NDJSON's `{"error"}`), or
    /// `failed` (OpenAI Responses' `response.failed`).
    pub error_failed: bool,
    pub format: Format,
    /// Write each event in two writes (cut inside a multi-byte character when there is one);
    /// the first half goes `split_ms` before the event's time, the second exactly on time.
    pub split: bool,
    pub split_ms: f64,
    /// SSE `: ping` comments at the midpoint of every gap between writes...
    pub pings: bool,
    /// ...or, when set, every `ping_ms` during any gap (keep-alive style).
    pub ping_ms: Option<f64>,
    /// SSE `id:` lines.
    pub ids: bool,
    /// Also send the legacy `traceresponse` header.
    pub traceresponse: bool,
    /// Send `Server-Timing` (default on).
    pub server_timing: bool,
    /// Send CORS headers / answer preflights (default on); `cors=0` to test CORS failures.
    pub cors: bool,
    /// Content events per write (default 1): a server that writes several events at once
    /// (an event loop catching up, write batching). The write goes out when its last event
    /// is due.
    pub events_per_write: u64,
    /// Imitate a buffering proxy in front of the server (the demo's "behind a buffering
    /// proxy"; the tests use a real nginx): everything after the headers is held until this
    /// many bytes are waiting, or the stream ends, then sent in one write.
    pub proxy_buffer: Option<u64>,
    /// Send `X-Accel-Buffering: <value>` (`no` asks nginx not to buffer this response).
    pub accel_buffering: Option<bool>,
    /// The model the stream names (`served_model=`), where the format carries one; default:
    /// the requested model as asked (without `?parameters`), as OpenAI-compatible servers echo
    /// it. A provider may answer under another name than the one asked (`gpt-4o` →
    /// `gpt-4o-2024-08-06`); the tests also send odd and oversized names through it.
    pub served_model: Option<String>,
}

impl Scenario {
    /// Preset values. Unknown names (e.g. `gpt-4o-mini`) give `default`, so unmodified clients
    /// work with any model name.
    pub fn preset(name: &str) -> Scenario {
        let mut s = Scenario {
            preset: "default".into(),
            prefill_ms: 250.0,
            gap_ms: 20.0,
            jitter_ms: 0.0,
            seed: 1,
            tokens: 120,
            from: 0,
            answer: crate::answer::ANSWER,
            per_chunk: 1,
            stalls: Vec::new(),
            headers_late: false,
            usage: None,
            status: None,
            fail_at: None,
            error_at: None,
            error_failed: false,
            format: Format::OpenAiChat,
            split: false,
            split_ms: 2.0,
            pings: false,
            ping_ms: None,
            ids: false,
            traceresponse: false,
            server_timing: true,
            cors: true,
            events_per_write: 1,
            proxy_buffer: None,
            accel_buffering: None,
            served_model: None,
        };
        match name {
            "fast" => (s.prefill_ms, s.gap_ms, s.tokens) = (20.0, 5.0, 60),
            "instant" => (s.prefill_ms, s.gap_ms, s.tokens) = (0.0, 0.0, 60),
            "slow" => (s.prefill_ms, s.gap_ms, s.tokens) = (500.0, 80.0, 60),
            "slow-prefill" => (s.prefill_ms, s.gap_ms, s.tokens) = (2000.0, 20.0, 60),
            "late-headers" => {
                (s.prefill_ms, s.gap_ms, s.tokens) = (800.0, 20.0, 60);
                s.headers_late = true;
            }
            "stall" => {
                (s.prefill_ms, s.gap_ms, s.tokens) = (200.0, 20.0, 80);
                s.stalls = vec![(30, 1000.0)];
            }
            "jitter" => {
                (s.prefill_ms, s.gap_ms, s.jitter_ms, s.seed, s.tokens) = (200.0, 30.0, 20.0, 7, 80)
            }
            "burst" => (s.prefill_ms, s.gap_ms, s.per_chunk, s.tokens) = (200.0, 12.5, 8, 96),
            _ => return s,
        }
        s.preset = name.to_string();
        s
    }

    /// Preset from a model name, with `?k=v&...` in the name applied on top.
    pub fn from_model(model: &str) -> Result<Scenario, String> {
        let (name, q) = model.split_once('?').unwrap_or((model, ""));
        let mut s = Scenario::preset(name);
        s.apply(&parse_query(q))?;
        Ok(s)
    }

    /// Applies parameter overrides. Unknown keys are ignored (they belong to someone else:
    /// `test_id`, `coi`, `model`, ...); bad values are errors so that a test's typo is loud.
    pub fn apply(&mut self, params: &[(String, String)]) -> Result<(), String> {
        let mut stall_at: Vec<u64> = Vec::new();
        let mut stall_ms: Vec<f64> = Vec::new();
        for (k, v) in params {
            match k.as_str() {
                "prefill_ms" => self.prefill_ms = ms(k, v)?,
                "gap_ms" => self.gap_ms = ms(k, v)?,
                "jitter_ms" => self.jitter_ms = ms(k, v)?,
                "seed" => self.seed = int(k, v, u64::MAX)?,
                "tokens" => self.tokens = int(k, v, MAX_TOKENS)?,
                "from" => self.from = int(k, v, MAX_TOKENS)?,
                "answer" => {
                    self.answer = crate::answer::named(v).ok_or_else(|| format!("unknown answer {v:?}"))?
                }
                "per_chunk" => self.per_chunk = int(k, v, MAX_TOKENS)?.max(1),
                "stall_at" => {
                    for p in v.split(',').filter(|p| !p.is_empty()) {
                        stall_at.push(int(k, p, MAX_TOKENS)?);
                    }
                }
                "stall_ms" => {
                    for p in v.split(',').filter(|p| !p.is_empty()) {
                        stall_ms.push(ms(k, p)?);
                    }
                }
                "headers" => {
                    self.headers_late = match v.as_str() {
                        "early" => false,
                        "late" => true,
                        _ => return Err(format!("headers must be early or late, not {v:?}")),
                    }
                }
                "usage" => self.usage = Some(flag(k, v)?),
                "status" => {
                    let n = int(k, v, 599)?;
                    if n < 100 {
                        return Err(format!("status {n} is not an HTTP status"));
                    }
                    self.status = (n != 200).then_some(n as u16);
                }
                "fail_at" => self.fail_at = Some(int(k, v, MAX_TOKENS)?),
                "error_at" => self.error_at = Some(int(k, v, MAX_TOKENS)?),
                "error_kind" => {
                    self.error_failed = match v.as_str() {
                        "error" => false,
                        "failed" => true,
                        _ => return Err(format!("error_kind must be error or failed, not {v:?}")),
                    }
                }
                "format" => {
                    self.format = Format::parse(v).ok_or_else(|| format!("unknown format {v:?}"))?
                }
                "split" => self.split = flag(k, v)?,
                "split_ms" => self.split_ms = ms(k, v)?,
                "pings" => self.pings = flag(k, v)?,
                "ping_ms" => {
                    let p = ms(k, v)?;
                    if p < 1.0 {
                        return Err("ping_ms must be at least 1".into());
                    }
                    self.ping_ms = Some(p);
                    self.pings = true;
                }
                "ids" => self.ids = flag(k, v)?,
                "traceresponse" => self.traceresponse = flag(k, v)?,
                "server_timing" => self.server_timing = flag(k, v)?,
                "cors" => self.cors = flag(k, v)?,
                "events_per_write" => self.events_per_write = int(k, v, MAX_TOKENS)?.max(1),
                "proxy_buffer" => {
                    let n = int(k, v, MAX_PROXY_BUFFER)?;
                    self.proxy_buffer = (n > 0).then_some(n);
                }
                "accel_buffering" => {
                    self.accel_buffering = match v.as_str() {
                        "no" => Some(false),
                        "yes" => Some(true),
                        _ => return Err(format!("accel_buffering must be no or yes, not {v:?}")),
                    }
                }
                "served_model" => {
                    if v.len() > MAX_SERVED_MODEL {
                        return Err(format!("served_model is longer than {MAX_SERVED_MODEL} bytes"));
                    }
                    self.served_model = Some(v.clone());
                }
                _ => {}
            }
        }
        if self.error_at.is_some() && self.format == Format::Text {
            return Err("format=text has no in-band error event (error_at)".into());
        }
        if self.error_failed && self.format != Format::OpenAiResponses {
            return Err("error_kind=failed is OpenAI Responses' response.failed".into());
        }
        if !stall_at.is_empty() || !stall_ms.is_empty() {
            if stall_at.is_empty() {
                // stall_ms alone re-times the preset's stalls.
                stall_at = self.stalls.iter().map(|s| s.0).collect();
            }
            if stall_ms.is_empty() {
                stall_ms = vec![self.stalls.first().map(|s| s.1).unwrap_or(1000.0)];
            }
            if stall_at.len() > MAX_STALLS {
                return Err(format!("at most {MAX_STALLS} stalls"));
            }
            // stall_ms values pair with stall_at in order; the last one repeats.
            let last = *stall_ms.last().unwrap();
            self.stalls = stall_at
                .iter()
                .enumerate()
                .map(|(i, &k)| (k, *stall_ms.get(i).unwrap_or(&last)))
                .collect();
            self.stalls.sort_by_key(|s| s.0);
        }
        Ok(())
    }

    /// Includes the usage chunk? (`usage=` wins over the request's `stream_options`.)
    pub fn include_usage(&self, requested: bool) -> bool {
        self.usage.unwrap_or(requested)
    }

    /// The content schedule, lazily (answers may be long).
    pub fn schedule(&self) -> Schedule<'_> {
        Schedule {
            sc: self,
            next_token: 0,
            rng: SplitMix64(self.seed),
            prev_ms: 0.0,
            stall_idx: 0,
            stall_sum: 0.0,
        }
    }

    /// When the last content token is due, in ms from generation start (0 tokens: prefill).
    pub fn total_ms(&self) -> f64 {
        self.schedule()
            .last()
            .map(|c| c.at_ms)
            .unwrap_or(self.prefill_ms)
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "preset": self.preset, "prefill_ms": self.prefill_ms, "gap_ms": self.gap_ms,
            "jitter_ms": self.jitter_ms, "seed": self.seed, "tokens": self.tokens, "per_chunk": self.per_chunk,
            "stalls": self.stalls.iter().map(|(k, ms)| serde_json::json!({"at": k, "ms": ms})).collect::<Vec<_>>(),
            "headers": if self.headers_late { "late" } else { "early" }, "usage": self.usage,
            "status": self.status, "fail_at": self.fail_at, "error_at": self.error_at,
            "error_kind": if self.error_failed { "failed" } else { "error" }, "format": self.format.name(), "split": self.split,
            "split_ms": self.split_ms, "pings": self.pings, "ping_ms": self.ping_ms, "ids": self.ids,
            "events_per_write": self.events_per_write, "proxy_buffer": self.proxy_buffer,
            "accel_buffering": self.accel_buffering.map(|b| if b { "yes" } else { "no" }),
            "served_model": self.served_model,
        })
    }
}

/// One content write of the schedule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Chunk {
    /// Index of the first content token in this write.
    pub first: u64,
    /// Number of content tokens in this write.
    pub count: u64,
    /// When it is due, ms from generation start: the time of its last token.
    pub at_ms: f64,
}

/// Iterator over content writes.
pub struct Schedule<'a> {
    sc: &'a Scenario,
    next_token: u64,
    rng: SplitMix64,
    prev_ms: f64,
    stall_idx: usize,
    stall_sum: f64,
}

impl Schedule<'_> {
    /// Due time of token `i` (must be called for i = 0, 1, 2, ... in order).
    fn token_ms(&mut self, i: u64) -> f64 {
        while self.stall_idx < self.sc.stalls.len() && self.sc.stalls[self.stall_idx].0 <= i {
            self.stall_sum += self.sc.stalls[self.stall_idx].1;
            self.stall_idx += 1;
        }
        let mut t = self.sc.prefill_ms + i as f64 * self.sc.gap_ms + self.stall_sum;
        if i > 0 && self.sc.jitter_ms > 0.0 {
            t += self.sc.jitter_ms * self.rng.uniform_pm1();
        }
        // Keep order (jitter may not reorder tokens) and never before prefill.
        let t = t.max(self.prev_ms).max(self.sc.prefill_ms);
        self.prev_ms = t;
        t
    }
}

impl Iterator for Schedule<'_> {
    type Item = Chunk;
    fn next(&mut self) -> Option<Chunk> {
        if self.next_token >= self.sc.tokens {
            return None;
        }
        let first = self.next_token;
        let count = self.sc.per_chunk.min(self.sc.tokens - first);
        let mut at = 0.0;
        for i in first..first + count {
            at = self.token_ms(i);
        }
        self.next_token += count;
        Some(Chunk {
            first,
            count,
            at_ms: at,
        })
    }
}

/// Small seeded PRNG (SplitMix64): deterministic jitter without a dependency.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    pub fn uniform_pm1(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// Parses `a=1&b=x%20y&b=2` into ordered pairs (repeats kept, `+` is a space).
pub fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

/// First value of `key` in parsed query pairs.
pub fn get<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn ms(k: &str, v: &str) -> Result<f64, String> {
    let x: f64 = v
        .trim()
        .parse()
        .map_err(|_| format!("{k}: not a number: {v:?}"))?;
    if !(0.0..=MAX_MS).contains(&x) {
        return Err(format!("{k}: {x} is outside 0..={MAX_MS}"));
    }
    Ok(x)
}

fn int(k: &str, v: &str, max: u64) -> Result<u64, String> {
    let x: u64 = v
        .trim()
        .parse()
        .map_err(|_| format!("{k}: not a non-negative integer: {v:?}"))?;
    if x > max {
        return Err(format!("{k}: {x} is above {max}"));
    }
    Ok(x)
}

fn flag(k: &str, v: &str) -> Result<bool, String> {
    match v {
        "1" | "true" | "yes" | "on" | "" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("{k}: expected 0 or 1, not {v:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(model: &str, q: &str) -> Scenario {
        let mut s = Scenario::from_model(model).unwrap();
        s.apply(&parse_query(q)).unwrap();
        s
    }

    #[test]
    fn presets_and_unknown_models() {
        assert_eq!(Scenario::preset("gpt-4o-mini").preset, "default");
        assert_eq!(Scenario::preset("gpt-4o-mini"), Scenario::preset("default"));
        let s = Scenario::preset("stall");
        assert_eq!(s.stalls, vec![(30, 1000.0)]);
        assert!(Scenario::preset("late-headers").headers_late);
        assert_eq!(Scenario::preset("burst").per_chunk, 8);
    }

    #[test]
    fn overrides_and_precedence() {
        let s = sc(
            "fast?gap_ms=7&tokens=3",
            "tokens=5&headers=late&format=anthropic&usage=0&split=1&fail_at=2",
        );
        assert_eq!(s.preset, "fast");
        assert_eq!((s.prefill_ms, s.gap_ms, s.tokens), (20.0, 7.0, 5));
        assert!(s.headers_late && s.split);
        assert_eq!(s.format, Format::Anthropic);
        assert_eq!(s.usage, Some(false));
        assert_eq!(s.fail_at, Some(2));
        assert!(!s.include_usage(true));
        assert!(sc("default", "").include_usage(true));
    }

    #[test]
    fn stalls_repeat_or_comma_separated() {
        let s = sc("default", "stall_at=10,5&stall_at=20&stall_ms=100,200");
        assert_eq!(s.stalls, vec![(5, 200.0), (10, 100.0), (20, 200.0)]);
        let s = sc("stall", "stall_ms=300");
        assert_eq!(s.stalls, vec![(30, 300.0)]);
        let s = sc("default", "stall_at=3");
        assert_eq!(s.stalls, vec![(3, 1000.0)]);
    }

    #[test]
    fn bad_values_are_errors() {
        let mut s = Scenario::preset("default");
        for q in [
            "gap_ms=abc",
            "tokens=-1",
            "headers=middle",
            "format=xml",
            "prefill_ms=1e9",
            "status=42",
            "split=maybe",
            "answer=poem",
        ] {
            assert!(s.apply(&parse_query(q)).is_err(), "{q}");
        }
        assert!(s.apply(&parse_query("unknown=1&test_id=x")).is_ok());
        assert!(sc("default", "status=200").status.is_none());
        assert_eq!(sc("default", "status=503").status, Some(503));
        assert!(sc("default", "answer=code").answer.starts_with("```js\n"));
        assert_eq!(sc("default", "").answer, crate::answer::ANSWER);
    }

    #[test]
    fn schedule_is_absolute_and_groups_chunks() {
        let s = sc(
            "default",
            "prefill_ms=100&gap_ms=10&tokens=7&per_chunk=3&stall_at=4&stall_ms=50",
        );
        let c: Vec<Chunk> = s.schedule().collect();
        assert_eq!(
            c,
            vec![
                Chunk {
                    first: 0,
                    count: 3,
                    at_ms: 120.0
                },
                Chunk {
                    first: 3,
                    count: 3,
                    at_ms: 200.0
                },
                Chunk {
                    first: 6,
                    count: 1,
                    at_ms: 210.0
                },
            ]
        );
        assert_eq!(s.total_ms(), 210.0);
        assert_eq!(sc("default", "tokens=0&prefill_ms=40").total_ms(), 40.0);
    }

    #[test]
    fn jitter_is_seeded_bounded_and_ordered() {
        let a: Vec<f64> = sc(
            "default",
            "prefill_ms=50&gap_ms=10&jitter_ms=4&seed=9&tokens=200",
        )
        .schedule()
        .map(|c| c.at_ms)
        .collect();
        let b: Vec<f64> = sc(
            "default",
            "prefill_ms=50&gap_ms=10&jitter_ms=4&seed=9&tokens=200",
        )
        .schedule()
        .map(|c| c.at_ms)
        .collect();
        let c: Vec<f64> = sc(
            "default",
            "prefill_ms=50&gap_ms=10&jitter_ms=4&seed=10&tokens=200",
        )
        .schedule()
        .map(|c| c.at_ms)
        .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a[0], 50.0);
        for (i, t) in a.iter().enumerate() {
            assert!(
                (t - (50.0 + 10.0 * i as f64)).abs() <= 4.0 + 1e-9,
                "token {i} at {t}"
            );
        }
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        // No drift: the last token is still near its nominal time.
        assert!((a[199] - 2040.0).abs() <= 4.0);
    }

    #[test]
    fn delivery_shaping_parameters() {
        let s = sc("default", "events_per_write=4&proxy_buffer=4096&accel_buffering=no");
        assert_eq!((s.events_per_write, s.proxy_buffer, s.accel_buffering), (4, Some(4096), Some(false)));
        let d = sc("default", "events_per_write=0&proxy_buffer=0");
        assert_eq!((d.events_per_write, d.proxy_buffer, d.accel_buffering), (1, None, None));
        assert_eq!(sc("default", "accel_buffering=yes").accel_buffering, Some(true));
        let mut s = Scenario::preset("default");
        for q in ["accel_buffering=off", "proxy_buffer=-1", "proxy_buffer=99999999999"] {
            assert!(s.apply(&parse_query(q)).is_err(), "{q}");
        }
    }

    #[test]
    fn query_decoding() {
        assert_eq!(
            parse_query("a=1&b=x%20y+z&b=%E2%9C%93&c&d=%zz&e=%4"),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y z".into()),
                ("b".into(), "✓".into()),
                ("c".into(), "".into()),
                ("d".into(), "%zz".into()),
                ("e".into(), "%4".into()),
            ]
        );
        assert_eq!(get(&parse_query("x=1&x=2"), "x"), Some("1"));
    }
}
