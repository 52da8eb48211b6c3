//! Command line and config file, on `clap` (derive): the flags are declared once, with their
//! help and their checks, below (`Flags`).
//!
//! The config file uses the flags' own names, one per line without the dashes
//! (`budget perceivedTtft p95<=1000`, `allow-origin http://127.0.0.1:8080`), `#` comments.
//! One vocabulary for both: each line becomes its flag, checked alone (an error names the
//! line), and the file's flags come before the command line's (repeatable flags add to the
//! file's, single-valued ones override it).

use std::path::PathBuf;

use clap::{CommandFactory, Parser};

use crate::alerts::{parse_budget, Budget};
use crate::serve::proxy::Cidr;

/// The flags. Their doc comments are `--help`'s text.
#[derive(Parser, Debug)]
#[command(
    name = "llm-rum-collector",
    about = "llm-rum-collector: stores llm-rum beacons (SQLite, or ClickHouse past one machine), answers percentiles, fires alerts.",
    override_usage = "llm-rum-collector [OPTIONS]\n       llm-rum-collector rules [OPTIONS]   print Prometheus alerting rules equivalent to the --budget flags (see README)",
    after_help = "Logs go to stderr (level from RUST_LOG, default info; e.g. RUST_LOG=debug).",
    args_override_self = true,
    disable_version_flag = true
)]
struct Flags {
    /// Address to listen on (default 127.0.0.1:4319; port 0 = any free port). Prints
    /// `listening on http://ADDR` once ready
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// SQLite database file (default ./llm-rum.db; created if missing)
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// The store: `sqlite` (default: the --db file) or
    /// clickhouse://[USER[:PASSWORD]@]HOST:PORT/DATABASE (ClickHouse's HTTP port; the database
    /// and tables are created at start)
    #[arg(long, value_name = "URL", value_parser = store)]
    store: Option<StoreArg>,
    /// ClickHouse only: where beacons acknowledged while ClickHouse cannot take them wait
    /// (default ./llm-rum-spool)
    #[arg(long, value_name = "DIR")]
    spool: Option<PathBuf>,
    /// ClickHouse only: the spool's bound; past it ingest answers 503 with Retry-After
    /// (default 1024)
    #[arg(long = "spool-max-mb", value_name = "N", value_parser = positive)]
    spool_max_mb: Option<f64>,
    /// Origin allowed to send beacons cross-origin (repeatable; `*` = any, answered without
    /// credentials). Requests without Origin, or from the collector's own origin (--public-url
    /// or the listen address), pass
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// Where people open the dashboard, e.g. https://rum.example.com/ (its origin is the
    /// collector's own, next to the listen address)
    #[arg(long = "public-url", value_name = "URL", value_parser = origin_of)]
    public_url: Option<String>,
    /// Protect the API (/api/*): `Authorization: Bearer TOKEN` or `?token=TOKEN`; open the
    /// dashboard as /?token=TOKEN
    #[arg(long = "read-token", value_name = "TOKEN", value_parser = token)]
    read_token: Option<String>,
    /// A budget, e.g. 'perceivedTtft p95<=1000' or 'ttft p95<=800 model=gpt-4o' (repeatable)
    #[arg(long, value_name = "'METRIC pQ<=MS'", value_parser = parse_budget)]
    budget: Vec<Budget>,
    /// Sliding window of the budget percentile, seconds (default 300)
    #[arg(long = "alert-window", value_name = "SECS", value_parser = secs)]
    alert_window: Option<f64>,
    /// How long a breach must last before the alert fires, seconds (default 1800)
    #[arg(long, value_name = "SECS", value_parser = secs)]
    sustain: Option<f64>,
    /// How often budgets are evaluated, ms (default 1000)
    #[arg(long = "eval-interval", value_name = "MS", value_parser = positive_int)]
    eval_interval: Option<u64>,
    /// Beacons per second per client IP, burst N (default 100; 0 = off)
    #[arg(long = "rate-limit", value_name = "N")]
    rate_limit: Option<u32>,
    /// Commit durability: full survives power loss, normal (WAL) survives a crash or kill -9
    /// of the process (default full)
    #[arg(long, value_name = "full|normal", value_parser = sync)]
    sync: Option<Sync>,
    /// Delete records received more than N days ago (default 30; fractions allowed; 0 = keep
    /// everything)
    #[arg(long = "retain-days", value_name = "N", value_parser = days)]
    retain_days: Option<f64>,
    /// A reverse proxy whose X-Forwarded-For is believed, for the rate limit and the logs
    /// (repeatable; e.g. 127.0.0.1/32, 10.0.0.0/8)
    #[arg(long = "trusted-proxy", value_name = "CIDR", value_parser = Cidr::parse)]
    trusted_proxy: Vec<Cidr>,
    /// A request's headers must arrive within this, seconds (default 10)
    #[arg(long = "header-timeout", value_name = "SECS", value_parser = secs)]
    header_timeout: Option<f64>,
    /// A request's body must arrive within this, seconds (default 10)
    #[arg(long = "body-timeout", value_name = "SECS", value_parser = secs)]
    body_timeout: Option<f64>,
    /// An idle keep-alive connection is closed after this, seconds (default 60)
    #[arg(long = "idle-timeout", value_name = "SECS", value_parser = secs)]
    idle_timeout: Option<f64>,
    /// Open connections at most (default 1024, lowered to fit the open-file limit); past it,
    /// the connection idle the longest makes room
    #[arg(long = "max-connections", value_name = "N", value_parser = positive_usize)]
    max_connections: Option<usize>,
    /// A dashboard/API read taking longer is stopped and answered 503, seconds (default 5)
    #[arg(long = "query-budget", value_name = "SECS", value_parser = secs)]
    query_budget: Option<f64>,
    /// Read connections for the API (default 4; the alert engine has one more of its own)
    #[arg(long = "read-connections", value_name = "N", value_parser = count)]
    read_connections: Option<usize>,
    /// A route that gets its own label on /metrics (repeatable); when none is given, the first
    /// --metrics-max-routes routes seen do. Others: `other`
    #[arg(long = "metrics-route", value_name = "ROUTE")]
    metrics_route: Vec<String>,
    /// The same for models
    #[arg(long = "metrics-model", value_name = "MODEL")]
    metrics_model: Vec<String>,
    /// Routes labelled on /metrics without --metrics-route (default 10)
    #[arg(long = "metrics-max-routes", value_name = "N", value_parser = count)]
    metrics_max_routes: Option<usize>,
    /// Models labelled on /metrics without --metrics-model (default 5)
    #[arg(long = "metrics-max-models", value_name = "N", value_parser = count)]
    metrics_max_models: Option<usize>,
    /// Read options from FILE: one `name value` per line, the flags above without dashes, `#`
    /// comments (repeatable)
    #[arg(long, value_name = "FILE")]
    config: Vec<String>,
}

