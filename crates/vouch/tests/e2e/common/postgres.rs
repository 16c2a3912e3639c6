//! A real PostgreSQL for the team server's tests: Debian's server, a
//! throwaway cluster per test started by `scripts/postgres.sh` (on a Unix
//! socket in a temporary folder, or loopback with a password).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A PostgreSQL cluster of its own, stopped and deleted when dropped.
pub struct Postgres {
    dir: tempfile::TempDir,
    /// Its URL (`postgresql://…`).
    pub url: String,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/postgres.sh")
}

impl Postgres {
    /// On a Unix socket in its folder, no password.
    pub fn start() -> Postgres {
        Self::start_with(&[])
    }

    pub fn start_with(args: &[&str]) -> Postgres {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = Command::new(script())
            .arg("start")
            .arg(dir.path())
            .args(args)
            .output()
            .expect("run scripts/postgres.sh");
        assert!(
            out.status.success(),
            "scripts/postgres.sh start failed (Debian's postgresql package is needed: \
             scripts/test.sh installs it): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8(out.stdout)
            .expect("url")
            .trim()
            .to_string();
        Postgres { dir, url }
    }

    pub fn stop(&self) {
        self.script("stop");
    }

    /// Start the stopped cluster again (same folder, same URL).
    pub fn restart(&self) {
        self.script("start");
    }

    fn script(&self, command: &str) {
        let out = Command::new(script())
            .arg(command)
            .arg(self.dir.path())
            .output()
            .expect("scripts/postgres.sh");
        assert!(
            out.status.success(),
            "scripts/postgres.sh {command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}
