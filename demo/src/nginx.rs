//! A real nginx in front of a local server, for tests: started on 127.0.0.1 (a free port)
//! with a generated configuration in a private temp directory, stopped by its PID.
//!
//! Owner of: the one way the project's tests run nginx — the scripted server's `--nginx`
//! option (the end-to-end upstream-buffering tests, tests/e2e) and the collector's proxy tests
//! (collector/tests/hostile.rs) both use it.
//!
//! Debian's nginx (installed by scripts/setup.sh) runs in the foreground (`daemon off`) as a
//! single process (`master_process off`), so its PID is the whole server; every path it
//! writes (pid, logs, temp files) is inside the temp directory, so nothing needs root.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// A running nginx; dropping it stops it (by PID) and removes its directory.
pub struct Nginx {
    child: Child,
    /// Where it listens (127.0.0.1).
    pub addr: SocketAddr,
    dir: PathBuf,
}

/// Debian installs nginx in /usr/sbin, which is not on every user's PATH.
fn binary() -> &'static str {
    if std::path::Path::new("/usr/sbin/nginx").exists() {
        "/usr/sbin/nginx"
    } else {
        "nginx"
    }
}

/// The whole configuration: `server_body` goes inside the `server { listen …; }` block, with
/// every `UPSTREAM` in it replaced by `upstream` (`proxy_pass http://UPSTREAM;`).
pub fn config(dir: &str, port: u16, upstream: SocketAddr, server_body: &str) -> String {
    let body = server_body.replace("UPSTREAM", &upstream.to_string());
    format!(
        "daemon off; master_process off; worker_processes 1; pid {dir}/nginx.pid; error_log {dir}/error.log;\n\
         events {{ worker_connections 256; }}\n\
         http {{ access_log off; client_body_temp_path {dir}/body; proxy_temp_path {dir}/proxy;\n\
           fastcgi_temp_path {dir}/fcgi; uwsgi_temp_path {dir}/uwsgi; scgi_temp_path {dir}/scgi;\n\
           server {{ listen 127.0.0.1:{port};\n{body}\n}} }}\n"
    )
}

impl Nginx {
    /// Starts nginx in front of `upstream` (see `config` for `server_body`). Retries on
    /// another port when the free one it picked was taken meanwhile; fails when nginx is
    /// missing or rejects the configuration (its error log in the message).
    pub fn start(upstream: SocketAddr, server_body: &str) -> std::io::Result<Nginx> {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!("llm-rum-nginx-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let d = dir.display().to_string();
        let mut log = String::new();
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            std::fs::write(dir.join("nginx.conf"), config(&d, port, upstream, server_body))?;
            let mut cmd = Command::new(binary());
            cmd.args(["-p", &d, "-c", &format!("{d}/nginx.conf"), "-e", &format!("{d}/error.log")])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            die_with_parent(&mut cmd);
            let mut child = cmd.spawn()?;
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // exited: a bad config, or the port was taken meanwhile
                }
                if TcpStream::connect(addr).is_ok() {
                    return Ok(Nginx { child, addr, dir });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(std::io::Error::other(format!("nginx did not start: {log}")))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // Child::kill signals this PID only (SIGKILL), never a name or a group.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Linux: nginx gets SIGTERM when the thread that started it exits, so a test process killed
/// outright (SIGKILL skips `Drop`) does not leave it running (prctl(2) PR_SET_PDEATHSIG).
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    extern "C" {
        fn prctl(option: std::ffi::c_int, ...) -> std::ffi::c_int;
    }
    const PR_SET_PDEATHSIG: std::ffi::c_int = 1;
    const SIGTERM: std::ffi::c_ulong = 15;
    // SAFETY: prctl is async-signal-safe and touches only the calling (child) process.
    unsafe {
        cmd.pre_exec(|| {
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_: &mut Command) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_puts_everything_in_the_directory_and_names_the_upstream() {
        let c = config("/tmp/x", 8123, "127.0.0.1:9000".parse().unwrap(), "location / { proxy_pass http://UPSTREAM; }");
        assert!(c.contains("listen 127.0.0.1:8123;"));
        assert!(c.contains("proxy_pass http://127.0.0.1:9000;"));
        assert!(c.contains("daemon off; master_process off;"));
        for path in ["pid /tmp/x/", "error_log /tmp/x/", "proxy_temp_path /tmp/x/", "client_body_temp_path /tmp/x/"] {
            assert!(c.contains(path), "{path}");
        }
    }
}
