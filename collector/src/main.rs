//! The `llm-rum-collector` binary: parse flags, start, print the address, run until killed.

use std::io::Write;

use llm_rum_collector::cli;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cfg = match cli::parse(&args) {
        Ok(cli::Parsed::Help) => {
            print!("{}", cli::HELP);
            return;
        }
        Ok(cli::Parsed::Run(c)) => c,
        Err(e) => {
            eprintln!("llm-rum-collector: {e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let running = match llm_rum_collector::start(cfg).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("llm-rum-collector: {e}");
                std::process::exit(1);
            }
        };
        // Tests and scripts parse this exact line to learn the port.
        println!("listening on http://{}", running.addr);
        let _ = std::io::stdout().flush();
        // Every acknowledged beacon is already committed, so stopping needs no drain.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("signal");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    });
}
