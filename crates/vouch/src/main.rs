use clap::Parser;

fn main() {
    settle_matmul_threads();
    // Crash tests arm one fail point (crates/vouch-core/src/fail.rs); a
    // build without them refuses, so such a test cannot pass untested.
    if let Some(spec) = std::env::var_os("VOUCH_FAILPOINT") {
        if let Err(e) = vouch_core::fail::arm(&spec.to_string_lossy()) {
            eprintln!("vouch: {e}");
            std::process::exit(2);
        }
        vouch_core::fail::point("cli.start");
    }
    let cli = vouch::cli::Cli::parse();
    std::process::exit(vouch::cli::run(cli));
}

/// Tell candle its thread count through the environment so that it stops
/// reading `/proc/cpuinfo` on every matrix product
/// (`vouch_model::embedder::settle_matmul_threads`).
#[cfg(feature = "embeddings")]
#[allow(unsafe_code)]
fn settle_matmul_threads() {
    // SAFETY: the first statement of `main`: no other thread exists yet
    // that could read the environment while it changes.
    unsafe { vouch_model::embedder::settle_matmul_threads() };
}

#[cfg(not(feature = "embeddings"))]
fn settle_matmul_threads() {}
