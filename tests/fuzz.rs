//! Random-input tests ("fuzz targets") for the parsers that read what the network sends: the SSE
//! parser (and the stream decoder around it), the `Server-Timing` parser and the JSON reader.
//! `cargo fuzz` needs a nightly toolchain; these run on stable under `cargo test`, driven by
//! proptest over random bytes and grammar-biased random text, for a bounded number of cases
//! (`FUZZ_CASES`, default 1000 per target: a few seconds in all). A longer run:
//! `FUZZ_CASES=200000 cargo test --release --test fuzz`. A failing case is shrunk and saved in
//! tests/fuzz.proptest-regressions, replayed first on the next run.

use llm_rum::core::stream::formats::Format;
use llm_rum::core::stream::lines::MAX_LINE;
use llm_rum::core::stream::sse::{SseItem, SseParser};
use llm_rum::core::stream::{Content, StreamDecoder};
use llm_rum::core::trace::server_timing::{parse_server_timing, ServerTimingEntry, MAX_ENTRIES, MAX_TEXT};
use llm_rum::core::util::json_read::{self, MAX_DEPTH};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    let cases = std::env::var("FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    ProptestConfig { cases, ..ProptestConfig::default() }
}

/// Bytes drawn half from anywhere, half from the characters a grammar looks at.
fn biased_bytes(grammar: &'static [u8], max_len: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop_oneof![any::<u8>(), prop::sample::select(grammar)], 0..max_len)
}

/// `body` cut at the given points (sorted, clamped): the chunks a network may deliver.
fn split<'a>(body: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut prev = 0;
    for c in cuts.into_iter().chain([body.len()]) {
        out.push(&body[prev..c]);
        prev = c;
    }
    out
}

#[derive(Debug, PartialEq)]
enum Item {
    Event(String, String),
    Comment,
}

fn sse_items(chunks: &[&[u8]]) -> (Vec<Item>, SseParser) {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for c in chunks {
        p.feed(c, &mut |it| {
            out.push(match it {
                SseItem::Event { event_type, data } => Item::Event(event_type.into(), data.into()),
                SseItem::Comment => Item::Comment,
            })
        });
        assert!(p.buffer_capacity() <= MAX_LINE);
    }
    p.finish();
    (out, p)
}

fn decode(ct: &str, ai_sdk: bool, chunks: &[&[u8]]) -> (Content, Format) {
    let mut d = StreamDecoder::new(ct, ai_sdk);
    let mut c = Content::default();
    for ch in chunks {
        c.merge(&d.feed(ch));
        assert!(d.buffer_capacity() <= MAX_LINE);
    }
    c.merge(&d.finish());
    (c, d.format())
}

const SSE_GRAMMAR: &[u8] = b"data: event:id:retry:\r\n\n\n:{}[]\",\\0123456789\xEF\xBB\xBF\xE2\x82\xAC\xF0\x9F";

