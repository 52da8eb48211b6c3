//! A real `clickhouse-server` (Debian's package, installed by scripts/setup.sh) for the tests:
//! a generated config on free 127.0.0.1 ports, its own data folder in a temp dir, stopped by
//! its PID (SIGTERM, then SIGKILL if it lingers) and reaped.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::TempDir;

pub const BINARY: &str = "/usr/sbin/clickhouse-server";

pub struct ClickHouseServer {
    child: Option<Child>,
    pub http_port: u16,
    tcp_port: u16,
    pub dir: TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl ClickHouseServer {
    pub fn start() -> ClickHouseServer {
        assert!(
            std::path::Path::new(BINARY).exists(),
            "{BINARY} missing: run scripts/setup.sh (installs Debian's clickhouse-server)"
        );
        let mut s = ClickHouseServer {
            child: None,
            http_port: free_port(),
            tcp_port: free_port(),
            dir: TempDir::new("clickhouse"),
        };
        s.restart();
        s
    }

    /// `clickhouse://127.0.0.1:PORT/DB`
    pub fn url(&self, db: &str) -> String {
        format!("clickhouse://127.0.0.1:{}/{db}", self.http_port)
    }

    /// Starts the server (again, on the same ports and data) and waits for `/ping`.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let d = &self.dir.0;
        for sub in ["data", "tmp"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        let config = format!(
            "<yandex><http_port>{}</http_port><tcp_port>{}</tcp_port><listen_host>127.0.0.1</listen_host>\
             <path>{}/data/</path><tmp_path>{}/tmp/</tmp_path>\
             <users_config>/etc/clickhouse-server/users.xml</users_config><default_profile>default</default_profile>\
             <default_database>default</default_database><mark_cache_size>268435456</mark_cache_size>\
             <logger><level>warning</level><console>1</console></logger></yandex>",
            self.http_port,
            self.tcp_port,
            d.display(),
            d.display()
        );
        std::fs::write(d.join("config.xml"), config).unwrap();
        let log = std::fs::File::create(d.join("server.log")).unwrap();
        let child = Command::new(BINARY)
            .arg(format!("--config-file={}/config.xml", d.display()))
            .current_dir(d)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn clickhouse-server");
        self.child = Some(child);
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            if self.ping() {
                return;
            }
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                let log = std::fs::read_to_string(d.join("server.log")).unwrap_or_default();
                panic!("clickhouse-server exited ({st}): {log}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("clickhouse-server did not answer /ping within 60 s");
    }

    fn ping(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.http_port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        if s.write_all(b"GET /ping HTTP/1.0\r\n\r\n").is_err() {
            return false;
        }
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.starts_with("HTTP/1.0 200") || out.starts_with("HTTP/1.1 200")
    }

    /// Stops the server by its PID: SIGTERM, SIGKILL after 20 s; reaped.
    pub fn stop(&mut self) {
        let Some(mut c) = self.child.take() else { return };
        unsafe {
            libc::kill(c.id() as i32, libc::SIGTERM);
        }
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            if c.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
    }

    /// SIGKILL by PID (a crash), reaped.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// One statement over HTTP (curl-free: the collector's test client), its answer's text.
    pub async fn query(&self, sql: &str) -> String {
        let addr = format!("127.0.0.1:{}", self.http_port).parse().unwrap();
        let r = tokio::time::timeout(
            Duration::from_secs(60),
            llm_rum_collector_testkit::client::request(addr, "POST", "/", &[], sql.as_bytes()),
        )
        .await
        .unwrap_or_else(|_| panic!("{sql}: no answer from ClickHouse within 60 s"))
        .expect("clickhouse query");
        assert_eq!(r.status, 200, "{sql}: {}", r.text());
        r.text()
    }
}

impl Drop for ClickHouseServer {
    fn drop(&mut self) {
        self.stop();
    }
}
