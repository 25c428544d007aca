//! Starting a command that a test signals (the courier package's tests:
//! the other crates' tests share `common` without `libc`).

/// `command` with SIGINT, SIGTERM and SIGHUP at their default dispositions
/// in the child: a test that signals a command must not inherit its own
/// runner's ignored SIGHUP (a CI job started under `nohup`), which the
/// command would keep ignoring, as it should.
#[cfg(unix)]
pub(crate) fn with_default_signals(
    command: &mut std::process::Command,
) -> &mut std::process::Command {
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
