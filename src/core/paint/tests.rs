//! The paint tracker against scripted pages (streamed, buffered, throttled, janky and markdown
//! renderers), edge cases, random schedules, the coalescing error bound and memory bounds.

use super::*;
use crate::core::util::test_rng::Rng;

const F: f64 = FRAME_MS;


#[derive(Clone, Copy, Debug)]
enum Ev {
    Arrive(f64, u32),
    Paint(f64, u32),
}

impl Ev {
    fn t(&self) -> f64 {
        match *self {
            Ev::Arrive(t, _) | Ev::Paint(t, _) => t,
        }
    }
}

/// A scripted page: raw arrivals `(t, cumulative)` and the times the renderer updated the
/// DOM (showing everything arrived by then, through `render`), each painted one frame
/// later. Events are played in time order, arrivals first at equal times.
fn page(arrivals: &[(f64, u32)], dom_updates: &[f64], render: impl Fn(u32) -> u32) -> Vec<Ev> {
    let mut evs: Vec<Ev> = arrivals.iter().map(|&(t, c)| Ev::Arrive(t, c)).collect();
    for &u in dom_updates {
        let shown = arrivals.iter().filter(|a| a.0 <= u).map(|a| a.1).max().unwrap_or(0);
        evs.push(Ev::Paint(u + F, render(shown)));
    }
    evs.sort_by(|a, b| {
        a.t().total_cmp(&b.t()).then((matches!(a, Ev::Paint(..)) as u8).cmp(&(matches!(b, Ev::Paint(..)) as u8)))
    });
    evs
}

fn play(evs: &[Ev], threshold: f64) -> PaintTracker {
    let mut p = PaintTracker::new(1000.0, threshold);
    let mut last = (0.0, 0);
    for e in evs {
        match *e {
            Ev::Arrive(t, c) => {
                p.on_arrival(t, c);
                last = (t, c);
            }
            Ev::Paint(t, n) => p.on_paint(t, n, 0.5),
        }
    }
    p.on_end(last.0, last.1);
    p
}

