//! Connections: the accept loop, the connection cap, and the connection timeouts, in front of
//! the axum router, which hyper's HTTP/1.1 serves connection by connection.
//!
//! Why not `axum::serve`: it runs hyper without a timer, so hyper's header read timeout is
//! inert, and it has no connection cap and does not log accept errors. A connection that sent
//! half its headers stayed open forever, and enough idle sockets exhausted the open-file limit
//! and cut ingest off. Here, like the OpenTelemetry Collector's HTTP receiver (Go's
//! `ReadHeaderTimeout`, `IdleTimeout`, `ReadTimeout`, a connection limit):
//!
//! - header timeout: a request's headers must be complete within `--header-timeout` of its first
//!   byte (of the accept, for a connection's first request);
//! - idle timeout: a keep-alive connection without a request for `--idle-timeout` is closed;
//! - body timeout: in the ingest handler (`http.rs`), answered 408;
//! - connection cap: at `--max-connections` (lowered to fit the open-file limit, raised to its
//!   hard maximum at start), a new connection takes the place of the one that has gone longest
//!   without sending a byte (waiting for a request first, then mid-request); when every
//!   connection sent something within `EVICT_MIN_IDLE_MS`, the new one is closed at once. So a
//!   flood of idle or half-sent connections cannot lock a normal client out.
//!
//! Each acts with a log line (summarised per period, see `log::Every`) and a counter.

pub mod dashboard;
pub mod http;
pub mod proxy;


use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::counters::{add, Counters};
use crate::log::Every;

/// Connection limits and timeouts.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header: Duration,
    pub idle: Duration,
    pub max_connections: usize,
}

/// A connection is evicted only after this long without sending a byte.
const EVICT_MIN_IDLE_MS: u64 = 250;
/// File descriptors kept free of connections: SQLite's files, stdio, the runtime's own.
const FD_RESERVE: u64 = 64;
/// Evicted sockets still closing that the accept loop tolerates before it waits (part of
/// FD_RESERVE: ~25 descriptors are the collector's own at rest).
const CLOSING_MAX: usize = 16;
/// The most hyper buffers per connection (it grows to this only as needed): request headers
/// must fit (Node's default header limit too; nginx's is 8 KiB a line); bodies stream through
/// it. 64 KiB cost ~15 MiB more under 1 024 parked bodies (`llm-rum-loadgen --park`).
const READ_BUF: usize = 16 * 1024;

/// Raises the soft open-file limit to the hard one (as Go's runtime does) and returns the
/// number of connections that fit under it, at most `wanted`.
pub fn fit_to_fd_limit(wanted: usize) -> usize {
    // SAFETY: getrlimit/setrlimit only read/write the struct passed by pointer.
    let soft = unsafe {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return wanted;
        }
        if r.rlim_cur < r.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                r.rlim_cur = r.rlim_max;
            }
        }
        r.rlim_cur
    };
    let fit = soft.saturating_sub(FD_RESERVE).max(1);
    if (wanted as u64) > fit {
        tracing::warn!(
            wanted,
            open_file_limit = soft,
            max_connections = fit,
            "--max-connections lowered to fit the open-file limit"
        );
        fit as usize
    } else {
        wanted
    }
}

/// One connection's state, shared by its task, its I/O wrapper and the registry. Times are ms
/// since the registry's start (`head_since`: +1, 0 = none).
struct Conn {
    peer: SocketAddr,
    accepted: u64,
    last_read: AtomicU64,
    head_since: AtomicU64,
    in_request: AtomicU32,
    served: AtomicU64,
    last_done: AtomicU64,
    evicted: AtomicBool,
    close: Notify,
    /// A request began or ended: the watchdog's deadline changed.
    changed: Notify,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expiry {
    Header,
    Idle,
}

impl Conn {
    /// When the watchdog should look again, and what expires then.
    fn deadline(&self, l: &Limits, now: u64) -> (u64, Option<Expiry>) {
        let ms = |d: Duration| d.as_millis() as u64;
        if self.in_request.load(Ordering::Acquire) > 0 {
            // The request's own timeouts apply (body: the handler); look again soon.
            return (now + 1000, None);
        }
        let head = self.head_since.load(Ordering::Acquire);
        if head > 0 {
            (head - 1 + ms(l.header), Some(Expiry::Header))
        } else if self.served.load(Ordering::Acquire) == 0 {
            (self.accepted + ms(l.header), Some(Expiry::Header))
        } else {
            (
                self.last_done.load(Ordering::Acquire) + ms(l.idle),
                Some(Expiry::Idle),
            )
        }
    }
}

#[derive(Default)]
struct Table {
    conns: HashMap<u64, Arc<Conn>>,
    /// Connections not evicted (an evicted one is closing).
    live: usize,
    next_id: u64,
}

/// Every open connection.
pub struct Registry {
    base: Instant,
    table: Mutex<Table>,
    limits: Limits,
    counters: Arc<Counters>,
    /// A connection's socket was closed (the accept loop waits on it when too many are closing).
    closed: Notify,
}

static EVICT_LOG: Every = Every::new(Duration::from_secs(10));
static REFUSE_LOG: Every = Every::new(Duration::from_secs(10));
static HEADER_LOG: Every = Every::new(Duration::from_secs(10));
static IDLE_LOG: Every = Every::new(Duration::from_secs(60));
static ACCEPT_LOG: Every = Every::new(Duration::from_secs(10));

impl Registry {
    pub fn new(limits: Limits, counters: Arc<Counters>) -> Registry {
        Registry {
            base: Instant::now(),
            table: Mutex::default(),
            limits,
            counters,
            closed: Notify::new(),
        }
    }

