use clap::Parser;

fn main() {
    let cli = vouch::cli::Cli::parse();
    std::process::exit(vouch::cli::run(cli));
}