/// 100 tokens of 5 chars every 30 ms from t = 1500 (ttft 500 after origin 1000).
fn steady() -> Vec<(f64, u32)> {
    (0..100).map(|i| (1500.0 + 30.0 * i as f64, 5 * (i + 1))).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn streamed_renderer() {
    let arr = steady();
    let updates: Vec<f64> = arr.iter().map(|a| a.0).collect();
    let p = play(&page(&arr, &updates, |c| c), 250.0);
    let r = p.result();
    assert_eq!(r.first_paint, Some(1500.0 + F));
    assert!(r.first_paint.unwrap() - 1500.0 <= 20.0);
    assert_eq!(r.last_paint, Some(1500.0 + 30.0 * 99.0 + F));
    let d = r.render_delay.unwrap();
    for v in [d.first, d.p50, d.p95, d.max] {
        assert!(close(v, F), "{d:?}");
    }
    assert!(d.p95 <= 20.0);
    assert_eq!(r.buffered, Some(false));
    assert_eq!(p.stalls().count, 0);
    assert_eq!((r.negative_chars, r.unpainted_chars, r.delay_error_ms), (0, 0, 0.0));
    assert_eq!(r.paint_error_ms, Some(0.5));
    assert!(!r.hidden);
    assert!(p.final_paint_seen());
}

#[test]
fn buffered_renderer() {
    let arr = steady();
    let last = arr.last().unwrap().0; // 4470
    let p = play(&page(&arr, &[last], |c| c), 250.0);
    let r = p.result();
    assert_eq!(r.first_paint, Some(last + F));
    assert_eq!(r.last_paint, Some(last + F));
    let d = r.render_delay.unwrap();
    let (ttft, total) = (500.0, last - 1000.0);
    assert!(close(d.first, total - ttft + F), "{d:?}");
    assert!((d.first - (total - ttft)).abs() <= 20.0);
    // Every 5-char token waited until the end: delays 2970+F, 2940+F, …, F.
    assert!(close(d.max, d.first));
    // Nearest rank over 500 chars, ascending from the last token: rank 250 is the 50th
    // token from the end (token 50, 49 gaps before the end), rank 475 the 95th (token 5).
    assert!(close(d.p50, 30.0 * 49.0 + F), "{d:?}");
    assert!(close(d.p95, 30.0 * 94.0 + F), "{d:?}");
    assert_eq!(r.buffered, Some(true));
    // One paint, no gaps between paints: the wait is ttfp, not a stall.
    assert_eq!(p.stalls().count, 0);
}

#[test]
fn throttled_renderer() {
    let arr = steady();
    let last = arr.last().unwrap().0;
    let mut updates: Vec<f64> = (0..15).map(|i| 1500.0 + 200.0 * i as f64).collect();
    updates.push(last); // the throttle's trailing flush at the end of the stream
    let p = play(&page(&arr, &updates, |c| c), 250.0);
    let r = p.result();
    let d = r.render_delay.unwrap();
    assert!((50.0..=200.0).contains(&d.p50), "{d:?}");
    assert!(d.max <= 220.0, "{d:?}");
    // Tokens at 30 ms spacing wait for the next 200 ms tick: the worst lands 10 ms after a
    // tick (30·7 = 210) and waits 190 ms, plus the frame.
    assert!(close(d.max, 190.0 + F), "{d:?}");
    assert!(close(d.first, F));
    assert_eq!(r.buffered, Some(false));
    assert_eq!(p.stalls().count, 0); // 200 ms < 250 ms threshold
    assert_eq!(r.last_paint, Some(last + F));
}

/// Arrivals every 40 ms; the renderer freezes 150 ms on two tokens (main thread busy) and
/// the network goes quiet for 600 ms once. Threshold 100 ms so a 150 ms freeze is visible.
#[test]
fn janky_renderer_and_network_gap() {
    let mut arr = Vec::new();
    let mut t = 1500.0;
    for i in 0..60u32 {
        if i == 40 {
            t += 600.0; // scripted network stall before token 40
        }
        arr.push((t, 4 * (i + 1)));
        t += 40.0;
    }
    // Freezes start at the arrivals of tokens 10 and 25: the DOM update for them (and for
    // anything arriving meanwhile) happens 150 ms later.
    let freeze = [(1500.0 + 400.0, 150.0), (1500.0 + 1000.0, 150.0)];
    let mut updates = Vec::new();
    for &(ta, _) in &arr {
        let mut u = ta;
        for &(f0, len) in &freeze {
            if (f0..f0 + len).contains(&ta) {
                u = f0 + len;
            }
        }
        updates.push(u);
    }
    updates.dedup();
    let p = play(&page(&arr, &updates, |c| c), 100.0);
    let s = p.stalls();
    assert_eq!((s.count, s.render, s.network), (3, 2, 1), "{:?}", s.list);
    // The freeze: last growth = token 9 painted at 1860+F; next paint 1900+150+F.
    let render: Vec<&Stall> = s.list.iter().filter(|x| x.cause == StallCause::Render).collect();
    assert!(render.iter().any(|x| close(x.start, 860.0 + F) && close(x.dur, 190.0)), "{render:?}");
    // The network gap: token 39 at 1500+39·40 = 3060, painted 3060+F; token 40 at 3700.
    let net = s.list.iter().find(|x| x.cause == StallCause::Network).unwrap();
    assert!(close(net.start, 2060.0 + F) && close(net.dur, 640.0), "{net:?}");
    let d = p.result().render_delay.unwrap();
    assert!(close(d.max, 150.0 + F), "{d:?}");
    // With the default 250 ms threshold the freezes are not stalls; the network gap is.
    let p = play(&page(&arr, &updates, |c| c), 250.0);
    assert_eq!((p.stalls().count, p.stalls().network), (1, 1));
}

/// A markdown renderer: `**` pairs vanish once closed; an unclosed `**` shows as text.
fn markdown_len(raw: &str) -> u32 {
    let n = raw.chars().count() as u32;
    let pairs = raw.matches("**").count() as u32 / 2;
    n - 4 * pairs
}

#[test]
fn markdown_shrinkage() {
    // Plain first half, bold-heavy second half: the closing markers arrive late, so the
    // rendered share runs ahead of the raw share early on.
    let mut text = String::new();
    for _ in 0..16 {
        text.push_str("plain txt ");
    }
    for _ in 0..20 {
        text.push_str("**bold text**");
    }
    let total = text.chars().count() as u32;
    let final_len = markdown_len(&text);
    let ratio = final_len as f64 / total as f64;
    assert!((0.78..=0.82).contains(&ratio), "{ratio}");
    // 3-char tokens every 25 ms; the renderer re-renders the whole prefix each token.
    let chars: Vec<char> = text.chars().collect();
    let mut evs = Vec::new();
    let mut t = 1500.0;
    let mut i = 0;
    while i < chars.len() {
        i = (i + 3).min(chars.len());
        let prefix: String = chars[..i].iter().collect();
        evs.push(Ev::Arrive(t, i as u32));
        evs.push(Ev::Paint(t + F, markdown_len(&prefix)));
        t += 25.0;
    }
    let last_arrival = t - 25.0;
    let p = play(&evs, 250.0);
    let r = p.result();
    assert_eq!(r.negative_chars, 0);
    let lp = r.last_paint.unwrap();
    assert!(lp >= last_arrival);
    assert!(close(lp, last_arrival + F));
    let d = r.render_delay.unwrap();
    // Each token is on screen one frame after it arrived: the mapping must say so.
    assert!(d.first >= 0.0 && close(d.p50, F) && d.p95 <= 20.0, "{d:?}");
    assert!(d.max <= 25.0 + F + 1e-9, "{d:?}");
    assert_eq!(r.unpainted_chars, 0);
    assert_eq!(r.buffered, Some(false));
    // Uniform shrinkage too: a renderer showing 80 % of every prefix still maps exactly.
    let arr = steady();
    let updates: Vec<f64> = arr.iter().map(|a| a.0).collect();
    let r = play(&page(&arr, &updates, |c| c * 4 / 5), 250.0).result();
    let d = r.render_delay.unwrap();
    assert!(close(d.p95, F) && close(d.max, F) && r.negative_chars == 0, "{d:?}");
}

#[test]
fn edge_cases() {
    // No paints at all.
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(10.0, 5);
    p.on_end(20.0, 5);
    assert_eq!(p.result(), PaintResult::empty(false));
    // Paints before any arrival are ignored (placeholder text).
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_paint(5.0, 12, 1.0);
    assert_eq!(p.result().first_paint, None);
    p.on_arrival(10.0, 5);
    p.on_paint(20.0, 5, 1.0);
    let r = p.result();
    assert_eq!((r.first_paint, r.render_delay.unwrap().first), (Some(20.0), 10.0));
    // The answer fully arrived before any paint: buffered, every delay to the first paint.
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(10.0, 50);
    p.on_arrival(20.0, 100);
    p.on_end(25.0, 100);
    p.on_paint(200.0, 100, 0.0);
    let r = p.result();
    assert_eq!(r.buffered, Some(true));
    let d = r.render_delay.unwrap();
    assert_eq!((d.first, d.p50, d.p95, d.max), (190.0, 180.0, 190.0, 190.0));
    // …but one chunk painted promptly is not the UI buffering.
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(10.0, 100);
    p.on_paint(10.0 + F, 100, 0.0);
    assert_eq!(p.result().buffered, Some(false));
    // Rendered length drops (framework re-render): progress stays at the running max.
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(0.0, 10);
    p.on_paint(10.0, 10, 0.0);
    p.on_arrival(20.0, 20);
    p.on_paint(30.0, 3, 0.0); // re-render in progress
    p.on_paint(40.0, 20, 0.0);
    let d = p.result().render_delay.unwrap();
    assert_eq!((d.first, d.p50, d.max), (10.0, 10.0, 20.0));
    assert_eq!(p.result().last_paint, Some(40.0));
    // A paint read before the text arrived cannot show it: ignored.
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(100.0, 10);
    p.on_paint(90.0, 10, 0.0);
    assert_eq!(p.result().first_paint, None);
    // A native presentation time before the frame's read (a mismatched frame) is refused:
    // the paint keeps its bracket.
    p.on_paint(104.0, 10, 4.0); // read at 100
    p.refine(104.0, 99.95, 0.1);
    let r = p.result();
    assert_eq!((r.first_paint, r.render_delay.unwrap().first, r.negative_chars), (Some(104.0), 4.0, 0));
    // A frame read before the text arrived, shown after it (a bracket reaching past the next
    // frame): no credit before arrival, however late it was shown.
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(100.0, 10);
    p.on_paint(116.0, 10, 17.0); // read at 99
    assert_eq!(p.result().first_paint, None);
    p.on_paint(118.0, 10, 17.0); // read at 101
    assert_eq!(p.result().first_paint, Some(118.0));
    // on_end reports chars the arrivals missed; they arrive at t_end.
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(0.0, 10);
    p.on_paint(10.0, 10, 0.0);
    p.on_end(50.0, 20);
    assert_eq!(p.result().unpainted_chars, 10);
    assert!(!p.final_paint_seen());
    p.on_paint(60.0, 20, 0.0);
    assert!(p.final_paint_seen());
    assert_eq!((p.result().unpainted_chars, p.result().last_paint), (0, Some(60.0)));
    // The last arrival changed nothing on screen and no paint followed: the final run
    // before it stands for lastPaint.
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(0.0, 10);
    p.on_paint(10.0, 10, 0.0);
    p.on_end(30.0, 11);
    assert_eq!(p.result().last_paint, Some(10.0));
    // Element cleared at the end: no lastPaint.
    p.on_paint(40.0, 0, 0.0);
    assert_eq!(p.result().last_paint, None);
    // Garbage inputs change nothing.
    let mut p = PaintTracker::new(f64::NAN, f64::NAN);
    p.on_arrival(f64::NAN, 5);
    p.on_paint(f64::INFINITY, 5, f64::NAN);
    assert_eq!(p.result(), PaintResult::empty(false));
    assert_eq!(p.stall_threshold_ms, 250.0);
}

/// A gap is blamed on whichever wait the person mostly sat through.
#[test]
fn stall_cause_is_the_dominant_wait() {
    let gap = |wait_from: f64| {
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_arrival(0.0, 10);
        p.on_paint(10.0, 10, 0.0);
        p.on_arrival(wait_from, 20);
        p.on_paint(610.0, 20, 0.0);
        let s = p.stalls();
        assert_eq!((s.count, s.list[0].start, s.list[0].dur), (1, 10.0, 600.0));
        s.list[0].cause
    };
    // 550 ms of network silence, then a slow 50 ms paint: still a network stall.
    assert_eq!(gap(560.0), StallCause::Network);
    // Text arrived 20 ms into the gap and waited 580 ms: render.
    assert_eq!(gap(30.0), StallCause::Render);
    // Arrived one frame before the paint: network.
    assert_eq!(gap(610.0 - F), StallCause::Network);
    // A gap no arrival interrupted is not a stall (nothing more was coming yet).
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(0.0, 10);
    p.on_paint(10.0, 5, 0.0);
    p.on_paint(900.0, 10, 0.0); // typewriter catching up on text that had arrived
    assert_eq!(p.stalls().count, 0);
}

#[test]
fn hidden_page() {
    let mut p = PaintTracker::new(0.0, 100.0);
    p.on_arrival(0.0, 10);
    p.on_paint(F, 10, 0.0);
    p.on_hidden(50.0);
    p.on_arrival(60.0, 20); // arrives while hidden; painted when visible again
    p.on_paint(900.0, 20, 0.0);
    let r = p.result();
    assert!(r.hidden);
    assert_eq!(p.stalls().count, 0); // the gap spans the hidden time
    assert_eq!(r.first_paint, Some(F));
}

/// Random schedules (including garbage) never panic and keep the invariants.
#[test]
fn property_random_schedules() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..300 {
        let cap = if round % 3 == 0 { 4 } else { MAX_BUCKETS };
        let mut p = PaintTracker::with_capacity(0.0, rng.unit() * 400.0, cap);
        let mut t = 0.0;
        let mut c = 0u32;
        let steps = 1 + rng.below(600);
        for _ in 0..steps {
            t += match rng.below(10) {
                0 => -20.0 * rng.unit(), // clocks going backwards
                1 => 800.0 * rng.unit(),
                _ => 40.0 * rng.unit(),
            };
            match rng.below(12) {
                0..=4 => {
                    c = c.saturating_add(rng.below(30) as u32);
                    p.on_arrival(t, c);
                }
                5..=9 => {
                    let shown = (c as f64 * (0.5 + rng.unit())) as u32;
                    p.on_paint(t + 20.0 * rng.unit() - 5.0, shown, rng.unit() * 4.0);
                }
                10 => p.on_end(t, c + rng.below(3) as u32),
                _ => match rng.below(6) {
                    0 => p.on_hidden(t),
                    1 => p.on_arrival(f64::NAN, u32::MAX),
                    2 => p.on_paint(f64::NEG_INFINITY, 3, f64::INFINITY),
                    3 => p.on_paint(t, u32::MAX, -1.0),
                    _ => p.on_arrival(t, 0),
                },
            }
            assert!(p.arrivals.len() <= cap && p.paints.len() <= cap);
        }
        let r = p.result();
        if let Some(d) = r.render_delay {
            for v in [d.first, d.p50, d.p95, d.max] {
                assert!(v.is_finite() && v >= 0.0, "{d:?}");
            }
            assert!(d.p50 <= d.p95 && d.p95 <= d.max && d.first <= d.max, "{d:?}");
        }
        if let (Some(f), Some(l)) = (r.first_paint, r.last_paint) {
            assert!(l >= f, "{f} {l}");
        }
        assert_eq!(r.first_paint.is_some(), r.buffered.is_some());
        let s = p.stalls();
        assert_eq!(s.count, s.network + s.render);
        assert!(s.list.iter().all(|x| x.dur > p.stall_threshold_ms && x.dur.is_finite()));
    }
}