/// `--store`: SQLite, or a ClickHouse target.
#[derive(Debug, Clone)]
enum StoreArg {
    Sqlite,
    ClickHouse(crate::store::clickhouse::http::Target),
}

fn store(v: &str) -> Result<StoreArg, String> {
    if v == "sqlite" {
        Ok(StoreArg::Sqlite)
    } else {
        crate::store::clickhouse::http::Target::parse(v).map(StoreArg::ClickHouse)
    }
}

fn secs(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("expected a positive number of seconds, got {v:?}")),
    }
}

fn positive(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("expected a positive number, got {v:?}")),
    }
}

fn days(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("expected a number of days ≥ 0, got {v:?}")),
    }
}

fn positive_int(v: &str) -> Result<u64, String> {
    v.parse().ok().filter(|x| *x > 0).ok_or(format!("bad value {v:?}"))
}

fn positive_usize(v: &str) -> Result<usize, String> {
    v.parse().ok().filter(|n| *n > 0).ok_or(format!("expected a positive number, got {v:?}"))
}

fn count(v: &str) -> Result<usize, String> {
    v.parse::<usize>()
        .ok()
        .filter(|n| *n > 0 && *n <= 10_000)
        .ok_or(format!("expected a number 1..10000, got {v:?}"))
}

fn token(v: &str) -> Result<String, String> {
    if v.is_empty() {
        Err("must not be empty".into())
    } else {
        Ok(v.into())
    }
}

fn sync(v: &str) -> Result<Sync, String> {
    match v {
        "full" => Ok(Sync::Full),
        "normal" => Ok(Sync::Normal),
        _ => Err(format!("expected full or normal, got {v:?}")),
    }
}

/// `--help`'s text.
pub fn help() -> String {
    Flags::command().render_help().to_string()
}

