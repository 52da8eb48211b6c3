//! The dashboard: one self-contained HTML page (inline CSS, inline JS drawing SVG; no CDN, no
//! external fonts), embedded in the binary so the collector is a single file to deploy.

pub const HTML: &str = include_str!("dashboard.html");