/// The same inputs to a tracker with the bucket bound and to one without (exact).
fn bounded_and_exact(evs: &[Ev]) -> (PaintTracker, PaintTracker) {
    let mut small = PaintTracker::new(0.0, 250.0);
    let mut exact = PaintTracker::with_capacity(0.0, 250.0, 1 << 20);
    for e in evs {
        match *e {
            Ev::Arrive(t, c) => {
                small.on_arrival(t, c);
                exact.on_arrival(t, c);
            }
            Ev::Paint(t, l) => {
                small.on_paint(t, l, 0.0);
                exact.on_paint(t, l, 0.0);
            }
        }
    }
    (small, exact)
}

/// Sane random streams: no negative delays, and bucket coalescing stays within the bound it
/// reports against the unbounded computation.
#[test]
fn coalescing_error_is_within_the_reported_bound() {
    let mut rng = Rng(42);
    for _ in 0..40 {
        let n = 200 + rng.below(2000) as usize;
        let mut arr = Vec::new();
        let (mut t, mut c) = (1000.0, 0u32);
        for _ in 0..n {
            t += if rng.below(50) == 0 { 500.0 * rng.unit() } else { 5.0 + 60.0 * rng.unit() };
            c += 1 + rng.below(20) as u32;
            arr.push((t, c));
        }
        // A renderer that sometimes freezes and sometimes throttles.
        let mut updates = Vec::new();
        let mut busy_until = 0.0f64;
        for &(ta, _) in &arr {
            let u = ta.max(busy_until);
            if rng.below(30) == 0 {
                busy_until = u + 300.0 * rng.unit();
            }
            updates.push(u);
        }
        updates.dedup();
        let evs = page(&arr, &updates, |x| x * 9 / 10);
        let (small, exact) = bounded_and_exact(&evs);
        let (rs, re) = (small.result(), exact.result());
        assert_eq!(re.delay_error_ms, 0.0);
        assert_eq!((re.negative_chars, rs.negative_chars), (0, 0));
        assert_eq!((rs.first_paint, rs.last_paint, rs.buffered), (re.first_paint, re.last_paint, re.buffered));
        let (ds, de) = (rs.render_delay.unwrap(), re.render_delay.unwrap());
        let bound = rs.delay_error_ms + 1e-6;
        assert_eq!(ds.first, de.first);
        for (a, b) in [(ds.p50, de.p50), (ds.p95, de.p95), (ds.max, de.max)] {
            assert!((a - b).abs() <= bound, "{ds:?} vs {de:?}, bound {bound}");
        }
        // The documented worst case: 2·D/(K−1) per list.
        let span = |v: &[f64]| 2.0 * (v.last().unwrap() - v.first().unwrap()) / (MAX_BUCKETS - 1) as f64;
        let at: Vec<f64> = arr.iter().map(|a| a.0).collect();
        let pt: Vec<f64> = evs.iter().filter_map(|e| if let Ev::Paint(t, _) = e { Some(*t) } else { None }).collect();
        assert!(max_span(&small.arrivals) <= span(&at) + 1e-9);
        assert!(max_span(&small.paints) <= span(&pt) + 1e-9);
    }
}

