//! The filter of a read as ClickHouse SQL: what the rollups' builder and reader (`rollup`)
//! put after `WHERE` for a window of records and its keys.

use crate::query::plan::Filter;
use crate::store::clickhouse::http::lit;
use crate::store::clickhouse::rows::day;

fn num(x: f64) -> String {
    // Display never uses an exponent, so this is always a SQL number literal.
    format!("{x}")
}

/// `WHERE …` for a filter: the window (with the minutes and days it spans, so the primary key
/// and the partitions prune), then the keys.
pub fn where_(f: &Filter) -> String {
    let mut w = vec!["1".to_string()];
    if let Some(a) = f.from.filter(|x| x.is_finite()) {
        w.push(format!("start_ms >= {}", num(a)));
        w.push(format!("minute >= {}", (a / 60_000.0).floor()));
        w.push(format!("day >= toDate({})", lit(&day(a.max(0.0)))));
    }
    if let Some(b) = f.to.filter(|x| x.is_finite()) {
        w.push(format!("start_ms < {}", num(b)));
        w.push(format!("minute <= {}", (b / 60_000.0).floor()));
        w.push(format!("day <= toDate({})", lit(&day(b.max(0.0)))));
    }
    for (col, v) in f.keys() {
        if let Some(v) = v {
            w.push(format!("{col} = {}", lit(v)));
        }
    }
    w.join(" AND ")
}
