//! Named fail points for the crash tests (issue 14): each multi-file
//! mutation calls [`point`] between its steps. Only a build with the
//! `failpoints` feature (what `scripts/test.sh` tests) can arm one; in the
//! shipped build [`point`] is an empty inline function.
//!
//! Armed by the app from `VOUCH_FAILPOINT=NAME[@N]=ACTION` (the core never
//! reads the environment): at the `N`-th time (default 1) the process
//! reaches `NAME`, it dies — `abort` (SIGABRT, no destructors run) or
//! `kill` (SIGKILL, as the OOM killer or a power cut would) — or it
//! freezes: `stop` (SIGSTOP, as a hung host would, until a SIGCONT;
//! whatever it holds stays held). `enospc`
//! arms an [`io_point`] instead: from the `N`-th time on, the write there
//! fails as a full disk would, and the process goes on.

/// Every fail point, in the order a reader meets them in the code.
pub const POINTS: &[&str] = &[
    "cli.start",
    "audit.append.written",
    "audit.append.synced",
    "batch.staged",
    "batch.renamed",
    "batch.moved",
    "journal.written",
    "approve.logged",
    "delete.logged",
    "delete.removed",
    "redact.logged",
    "reject.logged",
    "lifecycle.logged",
    "bundle.logged",
    "propose.batch.logged",
    "index.rebuild.cleared",
    "store.write",
    "team.locked",
    "inbox.moving",
    "team.head",
];

#[cfg(feature = "failpoints")]
mod armed {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    pub(super) struct Armed {
        pub(super) name: String,
        pub(super) at: usize,
        pub(super) kill: bool,
        pub(super) stop: bool,
        pub(super) enospc: bool,
    }
    pub(super) static ARMED: Mutex<Option<Armed>> = Mutex::new(None);
    pub(super) static HITS: AtomicUsize = AtomicUsize::new(0);

    pub(super) fn hit(name: &str) {
        let guard = ARMED.lock().unwrap_or_else(|e| e.into_inner());
        let Some(a) = guard.as_ref() else { return };
        if a.enospc || a.name != name || HITS.fetch_add(1, Ordering::SeqCst) + 1 != a.at {
            return;
        }
        if a.stop {
            #[cfg(unix)]
            {
                let _ = rustix::process::kill_process(
                    rustix::process::getpid(),
                    rustix::process::Signal::STOP,
                );
                return;
            }
        }
        if a.kill {
            #[cfg(unix)]
            {
                let _ = rustix::process::kill_process(
                    rustix::process::getpid(),
                    rustix::process::Signal::KILL,
                );
            }
        }
        std::process::abort();
    }

    /// Whether the `enospc` action armed for `name` fires now.
    pub(super) fn full(name: &str) -> bool {
        let guard = ARMED.lock().unwrap_or_else(|e| e.into_inner());
        let Some(a) = guard.as_ref() else {
            return false;
        };
        a.enospc && a.name == name && HITS.fetch_add(1, Ordering::SeqCst) + 1 >= a.at
    }
}

/// Arm one fail point from `NAME[@N]=abort|kill|stop|enospc`. Refused in a build
/// without the `failpoints` feature, so a crash test cannot pass by
/// testing nothing.
pub fn arm(spec: &str) -> Result<(), String> {
    let (target, action) = spec.split_once('=').ok_or_else(|| {
        format!("VOUCH_FAILPOINT {spec:?}: expected NAME[@N]=abort|kill|stop|enospc")
    })?;
    let (name, at) = match target.split_once('@') {
        Some((n, at)) => (
            n,
            at.parse::<usize>()
                .map_err(|_| format!("VOUCH_FAILPOINT {spec:?}: @{at} is not a count"))?,
        ),
        None => (target, 1),
    };
    if !POINTS.contains(&name) {
        return Err(format!(
            "VOUCH_FAILPOINT {spec:?}: no fail point {name:?} (known: {})",
            POINTS.join(", ")
        ));
    }
    let (kill, stop, enospc) = match action {
        "abort" => (false, false, false),
        "kill" => (true, false, false),
        "stop" => (false, true, false),
        "enospc" => (false, false, true),
        other => {
            return Err(format!(
                "VOUCH_FAILPOINT {spec:?}: action {other:?} is not abort, kill, stop or enospc"
            ));
        }
    };
    #[cfg(feature = "failpoints")]
    {
        *armed::ARMED.lock().unwrap_or_else(|e| e.into_inner()) = Some(armed::Armed {
            name: name.to_string(),
            at: at.max(1),
            kill,
            stop,
            enospc,
        });
        Ok(())
    }
    #[cfg(not(feature = "failpoints"))]
    {
        let _ = (at, kill, stop, enospc);
        Err(format!(
            "VOUCH_FAILPOINT {spec:?}: this build has no fail points (build with --features \
             vouch/failpoints, as scripts/test.sh does)"
        ))
    }
}

/// A write that can fail: `Err(ENOSPC)` here when `enospc` is armed for
/// it (a full disk, without filling one).
#[inline(always)]
pub fn io_point(name: &'static str) -> std::io::Result<()> {
    #[cfg(feature = "failpoints")]
    if armed::full(name) {
        return Err(std::io::Error::from_raw_os_error(28));
    }
    #[cfg(not(feature = "failpoints"))]
    let _ = name;
    Ok(())
}

/// A step of a multi-file mutation; dies here when armed for it.
#[inline(always)]
pub fn point(name: &'static str) {
    #[cfg(feature = "failpoints")]
    armed::hit(name);
    #[cfg(not(feature = "failpoints"))]
    let _ = name;
}