#[test]
fn memory_is_bounded_for_100k_arrivals() {
    let mut p = PaintTracker::new(0.0, 250.0);
    let mut t = 0.0;
    for i in 1..=100_000u32 {
        t += 10.0 + (i % 7) as f64;
        p.on_arrival(t, 3 * i);
        if i % 3 == 0 {
            p.on_paint(t + F, 3 * i, 1.0);
        }
        if i % 5000 == 0 {
            p.on_paint(t + F, 1, 1.0); // a re-render flicker now and then
        }
    }
    p.on_end(t, 300_000);
    p.on_paint(t + F, 300_000, 1.0);
    for (len, capacity) in [(p.arrivals.len(), p.arrivals.capacity()), (p.paints.len(), p.paints.capacity())] {
        assert!(len <= MAX_BUCKETS && capacity <= MAX_BUCKETS, "{len} {capacity}");
    }
    assert!(p.stalls().list.len() <= crate::core::stalls::MAX_STALL_LIST);
    let r = p.result();
    let d = r.render_delay.unwrap();
    assert!(d.p50 <= d.p95 && d.p95 <= d.max);
    // Paints trail arrivals by ≤ 2 tokens (≤ 32 ms) + a frame; the reported bound covers
    // the coalescing smear on top.
    assert!(d.max <= 2.0 * 16.0 + F + r.delay_error_ms, "{d:?} {}", r.delay_error_ms);
    assert_eq!(r.last_paint, Some(t + F));
}

