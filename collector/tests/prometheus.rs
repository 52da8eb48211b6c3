//! Past one machine, with the real thing: two collectors (the real binary) scraped by a real
//! Prometheus (Debian's, installed by scripts/setup.sh; started on 127.0.0.1 with a generated
//! config and a temp storage directory, stopped by its PID), whose 95th percentile across
//! both must agree with the exact percentile of all the records within the bucket error; and
//! the alerting rules `llm-rum-collector rules` prints, accepted by `promtool check rules` and
//! shown firing on a scripted breach (holding through silence, resolving on recovery) by
//! `promtool test rules`.

mod common;

use llm_rum::core::record::genai::CHUNK_BUCKETS_S;
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use llm_rum_collector::metrics::BUCKETS;
use serde_json::{json, Value};

fn tool(name: &str) -> String {
    let p = format!("/usr/bin/{name}");
    if std::path::Path::new(&p).exists() {
        p
    } else {
        name.to_string() // on PATH (scripts/setup.sh installs Debian's prometheus package)
    }
}

/// Prometheus, killed (by this child's PID) and reaped on drop.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Scraping `targets` every second.
    fn start(targets: &[SocketAddr]) -> Prometheus {
        for attempt in 0..3 {
            let dir = TempDir::new("prometheus");
            // A free port now; another process could take it before Prometheus binds: retried.
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
            let conf = format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: llm-rum\n    scrape_interval: 1s\n    scrape_timeout: 1s\n    \
                 static_configs:\n      - targets: [{}]\n",
                list.join(", ")
            );
            std::fs::write(dir.0.join("prometheus.yml"), conf).unwrap();
            let child = Command::new(tool("prometheus"))
                .arg(format!("--config.file={}/prometheus.yml", dir.0.display()))
                .arg(format!("--storage.tsdb.path={}/data", dir.0.display()))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--log.level=warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("prometheus (installed by scripts/setup.sh)");
            let p = Prometheus {
                child,
                addr: format!("127.0.0.1:{port}").parse().unwrap(),
                _dir: dir,
            };
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(30) {
                if let Ok(r) = std::net::TcpStream::connect(p.addr) {
                    drop(r);
                    if blocking_get(p.addr, "/-/ready").is_some_and(|(s, _)| s == 200) {
                        return p;
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            eprintln!("prometheus attempt {attempt} did not become ready");
        }
        panic!("prometheus did not start");
    }

    /// An instant query through the HTTP API: the result vector.
    async fn query(&self, q: &str) -> Vec<Value> {
        let path = format!("/api/v1/query?query={}", encode(q));
        let r = llm_rum_collector_testkit::client::request(self.addr, "GET", &path, &[], b"")
            .await
            .expect("prometheus query");
        let v = r.json();
        assert_eq!(v["status"], "success", "{q}: {}", r.text());
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// The single value of a query's result, if it has one.
    async fn value(&self, q: &str) -> Option<f64> {
        let r = self.query(q).await;
        r.first()?["value"][1].as_str()?.parse().ok()
    }
}

fn blocking_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let status = out.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, out))
}

