//! Command line and config file.
//!
//! The config file uses the flags' own names, one per line without the dashes
//! (`budget perceivedTtft p95<=1000`, `allow-origin http://127.0.0.1:8080`), `#` comments.
//! One vocabulary for both; command-line values are applied after the file (repeatable flags
//! add to the file's, single-valued ones override it).

use std::path::PathBuf;

use crate::alerts::{parse_budget, Budget};
use crate::proxy::Cidr;
use crate::store::Sync;

pub const HELP: &str = "\
llm-rum-collector: stores llm-rum beacons in SQLite, answers percentiles, fires alerts.

USAGE: llm-rum-collector [OPTIONS]
       llm-rum-collector rules [OPTIONS]   print Prometheus alerting rules equivalent to the
                                           --budget flags (see README)

  --listen ADDR          address to listen on (default 127.0.0.1:4319; port 0 = any free port).
                         Prints `listening on http://ADDR` once ready.
  --db PATH              SQLite database file (default ./llm-rum.db; created if missing)
  --allow-origin ORIGIN  origin allowed to send beacons cross-origin (repeatable; `*` = any,
                         answered without credentials). Requests without Origin, or from the
                         collector's own origin (--public-url or the listen address), pass.
  --public-url URL       where people open the dashboard, e.g. https://rum.example.com/ (its
                         origin is the collector's own, next to the listen address)
  --read-token TOKEN     protect the API (/api/*): `Authorization: Bearer TOKEN` or `?token=TOKEN`;
                         open the dashboard as /?token=TOKEN
  --budget 'METRIC pQ<=MS [model=NAME]'  a budget, e.g. 'perceivedTtft p95<=1000' or
                         'ttft p95<=800 model=gpt-4o' (one model's answers; repeatable)
  --alert-window SECS    sliding window of the budget percentile (default 300)
  --sustain SECS         how long a breach must last before the alert fires (default 1800)
  --eval-interval MS     how often budgets are evaluated (default 1000)
  --rate-limit N         beacons per second per client IP, burst N (default 100; 0 = off)
  --sync full|normal     commit durability: full survives power loss, normal (WAL) survives a
                         crash or kill -9 of the process (default full)
  --retain-days N        delete records received more than N days ago (default 30; fractions
                         allowed; 0 = keep everything)
  --trusted-proxy CIDR   a reverse proxy whose X-Forwarded-For is believed, for the rate limit
                         and the logs (repeatable; e.g. 127.0.0.1/32, 10.0.0.0/8)
  --header-timeout SECS  a request's headers must arrive within this (default 10)
  --body-timeout SECS    a request's body must arrive within this (default 10)
  --idle-timeout SECS    an idle keep-alive connection is closed after this (default 60)
  --max-connections N    open connections at most (default 1024, lowered to fit the open-file
                         limit); past it, the connection idle the longest makes room
  --query-budget SECS    a dashboard/API read taking longer is stopped and answered 503
                         (default 5)
  --read-connections N   read connections for the API (default 4; the alert engine has one
                         more of its own)
  --metrics-route ROUTE  a route that gets its own label on /metrics (repeatable); when none
                         is given, the first --metrics-max-routes routes seen do. Others: `other`
  --metrics-model MODEL  the same for models
  --metrics-max-routes N routes labelled on /metrics without --metrics-route (default 10)
  --metrics-max-models N models labelled on /metrics without --metrics-model (default 5)
  --config FILE          read options from FILE: one `name value` per line, the flags above
                         without dashes, `#` comments
  --help                 this text

Logs go to stderr (level from RUST_LOG, default info; e.g. RUST_LOG=debug).
";

#[derive(Debug, Clone)]
pub struct Config {
    pub listen: String,
    pub db: PathBuf,
    pub allow_origins: Vec<String>,
    pub read_token: Option<String>,
    pub budgets: Vec<Budget>,
    pub alert_window_s: f64,
    pub sustain_s: f64,
    pub eval_interval_ms: u64,
    pub rate_limit: u32,
    pub sync: Sync,
    /// The origin (`scheme://host[:port]`) of `--public-url`.
    pub public_origin: Option<String>,
    /// 0: keep everything.
    pub retain_days: f64,
    pub trusted_proxies: Vec<Cidr>,
    pub header_timeout_s: f64,
    pub body_timeout_s: f64,
    pub idle_timeout_s: f64,
    pub max_connections: usize,
    pub query_budget_s: f64,
    pub read_connections: usize,
    /// Label allowlists for /metrics (empty: the first `metrics_max_*` seen).
    pub metrics_routes: Vec<String>,
    pub metrics_models: Vec<String>,
    pub metrics_max_routes: usize,
    pub metrics_max_models: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "127.0.0.1:4319".into(),
            db: "./llm-rum.db".into(),
            allow_origins: Vec::new(),
            read_token: None,
            budgets: Vec::new(),
            alert_window_s: 300.0,
            sustain_s: 1800.0,
            eval_interval_ms: 1000,
            rate_limit: 100,
            sync: Sync::Full,
            public_origin: None,
            retain_days: 30.0,
            trusted_proxies: Vec::new(),
            header_timeout_s: 10.0,
            body_timeout_s: 10.0,
            idle_timeout_s: 60.0,
            max_connections: 1024,
            query_budget_s: 5.0,
            read_connections: 4,
            metrics_routes: Vec::new(),
            metrics_models: Vec::new(),
            metrics_max_routes: 10,
            metrics_max_models: 5,
        }
    }
}

pub enum Parsed {
    Run(Config),
    Help,
}

/// Parses arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--help" || a == "-h" {
            return Ok(Parsed::Help);
        }
        let Some(flag) = a.strip_prefix("--") else {
            return Err(format!("unexpected argument {a:?} (see --help)"));
        };
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None => {
                i += 1;
                let v = args
                    .get(i)
                    .ok_or_else(|| format!("--{flag} needs a value"))?;
                (flag.to_string(), v.clone())
            }
        };
        pairs.push((name, value));
        i += 1;
    }
    let mut cfg = Config::default();
    // The file first, so the command line wins.
    for (n, v) in pairs.iter().filter(|(n, _)| n == "config") {
        let text = std::fs::read_to_string(v).map_err(|e| format!("--config {v}: {e}"))?;
        for (ln, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, val) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            if k == "config" {
                return Err(format!("{v}:{}: config files do not nest", ln + 1));
            }
            apply(&mut cfg, k, val.trim()).map_err(|e| format!("{v}:{}: {e} ({n})", ln + 1))?;
        }
    }
    for (n, v) in pairs.iter().filter(|(n, _)| n != "config") {
        apply(&mut cfg, n, v)?;
    }
    Ok(Parsed::Run(cfg))
}

fn apply(cfg: &mut Config, name: &str, v: &str) -> Result<(), String> {
    let secs = |v: &str| -> Result<f64, String> {
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
            _ => Err(format!(
                "--{name}: expected a positive number of seconds, got {v:?}"
            )),
        }
    };
    let count = |v: &str| -> Result<usize, String> {
        v.parse::<usize>()
            .ok()
            .filter(|n| *n > 0 && *n <= 10_000)
            .ok_or(format!("--{name}: expected a number 1..10000, got {v:?}"))
    };
    match name {
        "listen" => cfg.listen = v.into(),
        "db" => cfg.db = v.into(),
        "allow-origin" => cfg.allow_origins.push(v.trim_end_matches('/').into()),
        "read-token" if !v.is_empty() => cfg.read_token = Some(v.into()),
        "read-token" => return Err("--read-token: must not be empty".into()),
        "budget" => cfg.budgets.push(parse_budget(v)?),
        "alert-window" => cfg.alert_window_s = secs(v)?,
        "sustain" => cfg.sustain_s = secs(v)?,
        "eval-interval" => {
            cfg.eval_interval_ms = v
                .parse()
                .ok()
                .filter(|x| *x > 0)
                .ok_or(format!("--eval-interval: bad value {v:?}"))?
        }
        "rate-limit" => {
            cfg.rate_limit = v
                .parse()
                .map_err(|_| format!("--rate-limit: bad value {v:?}"))?
        }
        "public-url" => cfg.public_origin = Some(origin_of(v)?),
        "retain-days" => {
            cfg.retain_days = match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => x,
                _ => {
                    return Err(format!(
                        "--retain-days: expected a number of days ≥ 0, got {v:?}"
                    ))
                }
            }
        }
        "trusted-proxy" => cfg.trusted_proxies.push(Cidr::parse(v)?),
        "header-timeout" => cfg.header_timeout_s = secs(v)?,
        "body-timeout" => cfg.body_timeout_s = secs(v)?,
        "idle-timeout" => cfg.idle_timeout_s = secs(v)?,
        "max-connections" => {
            cfg.max_connections = v.parse().ok().filter(|n| *n > 0).ok_or(format!(
                "--max-connections: expected a positive number, got {v:?}"
            ))?
        }
        "query-budget" => cfg.query_budget_s = secs(v)?,
        "read-connections" => cfg.read_connections = count(v)?,
        "metrics-route" => cfg.metrics_routes.push(crate::keys::safe_key(v, 512)),
        "metrics-model" => cfg.metrics_models.push(crate::keys::safe_key(v, 256)),
        "metrics-max-routes" => cfg.metrics_max_routes = count(v)?,
        "metrics-max-models" => cfg.metrics_max_models = count(v)?,
        "sync" => {
            cfg.sync = match v {
                "full" => Sync::Full,
                "normal" => Sync::Normal,
                _ => return Err(format!("--sync: expected full or normal, got {v:?}")),
            }
        }
        _ => return Err(format!("unknown option --{name} (see --help)")),
    }
    Ok(())
}

/// `https://rum.example.com/dash?x` → `https://rum.example.com` (lower-case scheme and host,
/// the port kept unless it is the scheme's default): how a browser writes the `Origin` header.
pub fn origin_of(url: &str) -> Result<String, String> {
    let bad = || format!("--public-url: expected like https://rum.example.com/, got {url:?}");
    let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(bad());
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || host.contains('@') {
        return Err(bad());
    }
    let host = host.to_ascii_lowercase();
    let default_port = if scheme == "http" { ":80" } else { ":443" };
    let host = host.strip_suffix(default_port).unwrap_or(&host);
    Ok(format!("{scheme}://{host}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Config {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&a).unwrap() {
            Parsed::Run(c) => c,
            Parsed::Help => panic!("help"),
        }
    }

    #[test]
    fn new_flags_parse_and_validate() {
        let c = run(&[
            "--public-url",
            "HTTPS://Rum.Example.com:443/dash?x=1",
            "--retain-days",
            "0.5",
            "--trusted-proxy",
            "10.0.0.0/8",
            "--trusted-proxy",
            "::1",
            "--header-timeout",
            "2",
            "--max-connections",
            "64",
        ]);
        assert_eq!(c.public_origin.as_deref(), Some("https://rum.example.com"));
        assert_eq!((c.retain_days, c.trusted_proxies.len()), (0.5, 2));
        assert_eq!((c.header_timeout_s, c.max_connections), (2.0, 64));
        let d = Config::default();
        assert_eq!(
            (
                d.retain_days,
                d.header_timeout_s,
                d.body_timeout_s,
                d.idle_timeout_s
            ),
            (30.0, 10.0, 10.0, 60.0)
        );
        for bad in [
            &["--public-url", "rum.example.com"][..],
            &["--public-url", "ftp://x"],
            &["--retain-days", "-1"],
            &["--trusted-proxy", "10.0.0.0/33"],
            &["--trusted-proxy", "example.com"],
            &["--max-connections", "0"],
            &["--header-timeout", "0"],
        ] {
            let a: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
            assert!(parse(&a).is_err(), "{bad:?}");
        }
        assert_eq!(
            origin_of("http://127.0.0.1:4319/").unwrap(),
            "http://127.0.0.1:4319"
        );
        assert_eq!(origin_of("http://h:80").unwrap(), "http://h");
    }
}
