//! Command line and config file.
//!
//! The config file uses the flags' own names, one per line without the dashes
//! (`budget perceivedTtft p95<=1000`, `allow-origin http://127.0.0.1:8080`), `#` comments.
//! One vocabulary for both; command-line values are applied after the file (repeatable flags
//! add to the file's, single-valued ones override it).

use std::path::PathBuf;

use crate::alerts::{parse_budget, Budget};
use crate::store::Sync;

pub const HELP: &str = "\
llm-rum-collector: stores llm-rum beacons in SQLite, answers percentiles, fires alerts.

USAGE: llm-rum-collector [OPTIONS]

  --listen ADDR          address to listen on (default 127.0.0.1:4319; port 0 = any free port).
                         Prints `listening on http://ADDR` once ready.
  --db PATH              SQLite database file (default ./llm-rum.db; created if missing)
  --allow-origin ORIGIN  origin allowed to send beacons cross-origin (repeatable; `*` = any).
                         Requests without Origin, or from the collector's own origin, always pass.
  --read-token TOKEN     protect reads (/, /api/*): `Authorization: Bearer TOKEN` or `?token=TOKEN`
  --budget 'METRIC pQ<=MS'  a budget, e.g. 'perceivedTtft p95<=1000' (repeatable)
  --alert-window SECS    sliding window of the budget percentile (default 300)
  --sustain SECS         how long a breach must last before the alert fires (default 1800)
  --eval-interval MS     how often budgets are evaluated (default 1000)
  --rate-limit N         beacons per second per client IP, burst N (default 100; 0 = off)
  --sync full|normal     commit durability: full survives power loss, normal (WAL) survives a
                         crash or kill -9 of the process (default full)
  --config FILE          read options from FILE: one `name value` per line, the flags above
                         without dashes, `#` comments
  --help                 this text
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