/// Percent-encoding for a query parameter.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_collectors_scraped_by_prometheus_agree_with_the_exact_p95() {
    let (da, db_) = (TempDir::new("prom-a"), TempDir::new("prom-b"));
    let a = Proc::spawn(&["--db", da.db().to_str().unwrap(), "--rate-limit", "0"]);
    let b = Proc::spawn(&["--db", db_.db().to_str().unwrap(), "--rate-limit", "0"]);
    let prom = Prometheus::start(&[a.addr, b.addr]);
    // Different traffic at each instance: B is slower, so the p95 of all is neither one's.
    let mut seed = 0x2545_F491u64;
    let mut unit = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut all = Vec::new();
    for (addr, n, scale) in [(a.addr, 600, 200.0), (b.addr, 400, 450.0)] {
        let mut recs = Vec::new();
        for i in 0..n {
            let ttft = scale * (0.2 + 2.0 * unit() * unit());
            let mut r = record(&format!("{}-{i}", addr.port()), recent(), ttft);
            // A route with a quote and a space: label values stay valid text format.
            let route = ["/v1/chat/completions", "/v1/\"odd route\""][i % 2];
            r["url"] = json!(format!("https://api.test{route}"));
            // Even: the stream named the model (GenAI's response model) of a known provider;
            // odd: the app's rule named it (the request model) and its own provider name.
            r["model"] = json!(["gpt-4o", "llama"][i % 2]);
            r["modelSource"] = json!(["stream", "config"][i % 2]);
            r["provider"] = json!(["openai", "our-gateway"][i % 2]);
            r["upstreamBuffered"] = json!(i % 5 == 0);
            all.push(ttft / 1000.0);
            recs.push(r);
        }
        for chunk in recs.chunks(40) {
            assert_eq!(post(addr, beacon(chunk.to_vec()).to_string().as_bytes(), &[]).await.status, 200);
        }
    }
    // Wait (bounded) until a scrape after the last beacon has landed for both.
    let t = Instant::now();
    loop {
        let n = prom.value("sum(llm_rum_answers_total)").await;
        let up = prom.value("count(up == 1)").await;
        if n == Some(1000.0) && up == Some(2.0) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "scrapes: answers {n:?}, up {up:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let est = prom
        .value("histogram_quantile(0.95, sum by (le) (llm_rum_ttft_seconds_bucket))")
        .await
        .expect("a p95");
    all.sort_by(f64::total_cmp);
    let exact = all[(0.95 * all.len() as f64).ceil() as usize - 1];
    // The bucket holding the exact value; histogram_quantile interpolates inside it.
    let i = BUCKETS.iter().position(|b| exact <= *b).expect("within the buckets");
    let (lo, hi) = (if i == 0 { 0.0 } else { BUCKETS[i - 1] }, BUCKETS[i]);
    assert!(
        (est - exact).abs() <= hi - lo && (lo..=hi).contains(&est),
        "Prometheus p95 {est} s vs exact {exact} s (bucket {lo}..{hi})"
    );
    // Per instance, and the collectors' own counters, through the same API.
    assert_eq!(
        prom.query("histogram_quantile(0.95, sum by (le, instance) (llm_rum_ttft_seconds_bucket))").await.len(),
        2
    );
    assert_eq!(prom.value("sum(llm_rum_collector_records_total{result=\"stored\"})").await, Some(1000.0));
    assert_eq!(prom.value("sum(llm_rum_collector_beacons_total{result=\"stored\"})").await, Some(25.0));
    // Upstream buffering counted next to the answers: every 5th of both collectors' records.
    assert_eq!(prom.value("sum(llm_rum_upstream_buffered_answers_total)").await, Some(200.0));
    let routes = prom.query("sum by (route) (llm_rum_answers_total)").await;
    let mut names: Vec<String> = routes.iter().map(|r| r["metric"]["route"].as_str().unwrap().to_string()).collect();
    names.sort();
    assert_eq!(names, ["/v1/%22odd%20route%22", "/v1/chat/completions"]);

    // OpenTelemetry GenAI's histograms: names, the conventions' buckets, labels.
    let ttfc = "gen_ai_client_operation_time_to_first_chunk_seconds";
    let tpoc = "gen_ai_client_operation_time_per_output_chunk_seconds";
    assert_eq!(prom.value(&format!("sum({ttfc}_count)")).await, Some(1000.0));
    let sum = prom.value(&format!("sum({ttfc}_sum)")).await.unwrap();
    let exact_sum: f64 = all.iter().sum();
    assert!((sum - exact_sum).abs() < 1e-6 * exact_sum, "ttfc sum {sum} vs {exact_sum}");
    let bounds = |rows: Vec<Value>| {
        let mut le: Vec<f64> = rows.iter().map(|r| r["metric"]["le"].as_str().unwrap().parse::<f64>().unwrap()).collect();
        le.sort_by(f64::total_cmp);
        le
    };
    let want: Vec<f64> = CHUNK_BUCKETS_S.iter().copied().chain([f64::INFINITY]).collect();
    assert_eq!(bounds(prom.query(&format!("count by (le) ({ttfc}_bucket)")).await), want);
    assert_eq!(bounds(prom.query(&format!("count by (le) ({tpoc}_bucket)")).await), want);
    // The p95 through Prometheus lies in the conventions' bucket holding the exact p95.
    let est = prom.value(&format!("histogram_quantile(0.95, sum by (le) ({ttfc}_bucket))")).await.unwrap();
    let i = CHUNK_BUCKETS_S.iter().position(|b| exact <= *b).unwrap();
    let lo = if i == 0 { 0.0 } else { CHUNK_BUCKETS_S[i - 1] };
    assert!((lo..=CHUNK_BUCKETS_S[i]).contains(&est), "GenAI p95 {est} s vs exact {exact} s");
    let by = prom
        .query(&format!("sum by (gen_ai_operation_name, gen_ai_provider_name, gen_ai_request_model, gen_ai_response_model) ({ttfc}_count)"))
        .await;
    let mut series: Vec<(String, String, String, String, f64)> = by
        .iter()
        .map(|r| {
            let m = |k: &str| r["metric"][k].as_str().unwrap_or("").to_string();
            let v = r["value"][1].as_str().unwrap().parse().unwrap();
            (m("gen_ai_operation_name"), m("gen_ai_provider_name"), m("gen_ai_request_model"), m("gen_ai_response_model"), v)
        })
        .collect();
    series.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        series,
        [
            ("chat".into(), "openai".into(), "".into(), "gpt-4o".into(), 500.0),
            ("chat".into(), "our-gateway".into(), "llama".into(), "".into(), 500.0),
        ]
    );
    // Per chunk: every record's `itl.buckets` (49 gaps: 25 ≤ 10 ms, 20 ≤ 20 ms, 3 ≤ 40 ms,
    // 1 ≤ 80 ms), their sum lastToken − firstToken (500 ms).
    assert_eq!(prom.value(&format!("sum({tpoc}_count)")).await, Some(49_000.0));
    assert_eq!(prom.value(&format!("sum({tpoc}_bucket{{le=\"0.02\"}})")).await, Some(45_000.0));
    let s = prom.value(&format!("sum({tpoc}_sum)")).await.unwrap();
    assert!((s - 500.0).abs() < 1e-6, "per-chunk sum {s} s (1000 answers × 0.5 s)");
    drop(prom);
}

