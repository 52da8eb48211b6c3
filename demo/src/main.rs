//! llm-rum-demo: the scripted LLM server behind llm-rum's end-to-end tests, benchmarks and
//! demo page. See README.md beside Cargo.toml for endpoints and parameters.
//!
//! Owner of this file: the command line, binding the listeners, and shutdown.
//!
//! ```text
//! llm-rum-demo [--listen 127.0.0.1:PORT]... [--static PREFIX=DIR]... [--slots N] [--nginx SERVER]
//! ```
//! Each `--listen` is one origin (cross-origin tests use two). Port 0 picks a free port; after
//! binding, one line per listener `listening on http://127.0.0.1:PORT` goes to stdout.
//! `--nginx` then starts a real nginx in front of the first listener (`nginx.rs`: SERVER is
//! its `server {}` block body, `UPSTREAM` standing for this server) and prints
//! `nginx on http://127.0.0.1:PORT`; it is stopped with the server.

use llm_rum_demo::http::{router, App};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

const USAGE: &str =
    "usage: llm-rum-demo [--listen 127.0.0.1:PORT]... [--static PREFIX=DIR]... [--slots N] [--nginx SERVER-BLOCK-BODY]";

struct Config {
    listen: Vec<String>,
    mounts: Vec<(String, PathBuf)>,
    slots: usize,
    nginx: Option<String>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Config, String> {
    let mut cfg = Config {
        listen: Vec::new(),
        mounts: Vec::new(),
        slots: 4,
        nginx: None,
    };
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        // Accept both `--flag value` and `--flag=value`.
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or(format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--listen" => cfg.listen.push(value()?),
            "--static" => {
                let v = value()?;
                let (prefix, dir) = v
                    .split_once('=')
                    .ok_or(format!("--static wants PREFIX=DIR, got {v:?}"))?;
                if !prefix.starts_with('/') {
                    return Err(format!("--static prefix must start with /: {prefix:?}"));
                }
                if !std::path::Path::new(dir).is_dir() {
                    eprintln!("llm-rum-demo: warning: static dir {dir:?} does not exist (yet)");
                }
                cfg.mounts.push((prefix.to_string(), PathBuf::from(dir)));
            }
            "--slots" => {
                let v = value()?;
                cfg.slots = v
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or(format!("--slots wants a positive integer, got {v:?}"))?;
            }
            "--nginx" => cfg.nginx = Some(value()?),
            "-h" | "--help" => return Err(USAGE.to_string()),
            _ => return Err(format!("unknown argument {a:?}\n{USAGE}")),
        }
    }
    if cfg.listen.is_empty() {
        cfg.listen.push("127.0.0.1:8080".to_string());
    }
    Ok(cfg)
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

fn main() {
    let cfg = match parse_args(std::env::args().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    // Two worker threads: the machine has two cores, and timer precision matters more than
    // throughput here.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = rt.block_on(run(cfg));
    // Do not wait for streams still running after the grace period.
    rt.shutdown_timeout(Duration::from_millis(100));
    std::process::exit(code);
}

async fn run(cfg: Config) -> i32 {
    llm_rum_demo::timer::start();
    let app = App::new(cfg.slots, cfg.mounts);
    let router = router(app);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut servers = Vec::new();
    let mut bound: Vec<String> = Vec::new();
    for addr in &cfg.listen {
        let listener = match tokio::net::TcpListener::bind(addr.as_str()).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("llm-rum-demo: cannot listen on {addr}: {e}");
                return 1;
            }
        };
        let local = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| addr.clone());
        println!("listening on http://{local}");
        let _ = std::io::stdout().flush();
        servers.push(tokio::spawn(llm_rum_demo::serve(
            listener,
            router.clone(),
            stop_rx.clone(),
        )));
        bound.push(local);
    }
    // Started on this (the main) thread: nginx dies with it (see nginx.rs), and with `_nginx`.
    let _nginx = match (&cfg.nginx, bound.first().and_then(|a| a.parse().ok())) {
        (Some(body), Some(upstream)) => match llm_rum_demo::nginx::Nginx::start(upstream, body) {
            Ok(n) => {
                println!("nginx on http://{}", n.addr);
                let _ = std::io::stdout().flush();
                Some(n)
            }
            Err(e) => {
                eprintln!("llm-rum-demo: {e}");
                return 1;
            }
        },
        _ => None,
    };
    shutdown_signal().await;
    eprintln!("llm-rum-demo: shutting down");
    let _ = stop_tx.send(true);
    // Graceful: stop accepting, let in-flight responses finish, but not for long.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
    for s in servers {
        let _ = tokio::time::timeout_at(deadline, s).await;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Config, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn cli() {
        let c = p(&[]).unwrap();
        assert_eq!(c.listen, vec!["127.0.0.1:8080"]);
        assert_eq!(c.slots, 4);
        let c = p(&[
            "--listen",
            "127.0.0.1:0",
            "--listen=127.0.0.1:0",
            "--static",
            "/=/tmp",
            "--static=/dist=/tmp",
            "--slots",
            "2",
        ])
        .unwrap();
        assert_eq!(c.listen.len(), 2);
        assert_eq!(c.mounts[0].0, "/");
        assert_eq!(c.mounts[1], ("/dist".to_string(), PathBuf::from("/tmp")));
        assert_eq!(c.slots, 2);
        assert!(p(&["--slots", "0"]).is_err());
        assert!(p(&["--static", "dist"]).is_err());
        assert!(p(&["--bogus"]).is_err());
        assert!(p(&["--listen"]).is_err());
        assert_eq!(p(&["--nginx", "location / {}"]).unwrap().nginx.as_deref(), Some("location / {}"));
    }
}
