//! Starting a command that a test signals (the courier package's tests:
//! the other crates' tests share `common` without `libc`). Each test binary
//! uses part of it.
#![allow(dead_code)]

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

/// `command` with SIGINT, SIGTERM and SIGHUP at their default dispositions
/// in the child: a test that signals a command must not inherit its own
/// runner's ignored SIGHUP (a CI job started under `nohup`), which the
/// command would keep ignoring, as it should.
#[cfg(unix)]
pub(crate) fn with_default_signals(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure only calls `signal`, which
    // is async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        })
    }
}

/// Sends `signal` (its name: `TERM`) to process `pid`.
pub(crate) fn send(pid: u32, signal: &str) {
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("kill runs");
    assert!(sent.success(), "kill -{signal} {pid}");
}

/// Starts `command`, a long `courier check`, and returns once its first
/// line says the search started (its signal handler is set by then).
pub(crate) fn searching(command: &mut Command) -> Child {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("it runs");
    let mut banner = String::new();
    let stdout = child.stdout.take().expect("piped");
    std::io::BufReader::new(stdout)
        .read_line(&mut banner)
        .expect("a line");
    assert!(banner.starts_with("courier check:"), "{banner}");
    child
}