#[test]
fn native_paint_times_refine_brackets_they_fall_in() {
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(100.0, 10);
    p.on_paint(110.0, 10, 4.0); // bracket [106, 114]
    p.on_arrival(200.0, 20);
    p.on_paint(210.0, 20, 4.0);
    p.on_end(200.0, 20);
    assert_eq!(p.result().paint_error_ms, Some(4.0));
    p.refine(150.0, 150.0, 0.1); // no paint reported at that key: ignored
    p.refine(110.0, f64::NAN, 0.1);
    assert_eq!(p.result().first_paint, Some(110.0));
    p.refine(110.0, 107.5, 0.1);
    let r = p.result();
    assert_eq!((r.first_paint, r.last_paint, r.paint_error_ms), (Some(107.5), Some(210.0), Some(4.0)));
    assert_eq!(r.render_delay.unwrap().first, 7.5);
    p.refine(210.0, 212.0, 0.1);
    let r = p.result();
    assert_eq!((r.last_paint, r.paint_error_ms), (Some(212.0), Some(0.1)));
    // Refined once: a second timestamp for the old key does not move it again.
    p.refine(110.0, 108.0, 0.1);
    assert_eq!(p.result().first_paint, Some(107.5));
    // Origin shifts move stall offsets.
    let mut p = PaintTracker::new(1000.0, 100.0);
    p.on_arrival(1100.0, 5);
    p.on_paint(1110.0, 5, 0.0);
    p.on_arrival(1500.0, 9);
    p.on_paint(1510.0, 9, 0.0);
    assert_eq!(p.stalls().list[0].start, 110.0);
    p.shift_origin(5.0);
    assert_eq!(p.stalls().list[0].start, 115.0);
}

