//! ClickHouse's HTTP interface (port 8123): one statement per POST, the SQL in `?query=`, an
//! insert's rows (`JSONEachRow`) in the body, a read's answer as `JSONCompact`.
//!
//! Over hyper's client, the HTTP stack the collector already serves with, rather than the
//! official `clickhouse` crate: since 0.14 that crate reads with `RowBinaryWithNamesAndTypes`,
//! a format ClickHouse 18.16 (Debian's, the version tested here) does not have, and it would
//! add its own HTTP and compression stack for what is a POST and a JSON body.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;

/// Where the store lives: `clickhouse://[USER[:PASSWORD]@]HOST:PORT/DATABASE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// `http://HOST:PORT`
    pub base: String,
    pub database: String,
    /// `Authorization: Basic …` when the URL names a user.
    pub auth: Option<String>,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, String> {
        let bad = |why: &str| {
            format!("--store {url:?}: {why} (expected clickhouse://[USER[:PASSWORD]@]HOST:PORT/DATABASE)")
        };
        let rest = url
            .strip_prefix("clickhouse://")
            .ok_or_else(|| bad("not a clickhouse:// URL"))?;
        let (authority, database) = rest.split_once('/').ok_or_else(|| bad("no database"))?;
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if hostport.is_empty() || !hostport.contains(':') {
            return Err(bad("HOST:PORT required"));
        }
        // The database name goes into SQL unquoted: ClickHouse's identifier characters only.
        if database.is_empty()
            || !database
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            || database.as_bytes()[0].is_ascii_digit()
        {
            return Err(bad("the database name must be letters, digits and _"));
        }
        let auth = userinfo.map(|u| {
            let (user, pass) = u.split_once(':').unwrap_or((u, ""));
            {
                use base64::Engine;
                let b = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
                format!("Basic {b}")
            }
        });
        Ok(Target {
            base: format!("http://{hostport}"),
            database: database.to_string(),
            auth,
        })
    }
}

/// Why a statement did not succeed.
#[derive(Debug, Clone)]
pub enum ChError {
    /// No answer within the timeout (the statement may still run, or have run).
    Timeout,
    /// Not reachable, or the connection broke.
    Io(String),
    /// ClickHouse answered with an error (its message).
    Server(u16, String),
}

impl std::fmt::Display for ChError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChError::Timeout => write!(f, "ClickHouse did not answer in time"),
            ChError::Io(e) => write!(f, "ClickHouse unreachable: {e}"),
            ChError::Server(s, m) => write!(f, "ClickHouse error ({s}): {}", m.trim()),
        }
    }
}

#[derive(Clone)]
pub struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
    pub target: Target,
}

/// A string as a ClickHouse SQL literal: quoted, backslash and quote escaped (its lexer reads
/// to the first unescaped quote). Values from the API's filters pass through here only.
pub fn lit(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('\'');
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '\'' => o.push_str("\\'"),
            '\0' => o.push_str("\\0"),
            c => o.push(c),
        }
    }
    o.push('\'');
    o
}

/// Percent-encodes a query-string value.
fn enc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

impl Http {
    pub fn new(target: Target) -> Http {
        let mut conn = HttpConnector::new();
        conn.set_connect_timeout(Some(Duration::from_secs(2)));
        conn.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(conn);
        Http { client, target }
    }

    /// Runs one statement: `sql` in the URL, `body` (an insert's rows) as the request body.
    /// `settings` are ClickHouse settings as URL parameters (e.g. `max_execution_time`).
    pub async fn run(
        &self,
        sql: &str,
        body: Bytes,
        settings: &[(&str, String)],
        timeout: Duration,
    ) -> Result<Bytes, ChError> {
        // No `database=`: every statement names its tables in full (and the first one creates
        // the database).
        let mut uri = format!("{}/?query={}", self.target.base, enc(sql));
        for (k, v) in settings {
            uri += &format!("&{k}={}", enc(v));
        }
        // ClickHouse answers 411 to a POST without a length, which hyper omits for an empty body.
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header("content-length", body.len());
        if let Some(a) = &self.target.auth {
            req = req.header("authorization", a);
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| ChError::Io(e.to_string()))?;
        let call = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| ChError::Io(format!("{e}: {:?}", std::error::Error::source(&e))))?;
            let status = resp.status();
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| ChError::Io(e.to_string()))?
                .to_bytes();
            if status != StatusCode::OK {
                let msg = String::from_utf8_lossy(&bytes[..bytes.len().min(2000)]).into_owned();
                return Err(ChError::Server(status.as_u16(), msg));
            }
            // ClickHouse may report an error after a 200 was sent (the result was streaming):
            // its text then ends the body. Reads here are small and buffered, so a 200 is final.
            Ok(bytes)
        };
        match tokio::time::timeout(timeout, call).await {
            Ok(r) => r,
            Err(_) => Err(ChError::Timeout),
        }
    }

    /// A statement without a body, for DDL and reads.
    pub async fn exec(&self, sql: &str, timeout: Duration) -> Result<Bytes, ChError> {
        self.run(sql, Bytes::new(), &[], timeout).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let t = Target::parse("clickhouse://127.0.0.1:8123/rum").unwrap();
        assert_eq!(t.base, "http://127.0.0.1:8123");
        assert_eq!(t.database, "rum");
        assert_eq!(t.auth, None);
        let t = Target::parse("clickhouse://me:pw@ch.internal:8123/rum_1").unwrap();
        assert_eq!(t.base, "http://ch.internal:8123");
        // base64("me:pw")
        assert_eq!(t.auth.as_deref(), Some("Basic bWU6cHc="));
        for bad in [
            "http://127.0.0.1:8123/rum",
            "clickhouse://127.0.0.1:8123",
            "clickhouse://127.0.0.1/rum",
            "clickhouse://127.0.0.1:8123/rum;drop",
            "clickhouse://127.0.0.1:8123/1rum",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn literals_escape_quotes_and_backslashes() {
        assert_eq!(lit("a'b\\c"), r"'a\'b\\c'");
        assert_eq!(lit("/v1/x"), "'/v1/x'");
    }
}
