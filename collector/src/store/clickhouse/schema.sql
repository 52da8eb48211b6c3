-- The collector's ClickHouse schema, created (IF NOT EXISTS) at start; `{db}` is the database
-- of `--store clickhouse://HOST:PORT/DB`. Written for ClickHouse 18.16 (Debian's) and current
-- releases alike: times are epoch milliseconds as numbers (18.16 has no DateTime64), and no
-- per-column CODEC or LowCardinality (both came in 19.x); compression is the server's setting
-- (README: LZ4 and ZSTD measured on this table).
CREATE DATABASE IF NOT EXISTS {db};

-- One row per record. ReplacingMergeTree(version) keeps one row per sorting key, the highest
-- version: a beacon retried (by the SDK, or from the collector's spool after a timeout whose
-- insert had in fact landed) is stored again and collapses to one row; a record stored as
-- `partial` (version 0) gives way to its completed version (1), as in SQLite. Until the
-- background merge has run, reads collapse the copies themselves (`FINAL`).
-- Ordered by (minute of start, id): reads are time windows and the rollups are rebuilt by the
-- minute, so either reads only the granules of its minutes (ordered by hour, a minute's rebuild
-- read its whole hour: 1 s at 1 M records an hour, measured); the id last makes the key the
-- record's identity. Copies collapse when they share the key: a client clock off by more than
-- `clock::MAX_TRANSIT_MS` is corrected per beacon, so two copies of its record sent with transit
-- times that straddle a minute's end stay two (README). Partitioned by the UTC day of
-- the start, so retention drops whole days (ALTER TABLE … DROP PARTITION), never rewrites.
CREATE TABLE IF NOT EXISTS {db}.records (
    day Date,
    minute Int64,
    id String,
    version UInt8,
    received_ms Int64,
    start_ms Float64,
    session Nullable(String),
    page Nullable(String),
    url Nullable(String),
    route Nullable(String),
    method Nullable(String),
    status Nullable(Int64),
    model Nullable(String),
    model_source Nullable(String),
    provider Nullable(String),
    outcome String,
    format Nullable(String),
    ttft Nullable(Float64),
    ttfp Nullable(Float64),
    perceived_ttft Nullable(Float64),
    total Nullable(Float64),
    perceived_total Nullable(Float64),
    tpot Nullable(Float64),
    itl_p50 Nullable(Float64),
    itl_p95 Nullable(Float64),
    itl_max Nullable(Float64),
    render_delay_p95 Nullable(Float64),
    stalls_count Nullable(Int64),
    stalls_network Nullable(Int64),
    stalls_render Nullable(Int64),
    stalls_total_ms Nullable(Float64),
    buffered Nullable(UInt8),
    upstream_buffered Nullable(UInt8),
    hidden Nullable(UInt8),
    m_interaction Nullable(Float64),
    m_headers Nullable(Float64),
    m_first_byte Nullable(Float64),
    m_first_token Nullable(Float64),
    m_first_paint Nullable(Float64),
    m_last_token Nullable(Float64),
    m_last_paint Nullable(Float64),
    m_end Nullable(Float64),
    server_names Array(String),
    server_durs Array(Float64),
    raw String,
    -- ClickHouse's clock at the insert: which minutes changed since their rollup (rollup.rs).
    ins DateTime MATERIALIZED now()
) ENGINE = ReplacingMergeTree(version)
PARTITION BY day
ORDER BY (minute, id);

-- One row per beacon (what the SDK dropped, what was refused for its time), keyed by the
-- collector's own id for the beacon so a spooled beacon sent twice counts once.
CREATE TABLE IF NOT EXISTS {db}.beacons (
    day Date,
    received_ms Int64,
    id String,
    client Nullable(String),
    sdk Nullable(String),
    session Nullable(String),
    page Nullable(String),
    records UInt32,
    dropped UInt64,
    sent_ms Nullable(Float64),
    skew_ms Float64,
    refused_old UInt32,
    refused_future UInt32
) ENGINE = ReplacingMergeTree
PARTITION BY day
ORDER BY (received_ms, id);


-- Minute rollups (rollup.rs): per minute and (route, model, outcome) — '' for a missing route
-- or model — the aggregate of the minute's collapsed records (`agg::Agg::encode`: counts and
-- log-histogram sketches, as SQLite's rollups), recomputed whole when the minute's records
-- change. `computed` is ClickHouse's clock when the rows were read; a read uses the newest
-- computation of a minute (older rows of a key the minute no longer has are ignored) and only
-- when every record of the minute was inserted `rollup::SETTLE_S` before it.
CREATE TABLE IF NOT EXISTS {db}.rollups (
    day Date,
    minute Int64,
    route String,
    model String,
    outcome String,
    data String,
    computed UInt32
) ENGINE = ReplacingMergeTree(computed)
PARTITION BY day
ORDER BY (minute, route, model, outcome);