#[test]
fn a_frame_read_before_an_arrival_but_reported_after_it_is_not_the_final_paint() {
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(100.0, 10);
    p.on_paint(110.0, 10, 2.0);
    // The frame's text is read at 120 (bracket 120..124, reported as 122 ± 2); a chunk
    // task runs at 121 before the report: the last 5 chars, then the end.
    p.on_arrival(121.0, 15);
    p.on_end(121.5, 15);
    p.on_paint(122.0, 10, 2.0);
    assert!(!p.final_paint_seen(), "the frame was read before the last arrival");
    p.on_paint(140.0, 15, 2.0);
    assert!(p.final_paint_seen());
    let r = p.result();
    assert_eq!(r.last_paint, Some(140.0));
    // The stale frame is capped at what had arrived when it was read (10 chars).
    let d = r.render_delay.unwrap();
    assert_eq!((d.first, d.max), (10.0, 19.0));
    // A frame read before any arrival shows no answer text (a placeholder).
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(100.0, 3);
    p.on_paint(101.0, 8, 2.0); // read at 99
    assert_eq!(p.result().first_paint, None);
}

/// Whatever the times (even NaN or ∞, which the tracker filters out before), a full list never
/// exceeds its bound, and it keeps its order.
#[test]
fn coalescing_keeps_the_bound_whatever_the_times() {
    use crate::core::paint::buckets::{max_span, push_coalescing, ArrivalBucket};
    for (i, bad) in [f64::NAN, f64::INFINITY, 5.0].into_iter().enumerate() {
        let mut v = Vec::new();
        for k in 0..1000u64 {
            let t = if k % 3 == 0 { bad } else { k as f64 };
            push_coalescing(&mut v, 8, ArrivalBucket { t0: t, t1: t, chars: k });
            assert!(v.len() <= 8, "case {i}: {}", v.len());
        }
        assert_eq!(v.last().map(|b| b.chars), Some(999), "case {i}");
        assert!(v.windows(2).all(|p| p[0].chars < p[1].chars), "case {i}: order kept");
    }
    // Regular arrivals: after every push the widest bucket is within 2·D/(K − 1).
    let mut v = Vec::new();
    for k in 0..10_000u64 {
        let t = k as f64 * 10.0 + (k % 7) as f64;
        push_coalescing(&mut v, MAX_BUCKETS, ArrivalBucket { t0: t, t1: t, chars: k });
        let d = v.last().unwrap().t1 - v[0].t0;
        assert!(max_span(&v) <= 2.0 * d / (MAX_BUCKETS - 1) as f64 + 1e-9);
    }
    assert!(v.len() <= MAX_BUCKETS && v.capacity() <= MAX_BUCKETS);
}

