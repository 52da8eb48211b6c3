//! The `llm-rum-collector` binary: parse flags, start, print the address, run until killed
//! (or, as `llm-rum-collector rules …`, print Prometheus alerting rules for the budgets).

use std::io::Write;

use llm_rum_collector::cli;

/// A fatal message. Not `eprintln!`, which panics when stderr cannot be written.
fn fatal(code: i32, msg: &str) -> ! {
    let _ = writeln!(std::io::stderr(), "llm-rum-collector: {msg}");
    std::process::exit(code);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("rules") {
        // `rules`: the same flags (or --config), printed as Prometheus alerting rules.
        match cli::parse(&args[1..]) {
            Ok(cli::Parsed::Help) => {
                let _ = std::io::stdout().write_all(cli::help().as_bytes());
            }
            Ok(cli::Parsed::Run(c)) => match llm_rum_collector::alerts::rules::render(&c) {
                Ok(y) => {
                    let _ = std::io::stdout().write_all(y.as_bytes());
                }
                Err(e) => fatal(2, &e),
            },
            Err(e) => fatal(2, &e),
        }
        return;
    }
    let cfg = match cli::parse(&args) {
        Ok(cli::Parsed::Help) => {
            let _ = std::io::stdout().write_all(cli::help().as_bytes());
            return;
        }
        Ok(cli::Parsed::Run(c)) => c,
        Err(e) => fatal(2, &e),
    };
    llm_rum_collector::log::init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let running = match llm_rum_collector::start(cfg).await {
            Ok(r) => r,
            Err(e) => fatal(1, &e),
        };
        // Tests and scripts parse this exact line to learn the port.
        let mut out = std::io::stdout();
        let _ = writeln!(out, "listening on http://{}", running.addr);
        let _ = out.flush();
        tracing::info!(addr = %running.addr, "listening");
        // Every acknowledged beacon is already committed, so stopping needs no drain.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("signal");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    });
}