/// How durable a commit is. `Full` survives power loss; `Normal` (WAL) survives a process
/// crash/kill -9 but may lose the last commits on power loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sync {
    Full,
    Normal,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub listen: String,
    pub db: PathBuf,
    /// `--store clickhouse://…`; None: SQLite at `db`.
    pub clickhouse: Option<crate::store::clickhouse::http::Target>,
    pub spool: PathBuf,
    pub spool_max_mb: f64,
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
            clickhouse: None,
            spool: "./llm-rum-spool".into(),
            spool_max_mb: 1024.0,
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
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(Parsed::Help);
    }
    let run = |argv: &[String]| {
        Flags::try_parse_from(std::iter::once("llm-rum-collector".to_string()).chain(argv.iter().cloned()))
            .map_err(|e| e.render().to_string().trim().trim_start_matches("error: ").to_string())
    };
    // The files first (so the command line wins), each line checked on its own.
    let mut argv: Vec<String> = Vec::new();
    for file in run(args)?.config {
        let text = std::fs::read_to_string(&file).map_err(|e| format!("--config {file}: {e}"))?;
        for (ln, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, val) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            if k == "config" {
                return Err(format!("{file}:{}: config files do not nest", ln + 1));
            }
            let pair = [format!("--{k}"), val.trim().to_string()];
            run(&pair).map_err(|e| format!("{file}:{}: {e}", ln + 1))?;
            argv.extend(pair);
        }
    }
    argv.extend(args.iter().cloned());
    let f = run(&argv)?;
    let mut cfg = Config::default();
    let set = |slot: &mut f64, v: Option<f64>| {
        if let Some(v) = v {
            *slot = v;
        }
    };
    cfg.listen = f.listen.unwrap_or(cfg.listen);
    cfg.db = f.db.unwrap_or(cfg.db);
    match f.store {
        Some(StoreArg::Sqlite) => cfg.clickhouse = None,
        Some(StoreArg::ClickHouse(t)) => cfg.clickhouse = Some(t),
        None => {}
    }
    cfg.spool = f.spool.unwrap_or(cfg.spool);
    set(&mut cfg.spool_max_mb, f.spool_max_mb);
    cfg.allow_origins = f.allow_origin.iter().map(|o| o.trim_end_matches('/').to_string()).collect();
    cfg.public_origin = f.public_url.or(cfg.public_origin);
    cfg.read_token = f.read_token.or(cfg.read_token);
    cfg.budgets = f.budget;
    set(&mut cfg.alert_window_s, f.alert_window);
    set(&mut cfg.sustain_s, f.sustain);
    cfg.eval_interval_ms = f.eval_interval.unwrap_or(cfg.eval_interval_ms);
    cfg.rate_limit = f.rate_limit.unwrap_or(cfg.rate_limit);
    cfg.sync = f.sync.unwrap_or(cfg.sync);
    set(&mut cfg.retain_days, f.retain_days);
    cfg.trusted_proxies = f.trusted_proxy;
    set(&mut cfg.header_timeout_s, f.header_timeout);
    set(&mut cfg.body_timeout_s, f.body_timeout);
    set(&mut cfg.idle_timeout_s, f.idle_timeout);
    cfg.max_connections = f.max_connections.unwrap_or(cfg.max_connections);
    set(&mut cfg.query_budget_s, f.query_budget);
    cfg.read_connections = f.read_connections.unwrap_or(cfg.read_connections);
    cfg.metrics_routes = f.metrics_route.iter().map(|r| crate::ingest::keys::safe_key(r, 512)).collect();
    cfg.metrics_models = f.metrics_model.iter().map(|m| crate::ingest::keys::safe_key(m, 256)).collect();
    cfg.metrics_max_routes = f.metrics_max_routes.unwrap_or(cfg.metrics_max_routes);
    cfg.metrics_max_models = f.metrics_max_models.unwrap_or(cfg.metrics_max_models);
    Ok(Parsed::Run(cfg))
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

    #[test]
    fn the_config_file_comes_first_and_the_command_line_wins() {
        let dir = std::env::temp_dir().join(format!("llm-rum-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("collector.conf");
        std::fs::write(
            &file,
            "# comment\nlisten 127.0.0.1:9999\nbudget ttft p95<=800\nallow-origin http://a.example/\nsustain 60\n\nstore clickhouse://127.0.0.1:8123/rum\n",
        )
        .unwrap();
        let f = file.to_str().unwrap();
        let c = run(&["--config", f, "--sustain", "30", "--budget", "perceivedTtft p95<=1000", "--allow-origin=http://b.example"]);
        assert_eq!(c.listen, "127.0.0.1:9999");
        assert_eq!(c.sustain_s, 30.0, "single-valued: the command line overrides the file");
        let budgets: Vec<&str> = c.budgets.iter().map(|b| b.text.as_str()).collect();
        assert_eq!(budgets, ["ttft p95<=800", "perceivedTtft p95<=1000"], "repeatable: the file's, then the command line's");
        assert_eq!(c.allow_origins, ["http://a.example", "http://b.example"]);
        assert_eq!(c.clickhouse.as_ref().map(|t| t.database.as_str()), Some("rum"));
        assert!(run(&["--config", f, "--store", "sqlite"]).clickhouse.is_none());
        std::fs::write(&file, "sustain 60\nsustain x\n").unwrap();
        let e = parse(&["--config".to_string(), f.to_string()]).err().unwrap();
        assert!(e.starts_with(&format!("{f}:2: ")) && e.contains("--sustain"), "{e}");
        std::fs::write(&file, "config other.conf\n").unwrap();
        assert!(parse(&["--config".to_string(), f.to_string()]).err().unwrap().contains("do not nest"));
        assert!(parse(&["--bogus".to_string()]).is_err());
        assert!(matches!(parse(&["--help".to_string()]), Ok(Parsed::Help)));
        assert!(help().contains("--spool-max-mb"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