/// Typical accuracy, not only the worst-case bound: on 60 seeded chat-like streams of 200–1000
/// arrivals (15–40 ms apart, a 0.3–1 s silence now and then, a streamed renderer with an
/// occasional long frame), the coalesced render delays against the unbounded computation. The
/// shortest-pair rule gives mean errors p50 0.72, p95 19.9, max 15.7 ms here; a batched merge
/// (up to 16 pairs under `2·D/(K−16)` per pass, −0.4 µs per chunk in V8) read 1.33, 23.1 and
/// 20.6 ms, which is why it was not kept. The limits sit just above the kept rule's figures.
#[test]
fn coalescing_is_accurate_on_chat_like_streams() {
    let mut rng = Rng(7);
    let (mut e50, mut e95, mut emax) = (0.0, 0.0, 0.0);
    const RUNS: usize = 60;
    for _ in 0..RUNS {
        let n = 200 + rng.below(800) as usize;
        let mut arr = Vec::new();
        let (mut t, mut c) = (500.0, 0u32);
        for _ in 0..n {
            t += if rng.below(200) == 0 { 300.0 + 700.0 * rng.unit() } else { 15.0 + 25.0 * rng.unit() };
            c += 1 + rng.below(6) as u32;
            arr.push((t, c));
        }
        let mut updates = Vec::new();
        let mut busy_until = 0.0f64;
        for &(ta, _) in &arr {
            let frame = ((ta / F).floor() + 1.0) * F;
            let u = frame.max(busy_until);
            if rng.below(100) == 0 {
                busy_until = u + 100.0 * rng.unit();
            }
            updates.push(u);
        }
        updates.dedup();
        let evs = page(&arr, &updates, |x| x);
        let (small, exact) = bounded_and_exact(&evs);
        let (ds, de) = (small.result().render_delay.unwrap(), exact.result().render_delay.unwrap());
        e50 += (ds.p50 - de.p50).abs() / RUNS as f64;
        e95 += (ds.p95 - de.p95).abs() / RUNS as f64;
        emax += (ds.max - de.max).abs() / RUNS as f64;
    }
    assert!(e50 <= 0.9 && e95 <= 21.0 && emax <= 17.0, "mean errors p50 {e50:.2} p95 {e95:.2} max {emax:.2} ms");
}

