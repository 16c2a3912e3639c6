use clap::Parser;

fn main() {
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
