//! The dashboard: one page, its script and its style sheet, embedded in the binary so the
//! collector is a single file to deploy (no CDN, no external fonts). Served with `CSP`: no
//! inline script or style, nothing from elsewhere, no framing, and Trusted Types required for
//! the HTML sinks (so `innerHTML = string` throws in browsers that enforce them).

pub const HTML: &str = include_str!("dashboard.html");
pub const JS: &str = include_str!("dashboard.js");
pub const CSS: &str = include_str!("dashboard.css");

pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; \
require-trusted-types-for 'script'; trusted-types 'none'";