#[test]
fn a_paint_after_the_end_whose_probe_is_short_of_it_is_not_the_final_paint() {
    // A page working through a backlog: the stream's end reached the SDK before the app
    // rendered its last tokens (paint-compositor.spec.js, the busy page).
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(100.0, 10);
    p.on_arrival(130.0, 20);
    p.on_end(131.0, 20);
    p.on_paint_probed(150.0 - 2.0, 150.0, 12, 2.0, Some(12));
    assert!(!p.final_paint_seen(), "the screen shows 12 of 20 chars");
    p.on_paint_probed(200.0 - 2.0, 200.0, 20, 2.0, Some(20));
    assert!(p.final_paint_seen());
    assert_eq!(p.result().last_paint, Some(200.0));
    // No probe found (a label after the answer, a link's URL): taken as the end, as before.
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(100.0, 10);
    p.on_end(101.0, 10);
    p.on_paint_probed(120.0 - 2.0, 120.0, 14, 2.0, None);
    assert!(p.final_paint_seen());
}

/// A frame reported after text came that its read did not include: that text is still
/// waiting, and a page that blocks right after it (its chunk handler rendering) makes a render
/// stall, not a network one (toolchains.spec's app: 400 ms in the 10th delta's handler).
#[test]
fn text_after_a_frames_read_keeps_waiting_past_that_frames_report() {
    let mut p = PaintTracker::new(0.0, 250.0);
    p.on_arrival(0.0, 10);
    p.on_paint(10.0, 10, 0.0);
    p.on_arrival(20.0, 20);
    // The frame read at 25 (before the next arrival at 30), reported at 41 (bracket ± 16).
    p.on_arrival(30.0, 30);
    p.on_paint(41.0, 20, 16.0);
    // The page blocks 400 ms; the next frame shows the waiting text.
    p.on_paint(450.0, 30, 0.0);
    let s = p.stalls();
    assert_eq!(s.count, 1);
    assert_eq!(s.list[0].cause, StallCause::Render);
}