proptest! {
    #![proptest_config(config())]

    /// Any bytes in any split: no panic, bounded buffers, and the same events as one-shot
    /// delivery (the parser's split invariance, on input nobody wrote by hand).
    #[test]
    fn sse_parser_on_random_bytes(body in biased_bytes(SSE_GRAMMAR, 600), cuts in prop::collection::vec(any::<usize>(), 0..8)) {
        let (whole, p) = sse_items(&[&body]);
        let (parts, q) = sse_items(&split(&body, &cuts));
        prop_assert_eq!(&whole, &parts);
        prop_assert_eq!(p.overflowed(), q.overflowed());
        for it in &whole {
            if let Item::Event(t, _) = it {
                prop_assert!(!t.is_empty(), "an event's type is never empty");
            }
        }
    }

    /// The decoder around it, for every framing (SSE, NDJSON, the AI SDK data stream, text,
    /// sniffed): no panic, bounded buffers; totals independent of the split wherever the
    /// framing makes them so (text counts one event per chunk that decoded to chars).
    #[test]
    fn stream_decoder_on_random_bytes(body in biased_bytes(SSE_GRAMMAR, 600), cuts in prop::collection::vec(any::<usize>(), 0..8), which in 0usize..6, ai_sdk: bool) {
        let ct = ["text/event-stream", "application/x-ndjson", "text/plain", "", "application/json", "text/plain; charset=utf-8"][which];
        let (whole, f) = decode(ct, ai_sdk, &[&body]);
        let (parts, g) = decode(ct, ai_sdk, &split(&body, &cuts));
        prop_assert_eq!(whole.content_chars, parts.content_chars);
        prop_assert_eq!(f, g);
        if f != Format::Text {
            prop_assert_eq!(whole, parts);
        }
        // Events with answer (or reasoning) text are among the events counted.
        prop_assert!(whole.content_events <= whole.events && whole.reasoning_events <= whole.events, "{:?}", whole);
    }

    /// Any header text: no panic, at most `MAX_ENTRIES` entries, names non-empty tokens of at
    /// most `MAX_TEXT` bytes, descriptions bounded, durations finite.
    #[test]
    fn server_timing_on_random_text(header in prop::collection::vec(prop_oneof![
        any::<char>(),
        prop::sample::select(&[';', ',', '=', '"', '\\', ' ', '\t', 'd', 'u', 'r', 'e', 's', 'c', '1', '.', '5', 'a'][..]),
    ], 0..300).prop_map(String::from_iter), prefilled in 0usize..40) {
        let mut out: Vec<ServerTimingEntry> = (0..prefilled).map(|i| ServerTimingEntry { name: format!("m{i}"), dur: None, desc: None }).collect();
        parse_server_timing(&header, &mut out);
        prop_assert!(out.len() <= MAX_ENTRIES.max(prefilled));
        for e in &out[prefilled.min(out.len())..] {
            prop_assert!(!e.name.is_empty() && e.name.len() <= MAX_TEXT);
            prop_assert!(e.name.bytes().all(|b| b.is_ascii_graphic() && !b"\"(),/:;<=>?@[\\]{}".contains(&b)), "{:?}", e.name);
            prop_assert!(e.desc.as_ref().is_none_or(|d| d.len() <= MAX_TEXT));
            prop_assert!(e.dur.is_none_or(f64::is_finite));
        }
    }

    /// Any text: no panic, and a parsed document's walks never fail halfway.
    #[test]
    fn json_reader_on_random_text(text in biased_bytes(b"{}[],:\"\\ntrufalse0123456789.eE+-u \t\r\n", 400).prop_map(|b| String::from_utf8_lossy(&b).into_owned())) {
        if let Some(v) = json_read::parse(&text) {
            let _ = (v.get("a"), v.path(&["a", "b"]), v.items().count(), v.str_chars(), v.as_u32(), v.fields(["x", "y"]));
        }
        let _ = json_read::parse_fields(&text, ["type", "choices", "error"]);
    }

    /// Documents serde_json writes: accepted, and the reader finds what serde put there.
    #[test]
    fn json_reader_agrees_with_serde_on_valid_documents(v in json_value()) {
        let text = serde_json::to_string_pretty(&v).unwrap();
        let doc = json_read::parse(&text);
        prop_assert!(doc.is_some(), "rejected valid JSON: {}", text);
        let doc = doc.unwrap();
        agree(doc, &v)?;
    }

    /// Valid documents with one byte deleted or inserted: the reader accepts exactly what
    /// serde_json accepts, except where it is lenient on purpose (leading zeros, lone surrogate
    /// escapes, numbers beyond f64), and rejects nesting deeper than `MAX_DEPTH`.
    #[test]
    fn json_reader_verdict_matches_serde_on_mutated_documents(v in json_value(), at: usize, insert in prop::option::of(prop::sample::select(&b"{}[],:\"\\ 0-.eu"[..]))) {
        let mut b = serde_json::to_string(&v).unwrap().into_bytes();
        let i = at % (b.len() + 1);
        match insert {
            Some(c) => b.insert(i, c),
            None if i < b.len() => { b.remove(i); }
            None => {}
        }
        let Ok(text) = String::from_utf8(b) else { return Ok(()) };
        let ours = json_read::parse(&text).is_some();
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(_) => prop_assert!(ours, "rejected valid JSON: {}", text),
            Err(e) => {
                let e = e.to_string();
                let lenient = ["invalid number", "lone leading surrogate", "unexpected end of hex escape", "number out of range"];
                prop_assert!(!ours || lenient.iter().any(|l| e.contains(l)), "accepted invalid JSON ({}): {}", e, text);
            }
        }
    }
}

/// JSON values up to depth 6, with unicode, escapes and numbers of every kind.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let text = prop::collection::vec(prop_oneof![prop::char::range('a', 'e'), any::<char>(), prop::sample::select(&['"', '\\', '\n', '\u{1}', '/', 'é', '🚀'][..])], 0..12)
        .prop_map(String::from_iter);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u32>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        text.clone().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((text.clone(), inner), 0..6).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// The reader's view of `doc` matches serde's value `v`.
fn agree(doc: json_read::Json<'_>, v: &serde_json::Value) -> Result<(), TestCaseError> {
    use serde_json::Value;
    match v {
        Value::Null => prop_assert!(doc.is_null()),
        Value::Bool(b) => prop_assert_eq!(doc.as_bool(), Some(*b)),
        Value::Number(n) => {
            if let Some(u) = n.as_u64().filter(|u| *u <= u32::MAX as u64) {
                prop_assert_eq!(doc.as_u32(), Some(u as u32));
            }
        }
        Value::String(s) => {
            prop_assert_eq!(doc.str_chars(), Some(s.chars().count() as u32));
            prop_assert!(doc.str_eq(s));
            prop_assert_eq!(doc.chars().collect::<String>(), s.clone());
        }
        Value::Array(items) => {
            prop_assert_eq!(doc.items().count(), items.len());
            for (d, x) in doc.items().zip(items) {
                agree(d, x)?;
            }
        }
        Value::Object(map) => {
            for (k, x) in map {
                let d = doc.get(k);
                prop_assert!(d.is_some(), "member {:?} not found", k);
                agree(d.unwrap(), x)?;
            }
        }
    }
    Ok(())
}

#[test]
fn json_reader_nesting_is_capped() {
    let deep = |n: usize| ["[".repeat(n), "]".repeat(n)].concat();
    assert!(json_read::parse(&deep(MAX_DEPTH as usize)).is_some());
    assert!(json_read::parse(&deep(MAX_DEPTH as usize + 1)).is_none());
    assert!(json_read::parse(&deep(100_000)).is_none(), "no recursion past the cap");
}