/// The rules for `budget` and the other flags, as `llm-rum-collector rules` prints them.
fn rules(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_llm-rum-collector"))
        .arg("rules")
        .args(args)
        .output()
        .expect("run rules");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn generated_rules_pass_promtool_and_fire_on_a_scripted_breach() {
    let dir = TempDir::new("promtool");
    let y = rules(&[
        "--budget", "ttft p95<=800", "--budget", "perceivedTtft p99<=2500",
        "--alert-window", "300", "--sustain", "600", "--eval-interval", "60000",
    ]);
    let rules_file = dir.0.join("rules.yml");
    std::fs::write(&rules_file, &y).unwrap();
    let check = Command::new(tool("promtool")).arg("check").arg("rules").arg(&rules_file).output().unwrap();
    let said = String::from_utf8_lossy(&check.stdout).to_string() + &String::from_utf8_lossy(&check.stderr);
    assert!(check.status.success(), "promtool check rules:\n{said}\n{y}");
    assert!(said.contains("SUCCESS: 2 rules found"), "{said}");
    // 60 answers a minute: fast (0.2–0.3 s) for 20 min, slow (1.5 s) from 21 to 60, silence to 75,
    // fast again from 76. Cumulative bucket counts, per minute from t = 0 to 100.
    let fast = "0+60x20 1200x54 1260+60x24"; // le 0.3 and up: only the fast ones
    let every = "0+60x20 1260+60x39 3600x14 3660+60x24"; // le 2 and +Inf: all of them
    let series: Vec<String> = [("0.2", "0+0x100"), ("0.3", fast), ("1", fast), ("2", every), ("+Inf", every)]
        .iter()
        .map(|(le, v)| format!("      - series: 'llm_rum_ttft_seconds_bucket{{le=\"{le}\", route=\"/v1/chat\", instance=\"a\"}}'\n        values: '{v}'\n"))
        .collect();
    let alert = "LlmRumTtftP95Over800ms";
    let at = |m: u32, firing: bool| {
        format!(
            "      - eval_time: {m}m\n        alertname: {alert}\n        exp_alerts:{}\n",
            if firing {
                "\n          - exp_labels:\n              budget: \"ttft p95<=800\"\n            exp_annotations:\n              \
                 summary: \"ttft p95 over 300s is above 800 ms across all collectors\"\n"
            } else {
                " []\n"
            }
        )
    };
    let test = format!(
        "rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n{}    alert_rule_test:\n{}{}{}{}{}{}",
        series.concat(),
        at(19, false), // healthy
        at(29, false), // breaching since 21 m: pending, not yet sustained for 10 min
        at(35, true),  // sustained: firing
        at(70, true),  // silence since 60 m (no answers in the window): the state holds
        at(80, false), // fast answers again: resolved at the first evaluation under the limit
        "",
    );
    std::fs::write(dir.0.join("test.yml"), &test).unwrap();
    let run = Command::new(tool("promtool"))
        .current_dir(&dir.0)
        .args(["test", "rules", "test.yml"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&run.stdout).to_string() + &String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "promtool test rules:\n{said}\n{test}\n{y}");
    assert!(said.contains("SUCCESS"), "{said}");
    // And the same test fails when it expects the wrong thing (the check can fail).
    std::fs::write(dir.0.join("wrong.yml"), test.replace(&at(35, true), &at(35, false))).unwrap();
    let wrong = Command::new(tool("promtool"))
        .current_dir(&dir.0)
        .args(["test", "rules", "wrong.yml"])
        .output()
        .unwrap();
    assert!(!wrong.status.success(), "promtool accepted a wrong expectation");
    // Budgets Prometheus cannot evaluate are refused, naming why.
    let out = Command::new(env!("CARGO_BIN_EXE_llm-rum-collector"))
        .args(["rules", "--budget", "stalls.count p95<=2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no histogram"));
}
