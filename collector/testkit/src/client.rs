//! A minimal HTTP/1.1 client over one keep-alive TCP connection, for the tests and the load
//! generator (loopback only). Small on purpose: it keeps an HTTP client stack out of the
//! dependency tree and lets tests send exactly the bytes they mean (odd headers, bad bodies).

use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

pub struct Conn {
    io: BufReader<TcpStream>,
    host: String,
}

impl Conn {
    pub async fn connect(addr: SocketAddr) -> io::Result<Conn> {
        let s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        Ok(Conn {
            io: BufReader::new(s),
            host: addr.to_string(),
        })
    }

    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<Resp> {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nhost: {}\r\ncontent-length: {}\r\n",
            self.host,
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        let mut buf = req.into_bytes();
        buf.extend_from_slice(body);
        self.io.get_mut().write_all(&buf).await?;
        self.read_response(method == "HEAD").await
    }

    async fn read_response(&mut self, head: bool) -> io::Result<Resp> {
        let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
        let mut line = String::new();
        if self.io.read_line(&mut line).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("bad status line"))?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            if self.io.read_line(&mut line).await? == 0 {
                return Err(bad("eof in headers"));
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        let mut body = Vec::new();
        if head || status == 204 || status == 304 {
        } else if let Some(n) = get("content-length").and_then(|v| v.parse::<usize>().ok()) {
            body.resize(n, 0);
            self.io.read_exact(&mut body).await?;
        } else if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            loop {
                line.clear();
                self.io.read_line(&mut line).await?;
                let n =
                    usize::from_str_radix(line.trim(), 16).map_err(|_| bad("bad chunk size"))?;
                let mut chunk = vec![0; n + 2];
                self.io.read_exact(&mut chunk).await?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        } else {
            self.io.read_to_end(&mut body).await?;
        }
        Ok(Resp {
            status,
            headers,
            body,
        })
    }
}

/// One request on a fresh connection.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> io::Result<Resp> {
    Conn::connect(addr)
        .await?
        .request(method, path, headers, body)
        .await
}