    fn now(&self) -> u64 {
        self.base.elapsed().as_millis() as u64
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Open connections (those being closed excluded).
    pub fn open(&self) -> usize {
        self.lock().live
    }

    /// Sockets held: open connections and evicted ones whose task has not yet closed them.
    fn held(&self) -> usize {
        self.lock().conns.len()
    }

    /// Registers a new connection, making room if at the cap; None: refuse it.
    fn admit(&self, peer: SocketAddr) -> Option<(u64, Arc<Conn>)> {
        let now = self.now();
        let mut t = self.lock();
        if t.live >= self.limits.max_connections {
            if !self.evict_one(&mut t, now) {
                return None;
            }
        }
        let conn = Arc::new(Conn {
            peer,
            accepted: now,
            last_read: AtomicU64::new(now),
            head_since: AtomicU64::new(0),
            in_request: AtomicU32::new(0),
            served: AtomicU64::new(0),
            last_done: AtomicU64::new(now),
            evicted: AtomicBool::new(false),
            close: Notify::new(),
            changed: Notify::new(),
        });
        t.next_id += 1;
        let id = t.next_id;
        t.conns.insert(id, conn.clone());
        t.live += 1;
        Some((id, conn))
    }

    /// Closes the connection that has gone longest without sending a byte, preferring those
    /// between requests; false when every connection sent something within EVICT_MIN_IDLE_MS.
    fn evict_one(&self, t: &mut Table, now: u64) -> bool {
        let quiet = |c: &&Arc<Conn>| {
            !c.evicted.load(Ordering::Relaxed)
                && now.saturating_sub(c.last_read.load(Ordering::Relaxed)) >= EVICT_MIN_IDLE_MS
        };
        let pick = |busy: bool| {
            t.conns
                .values()
                .filter(quiet)
                .filter(|c| (c.in_request.load(Ordering::Relaxed) > 0) == busy)
                .min_by_key(|c| c.last_read.load(Ordering::Relaxed))
                .cloned()
        };
        let Some(victim) = pick(false).or_else(|| pick(true)) else {
            return false;
        };
        victim.evicted.store(true, Ordering::Relaxed);
        victim.close.notify_one();
        t.live -= 1;
        add(&self.counters.connections_evicted, 1);
        if let Some(n) = EVICT_LOG.hit() {
            tracing::warn!(
                closed = n,
                max_connections = self.limits.max_connections,
                last_peer = %victim.peer,
                "connection limit reached: closed the connections quiet the longest to make room"
            );
        }
        true
    }

    /// The connection's socket is closed: forget it.
    fn remove(&self, id: u64) {
        let mut t = self.lock();
        if let Some(c) = t.conns.remove(&id) {
            if !c.evicted.load(Ordering::Relaxed) {
                t.live -= 1;
            }
        }
        drop(t);
        self.closed.notify_one();
    }
}

/// Accepts connections forever.
pub async fn serve(listener: TcpListener, router: Router, reg: Arc<Registry>) {
    loop {
        // An evicted connection's socket is closed by its own task when that next runs; until
        // then it still holds a descriptor. Accepting faster than they close ran the process
        // out of descriptors once on a loaded machine (CI: accept_errors 1 with 300 idle
        // sockets against a 256-file limit, a debug build). So at most CLOSING_MAX sockets
        // beyond the cap: past that, wait for one to close (new ones wait in the kernel's
        // backlog meanwhile). The timeout only bounds a missed wake-up.
        while reg.held() >= reg.limits.max_connections + CLOSING_MAX {
            let _ = tokio::time::timeout(Duration::from_millis(20), reg.closed.notified()).await;
        }
        match listener.accept().await {
            Ok((tcp, peer)) => {
                add(&reg.counters.connections_accepted, 1);
                match reg.admit(peer) {
                    Some((id, conn)) => {
                        tokio::spawn(connection(tcp, id, conn, router.clone(), reg.clone()));
                    }
                    None => {
                        add(&reg.counters.connections_refused, 1);
                        if let Some(n) = REFUSE_LOG.hit() {
                            tracing::warn!(refused = n, max_connections = reg.limits.max_connections, %peer,
                                "connection limit reached and every connection active: new connections closed");
                        }
                    }
                }
            }
            Err(e) => {
                add(&reg.counters.accept_errors, 1);
                if let Some(n) = ACCEPT_LOG.hit() {
                    tracing::error!(error = %e, errors = n, "accepting a connection failed");
                }
                // Out of file descriptors (or another resource): free one and breathe, rather
                // than spin on an error that repeats until something closes.
                {
                    let now = reg.now();
                    let mut t = reg.lock();
                    reg.evict_one(&mut t, now);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn connection(tcp: TcpStream, id: u64, conn: Arc<Conn>, router: Router, reg: Arc<Registry>) {
    let _ = tcp.set_nodelay(true);
    let io = TokioIo::new(Tracked {
        io: tcp,
        conn: conn.clone(),
        base: reg.base,
    });
    let peer = conn.peer;
    let (c2, base) = (conn.clone(), reg.base);
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        let conn = c2.clone();
        conn.head_since.store(0, Ordering::Release);
        conn.in_request.fetch_add(1, Ordering::AcqRel);
        conn.changed.notify_one();
        req.extensions_mut().insert(ConnectInfo(peer));
        let fut = tower_service::Service::call(&mut router.clone(), req);
        async move {
            let _done = Done(conn, base);
            fut.await
        }
    });
    let mut b = hyper::server::conn::http1::Builder::new();
    // Our watchdog owns the header and idle timeouts (hyper's header timer would also close
    // idle keep-alive connections at the header timeout).
    b.header_read_timeout(None)
        .keep_alive(true)
        .max_buf_size(READ_BUF);
    {
        let http = b.serve_connection(io, svc);
        tokio::pin!(http);
        let l = reg.limits;
        loop {
            let now = reg.now();
            let (at, expiry) = conn.deadline(&l, now);
            let wake = reg.base + Duration::from_millis(at.max(now));
            tokio::select! {
                r = http.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, %peer, "connection ended with an error");
                    }
                    break;
                }
                _ = conn.close.notified() => break, // evicted (counted and logged there)
                _ = conn.changed.notified() => continue,
                _ = tokio::time::sleep_until(wake) => {
                    let now = reg.now();
                    let (at, expiry_now) = conn.deadline(&l, now);
                    if expiry_now.is_none() || expiry_now != expiry || at > now {
                        continue;
                    }
                    match expiry_now {
                        Some(Expiry::Header) => {
                            add(&reg.counters.connections_header_timeout, 1);
                            if let Some(n) = HEADER_LOG.hit() {
                                tracing::warn!(closed = n, timeout_s = l.header.as_secs_f64(), last_peer = %peer,
                                    "closed connections whose request headers did not arrive in time");
                            }
                        }
                        _ => {
                            add(&reg.counters.connections_idle_timeout, 1);
                            if let Some(n) = IDLE_LOG.hit() {
                                tracing::info!(closed = n, timeout_s = l.idle.as_secs_f64(), "closed idle keep-alive connections");
                            }
                        }
                    }
                    break;
                }
            }
        }
    } // the socket is closed here, before it is forgotten (the accept loop counts it)
    reg.remove(id);
}

/// Marks the end of a request (its response is being written).
struct Done(Arc<Conn>, Instant);

impl Drop for Done {
    fn drop(&mut self) {
        self.0
            .last_done
            .store(self.1.elapsed().as_millis() as u64, Ordering::Release);
        self.0.served.fetch_add(1, Ordering::AcqRel);
        self.0.in_request.fetch_sub(1, Ordering::AcqRel);
        self.0.changed.notify_one();
    }
}

/// The socket, noting when bytes arrive (the watchdog's and the eviction's clock).
struct Tracked {
    io: TcpStream,
    conn: Arc<Conn>,
    base: Instant,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let now = self.base.elapsed().as_millis() as u64;
            let c = &self.conn;
            c.last_read.store(now, Ordering::Release);
            if c.in_request.load(Ordering::Acquire) == 0 {
                // The first byte of the next request's headers.
                let _ =
                    c.head_since
                        .compare_exchange(0, now + 1, Ordering::AcqRel, Ordering::Acquire);
            }
        }
        r
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
