//! Native timing of the per-chunk hot path, stage by stage (a figure, not a test):
//! `cargo run --release --example hotpath`.
use llm_rum::core::stream::formats::{Classifier, Format};
use llm_rum::core::util::json_read;
use llm_rum::core::stream::StreamDecoder;
use llm_rum::core::config::Config;
use llm_rum::core::request::kinds::PAINT_NONE;
use llm_rum::core::session::Session;
use std::time::Instant;

const EVENT: &str = "data: {\"id\":\"chatcmpl-123\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" token\"},\"finish_reason\":null}]}\n\n";

fn time(name: &str, n: u32, mut f: impl FnMut()) {
    let t0 = Instant::now();
    for _ in 0..n {
        f();
    }
    println!("{name:<28} {:>7.1} ns/event", t0.elapsed().as_nanos() as f64 / n as f64);
}

fn main() {
    let n: u32 = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000_000);
    // The whole of what `core.chunk()` does per chunk (js/wasm/llm_rum.js → Timeline::on_chunk),
    // for a request auto mode is looking for (PAINT_NONE: the answer's text tail is kept), as
    // the page's default is.
    let mut session = Session::new(Config { page_origin: "https://chat.example".into(), ..Config::default() });
    let h = session.begin("https://chat.example/v1/chat/completions", "POST", 0.0, 1.7e12, &[7u8; 32]);
    let tl = session.get(h).unwrap();
    tl.observe(PAINT_NONE);
    tl.on_headers(1.0, 200, "text/event-stream", false);
    let mut t = 1.0;
    time("Timeline::on_chunk (auto)", n, || {
        t += 1.0;
        let tl = session.get(h).unwrap();
        tl.on_asked(t - 0.5);
        tl.on_chunk(t, std::hint::black_box(EVENT.as_bytes()));
    });
    let data = &EVENT[6..EVENT.len() - 2];
    let mut dec = StreamDecoder::new("text/event-stream", false);
    let mut sink = 0u32;
    time("StreamDecoder::feed", n, || sink += dec.feed(std::hint::black_box(EVENT.as_bytes())).content_chars);
    let mut cl = Classifier::new(Format::Unknown);
    time("Classifier::sse_event", n, || sink += cl.sse_event("message", std::hint::black_box(data)).content_chars);
    time("json_read::parse", n, || sink += json_read::parse(std::hint::black_box(data)).is_some() as u32);
    time("str::from_utf8", n, || sink += std::str::from_utf8(std::hint::black_box(EVENT.as_bytes())).is_ok() as u32);
    println!("(checksum {sink}, event {} bytes)", EVENT.len());
}
