//! Event counters of one collector: what ingest refused and why, what the connection layer
//! closed, what retention deleted. Monotonic, in memory, read by `/healthz` and `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

macro_rules! counters {
    ($($name:ident: $doc:literal,)*) => {
        #[derive(Default)]
        pub struct Counters {
            $(#[doc = $doc] pub $name: AtomicU64,)*
        }

        impl Counters {
            /// Name → value, in declaration order.
            pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($name), self.$name.load(Ordering::Relaxed)),)*]
            }
        }

        /// What a counter counts (its doc line), for `/metrics`.
        pub fn help(name: &str) -> &'static str {
            match name {
                $(stringify!($name) => $doc,)*
                _ => "",
            }
        }
    };
}

counters! {
    beacons_stored: "beacons committed (200)",
    records_stored: "records inserted or replacing a stored partial",
    records_duplicate: "records already stored (retries)",
    records_dropped_by_sdk: "records the SDKs' queues dropped (the beacons' `dropped` counts)",
    records_refused_too_old: "records whose corrected start was more than 24 h before arrival",
    records_refused_future: "records whose corrected start was more than 5 min after arrival",
    beacons_invalid: "beacons refused with 400",
    beacons_too_large: "beacons refused with 413",
    beacons_rate_limited: "beacons refused with 429",
    beacons_origin_refused: "beacons refused with 403",
    beacons_body_timeout: "beacons whose body did not arrive within --body-timeout (408)",
    beacons_storage_failed: "beacons answered 503 (the database write failed)",
    connections_accepted: "TCP connections accepted",
    connections_evicted: "connections closed to make room under --max-connections",
    connections_refused: "connections closed at once: at --max-connections with none to evict",
    connections_header_timeout: "connections closed: headers not complete within --header-timeout",
    connections_idle_timeout: "keep-alive connections closed after --idle-timeout",
    accept_errors: "errors accepting a connection (e.g. out of file descriptors)",
    retention_records_deleted: "records deleted by retention",
    retention_pages_vacuumed: "database pages returned to the file system",
    queries_over_budget: "API reads stopped at --query-budget (answered 503)",
}

pub fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    pub fn json(&self) -> Value {
        Value::Object(
            self.snapshot()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.into()))
                .collect::<Map<_, _>>(),
        )
    }
}
