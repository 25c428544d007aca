//! `courier run --against CMD`: the client side of docs/PROTOCOL.md. Each
//! transcript runs on a fresh process of another implementation; its answers
//! are printed in the transcript's line format, so `run` judges them by the
//! same rule (`Block::passes`) as the core's own.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use courier::files::{self, shown};
use courier_core::transcript::{self, Command, Stalled, parse_command, run_inputs_max};
use courier_core::{
    AwaitPoint, Input, MessageId, Output, PreStepDecision, Status, StepOutcome, Stimulus,
};
use serde_json::Value;

/// How long one answer may take, whole (a line trickled now and then does
/// not extend it): an implementation that hangs, or stops reading its
/// stdin, is a failure to report, not a reason for `courier run` to hang.
/// `COURIER_ANSWER_TIMEOUT` (whole seconds) sets another.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest `COURIER_ANSWER_TIMEOUT` (about 31 years): a deadline
/// further out overflows the clock.
const ANSWER_TIMEOUT_MAX: u64 = 1_000_000_000;

/// How often a wait for an answer looks in on whether the implementation
/// is still running.
const LOOK: Duration = Duration::from_millis(100);

/// The answer timeout: [`ANSWER_TIMEOUT`], or `COURIER_ANSWER_TIMEOUT`.
fn answer_timeout() -> Result<Duration, String> {
    let Some(value) = std::env::var_os("COURIER_ANSWER_TIMEOUT") else {
        return Ok(ANSWER_TIMEOUT);
    };
    value
        .to_str()
        .and_then(|seconds| seconds.parse::<u64>().ok())
        .filter(|seconds| (1..=ANSWER_TIMEOUT_MAX).contains(seconds))
        .map(Duration::from_secs)
        .ok_or_else(|| {
            format!(
                "COURIER_ANSWER_TIMEOUT={}: not a whole number of seconds from 1 to {ANSWER_TIMEOUT_MAX}",
                files::named(&value)
            )
        })
}

/// The most lines and bytes one answer may hold: an implementation that
/// answers one stimulus without end is a failure to report, not a reason
/// to fill memory. One stimulus of the core answers with a few lines per
/// message it moves; these are far beyond any honest answer.
const ANSWER_LINES_MAX: usize = 1 << 20;
const ANSWER_BYTES_MAX: usize = 64 << 20;

/// The shell command `--against dsh` stands for: node on the dsh adapter's
/// bundle, built first when its dependencies are installed.
pub(crate) fn resolve(against: &str) -> Result<String, String> {
    // Checked once, before any transcript or seed: an error of the
    // environment, not of a file's line.
    answer_timeout()?;
    if against.trim().is_empty() {
        return Err("--against: an empty command (a shell command, or `dsh`)".to_owned());
    }
    if against != "dsh" {
        return Ok(against.to_owned());
    }
    let adapter = dsh_adapter();
    let driver = adapter.join("dist/driver.mjs");
    if stale(&adapter, &driver) && adapter.join("node_modules").is_dir() {
        // Errors show through npm's own output; the check below names the fix.
        let _ = Process::new("npm")
            .args(["run", "--silent", "build"])
            .current_dir(&adapter)
            .stdout(Stdio::null())
            .status();
    }
    if !driver.is_file() {
        return Err(format!(
            "the dsh adapter is not built: run `npm ci && npm run build` in {}",
            files::named(&adapter)
        ));
    }
    // `exec`: node leads the group, so a SIGTERM finds it, not `sh`.
    Ok(format!("exec node {}", shell_quote(&driver)))
}

/// Whether the bundle is missing or older than the driver or build script
/// it is made from (a checkout that moved on must not run an old driver).
fn stale(adapter: &Path, bundle: &Path) -> bool {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let Some(built) = modified(bundle) else {
        return true;
    };
    ["driver.mjs", "build.mjs"]
        .iter()
        .filter_map(|source| modified(&adapter.join(source)))
        .any(|source| source > built)
}

/// `adapters/dsh` of this checkout (`COURIER_DSH_ADAPTER` overrides it).
fn dsh_adapter() -> PathBuf {
    match std::env::var_os("COURIER_DSH_ADAPTER") {
        Some(path) => PathBuf::from(path),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/dsh"),
    }
}

fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// One running implementation: a writer thread feeding its stdin, and its
/// stdout's lines as a reader thread hands them over (so an answer can time
/// out, even when the implementation stops reading and a write blocks).
pub(crate) struct Peer {
    child: Child,
    stdin: Option<Sender<String>>,
    lines: Receiver<Heard>,
    timeout: Duration,
    /// Its `TMPDIR`, removed after its group was ended: what it left there
    /// (the dsh adapter's session folder, when the group was killed before
    /// it cleaned up) goes too.
    _scratch: files::TemporaryFolder,
}

/// What the reader and writer threads hand over.
enum Heard {
    /// One line of stdout, without its newline.
    Line(String),
    /// Stdout ended: the implementation exited or closed it.
    Closed,
    /// Why the conversation broke (a read failed, or a line broke the
    /// protocol), said whole.
    Broken(String),
    /// A write to its stdin failed, said whole (most often: it exited).
    Unwritable(String),
}

impl Peer {
    /// Spawns `command` with `sh -c` in a process group of its own (see
    /// [`group`]); its stderr passes through.
    pub(crate) fn spawn(command: &str) -> Result<Peer, String> {
        let timeout = answer_timeout()?;
        let scratch = files::TemporaryFolder::new("courier-peer-")
            .map_err(|error| format!("cannot make a temporary folder for `{command}`: {error}"))?;
        let mut process = Process::new("sh");
        process
            .env("TMPDIR", scratch.path())
            .args(["-c", command])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = group::spawn(&mut process)
            .map_err(|error| format!("cannot spawn `{command}`: {error}"))?;
        let mut stdin = child.stdin.take().ok_or("no stdin pipe")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        // Bounded, so an implementation that floods stdout waits for the
        // reader instead of filling memory.
        let (sender, lines) = std::sync::mpsc::sync_channel(64);
        let (writer, written) = std::sync::mpsc::channel::<String>();
        let broken = sender.clone();
        std::thread::spawn(move || {
            for line in written {
                if let Err(error) = writeln!(stdin, "{line}").and_then(|()| stdin.flush()) {
                    let said = format!("cannot write to the implementation: {error}");
                    let _gone = broken.send(Heard::Unwritable(said));
                    return;
                }
            }
        });
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            // Each line read whole, but no longer than the protocol's cap:
            // an endless line would take all the memory there is.
            loop {
                let mut line = Vec::new();
                let read = (&mut stdout)
                    .take(super::serve::LINE_MAX + 1)
                    .read_until(b'\n', &mut line);
                let heard = match read {
                    Ok(0) => Heard::Closed,
                    Ok(_) if super::serve::overlong(&line) => Heard::Broken(format!(
                        "cannot read its answer: it printed a line longer than {} bytes",
                        super::serve::LINE_MAX
                    )),
                    Ok(_) => {
                        let text = line.strip_suffix(b"\n").unwrap_or(&line);
                        match String::from_utf8(text.to_vec()) {
                            Ok(text) => Heard::Line(text),
                            Err(_) => Heard::Broken(format!(
                                "cannot read its answer: its line `{}` is not UTF-8",
                                files::shown_bytes(text)
                            )),
                        }
                    }
                    Err(error) => Heard::Broken(format!("cannot read its answer: {error}")),
                };
                let last = !matches!(heard, Heard::Line(_));
                if sender.send(heard).is_err() || last {
                    return;
                }
            }
        });
        Ok(Peer {
            child,
            stdin: Some(writer),
            lines,
            timeout,
            _scratch: scratch,
        })
    }

    /// Sends one line and returns the lines answering it (each as JSON and
    /// as printed, which an error quotes), up to (not including) the
    /// `{"settled":true}` marker.
    fn ask(&mut self, line: &str) -> Result<Vec<(Value, String)>, String> {
        let answer = self.ask_once(line);
        if answer.is_err() && group::stopping() {
            // The implementation broke because a signal is stopping the
            // run: the handler's exit (130) is the answer, not this error.
            loop {
                std::thread::park();
            }
        }
        answer
    }

    fn ask_once(&mut self, line: &str) -> Result<Vec<(Value, String)>, String> {
        let max = super::serve::LINE_MAX;
        if line.len() as u64 > max {
            // No implementation need read it (the core's server refuses it):
            // said here, not blamed on the implementation.
            return Err(format!(
                "the input is {} bytes, past the protocol's line of {max} bytes \
                 (docs/PROTOCOL.md): it cannot be sent",
                line.len()
            ));
        }
        let stdin = self.stdin.as_ref().ok_or("stdin already closed")?;
        stdin
            .send(line.to_owned())
            .map_err(|_| "cannot write to the implementation: its writer stopped")?;
        let deadline = Instant::now() + self.timeout;
        let mut values = Vec::new();
        let mut bytes = 0;
        // A silent wait looks in on the implementation every `LOOK`: once
        // it has exited and a further `LOOK` brought nothing, it is gone,
        // even while something it started keeps its stdout open.
        let mut exited = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let text = match self.lines.recv_timeout(left.min(LOOK)) {
                Ok(Heard::Line(text)) => text,
                Ok(Heard::Broken(said)) => return Err(said),
                Ok(Heard::Unwritable(said)) => {
                    // A write to a process that exited fails too: how it
                    // ended is what to say.
                    return Err(match self.ending() {
                        Some(ending) => {
                            format!("it {ending} before settling `{}`", shown(&line))
                        }
                        None => said,
                    });
                }
                Err(RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                    return Err(format!(
                        "no answer to `{}` within {:?}",
                        shown(&line),
                        self.timeout
                    ));
                }
                Err(RecvTimeoutError::Timeout) => {
                    if exited {
                        let ending = self.ending();
                        let ending = ending.as_deref().unwrap_or("ended");
                        return Err(format!("it {ending} before settling `{}`", shown(&line)));
                    }
                    exited = group::exited(&mut self.child);
                    continue;
                }
                Ok(Heard::Closed) | Err(RecvTimeoutError::Disconnected) => {
                    let ending = self.ending();
                    let ending = ending.as_deref().unwrap_or("closed its stdout");
                    return Err(format!("it {ending} before settling `{}`", shown(&line)));
                }
            };
            bytes += text.len();
            if values.len() >= ANSWER_LINES_MAX || bytes > ANSWER_BYTES_MAX {
                return Err(format!(
                    "its answer to `{}` goes on past {ANSWER_LINES_MAX} lines or \
                     {ANSWER_BYTES_MAX} bytes without settling",
                    shown(&line)
                ));
            }
            match answer_line(&text)? {
                None => return Ok(values),
                Some(value) => values.push((value, text)),
            }
        }
    }

    /// Feeds a stimulus and prints the answer as transcript lines.
    pub(crate) fn apply(&mut self, stimulus: &Stimulus) -> Result<Vec<String>, String> {
        self.answer(stimulus).map(|answer| answer.lines())
    }

    /// Feeds a stimulus and reads its answer.
    pub(crate) fn answer(&mut self, stimulus: &Stimulus) -> Result<Answer, String> {
        let line = serde_json::to_string(stimulus).map_err(|error| error.to_string())?;
        let values = self.ask(&line)?;
        values
            .iter()
            .map(|(value, text)| answered(value, text))
            .collect::<Result<Vec<_>, _>>()
            .map(Answer)
    }

    /// The one value answering a query, found under `key`. The outer error
    /// is the implementation broken (gone, silent, not speaking the
    /// protocol); the inner one, a settled answer that is not the query's
    /// (`{"unsupported":...}`, `{"error":...}`).
    fn query(&mut self, key: &str) -> Result<Result<Value, String>, String> {
        let answer = self.ask(&format!(r#"{{"query":"{key}"}}"#))?;
        Ok(match answer.as_slice() {
            [(value, text)] => value
                .get(key)
                .cloned()
                .ok_or_else(|| format!("`{}` does not answer the {key} query", shown(text))),
            _ => Err(format!("{} lines answer the {key} query", answer.len())),
        })
    }

    /// The implementation's session log as it stands, one JSONL line per
    /// element, header first; `None` when it keeps none (yet, or any more).
    /// The inner error: it settled without answering the query, which an
    /// implementation need not; the outer: it broke asking.
    pub(crate) fn log(&mut self) -> Result<Result<Option<Vec<String>>, String>, String> {
        let value = match self.query("log")? {
            Ok(value) => value,
            Err(unanswered) => return Ok(Err(unanswered)),
        };
        if value.is_null() {
            return Ok(Ok(None));
        }
        Ok(serde_json::from_value(value)
            .map(Some)
            .map_err(|error| format!("the log query's answer is not a list of lines: {error}")))
    }

    fn status(&mut self) -> Result<Status, String> {
        let value = self.query("status")??;
        if value == "idle" {
            return Ok(Status::Idle);
        }
        let number = |key: &str| value.get(key).and_then(Value::as_u64);
        let awaiting = value.get("awaiting").cloned().map(serde_json::from_value);
        match (number("turn"), number("step"), awaiting) {
            (Some(turn), Some(step), Some(Ok(awaiting))) => Ok(Status::Running {
                turn,
                step,
                awaiting,
            }),
            _ => Err(format!("`{}` is not a status", shown(&value))),
        }
    }

    /// The `inbox` query's lists, next-turn first, as `target: ids` lines.
    /// Ids as the transcript shows them ([`transcript::shown_id`]), so a
    /// list the other side merged or split never reads as the contract's.
    fn inbox(&mut self) -> Result<Vec<String>, String> {
        let lists = self.lists()?;
        Ok(["next-turn", "next-step"]
            .into_iter()
            .zip(lists)
            .map(|(target, ids)| {
                let mut line = format!("{target}:");
                for id in ids {
                    line.push(' ');
                    line.push_str(&transcript::shown_id(&MessageId::new(id)));
                }
                line
            })
            .collect())
    }

    /// The ids the `inbox` query answers, next-turn's then next-step's.
    fn lists(&mut self) -> Result<[Vec<String>; 2], String> {
        let value = self.query("inbox")??;
        let list = |target: &str| -> Result<Vec<String>, String> {
            let ids = value.get(target).and_then(Value::as_array);
            let ids = ids.ok_or_else(|| format!("`{}` lacks `{target}`", shown(&value)))?;
            ids.iter()
                .map(|id| {
                    id.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("`{}` is not an id", shown(id)))
                })
                .collect()
        };
        Ok([list("next-turn")?, list("next-step")?])
    }

    /// `run`: feed `pass` / `completed` while the queried status is running.
    fn run(&mut self) -> Result<Vec<String>, Broke> {
        let mut printed = Vec::new();
        let pending = self.lists()?.iter().map(Vec::len).sum();
        let completions = run_inputs_max(pending);
        for _ in 0..completions {
            let input = match self.status()? {
                Status::Idle => return Ok(printed),
                Status::Running {
                    awaiting: AwaitPoint::PreStep,
                    ..
                } => Input::PreStep(PreStepDecision::Pass),
                Status::Running {
                    awaiting: AwaitPoint::Step,
                    ..
                } => Input::Step(StepOutcome::Completed),
            };
            printed.extend(self.apply(&Stimulus::Input(input))?);
        }
        Err(Broke::Stalled(Stalled { completions }))
    }

    /// Executes one transcript command and returns what it printed.
    pub(crate) fn execute(&mut self, line: &str) -> Result<Vec<String>, Broke> {
        let printed = match parse_command(line) {
            Err(bad) => Ok(vec![format!("error: {bad}")]),
            Ok(Command::Input(input)) => self.apply(&Stimulus::Input(input)),
            Ok(Command::Restart { lose }) => self.apply(&Stimulus::Restart { lose }),
            Ok(Command::Inbox) => self.inbox(),
            Ok(Command::Status) => self.status().map(|status| vec![status.to_string()]),
            Ok(Command::Run) => return self.run(),
        };
        printed.map_err(Broke::Protocol)
    }
}

impl Peer {
    /// How the implementation ended, once it has (given a moment: its
    /// stdout closes just before it exits).
    fn ending(&mut self) -> Option<String> {
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            let ending = group::ending(&mut self.child);
            if ending.is_some() || Instant::now() >= deadline {
                return ending;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Peer {
    /// Closing stdin ends a well-behaved implementation; one that lingers
    /// past a second is killed. Either way its whole process group goes
    /// then (the `sh`, node under it, anything they started), so no run
    /// leaves processes behind.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline && !group::exited(&mut self.child) {
            std::thread::sleep(Duration::from_millis(10));
        }
        group::kill(&mut self.child);
        let _ = self.child.wait();
    }
}

/// What an implementation answered to one stimulus, line by line.
pub(crate) struct Answer(pub(crate) Vec<Answered>);

/// One line of an answer.
pub(crate) enum Answered {
    /// An output (durable event or live notification).
    Output(Output),
    /// The input was refused, in the refusal's transcript words.
    Refused(String),
    /// The implementation cannot do this stimulus (it says why).
    Unsupported(String),
}

impl Answer {
    /// As the transcript prints it: an output's line, or `error: <text>` for
    /// a refusal or an unsupported stimulus. A control character the other
    /// implementation sent (an id holding a newline) is escaped: printed
    /// raw it would forge lines of the diff, and `--rewrite` would break
    /// the transcript's layout.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|answered| {
                let line = match answered {
                    Answered::Output(output) => output.to_string(),
                    Answered::Refused(refused) => format!("error: {refused}"),
                    Answered::Unsupported(what) => format!("error: unsupported: {what}"),
                };
                files::escaped(&line).into_owned()
            })
            .collect()
    }
}

/// One answer line read. A protocol `error` (the implementation did not
/// understand us) fails the run.
fn answered(value: &Value, text: &str) -> Result<Answered, String> {
    if let Some(refused) = value.get("refused").and_then(Value::as_str) {
        return Ok(Answered::Refused(refused.to_owned()));
    }
    if let Some(what) = value.get("unsupported").and_then(Value::as_str) {
        return Ok(Answered::Unsupported(what.to_owned()));
    }
    if let Some(error) = value.get("error") {
        return Err(format!(
            "the implementation reports a protocol error: {error}"
        ));
    }
    serde_json::from_value::<Output>(value.clone())
        .map(Answered::Output)
        .map_err(|error| {
            let why = files::in_json_words(&error.to_string());
            format!("its line `{}` is not an output: {why}", shown(&text))
        })
}

/// Why a transcript's run on another implementation broke off.
pub(crate) enum Broke {
    /// A `run` did not reach idle within the cap: a liveness failure.
    Stalled(Stalled),
    /// The implementation could not be run or broke the protocol.
    Protocol(String),
}

impl From<String> for Broke {
    fn from(reason: String) -> Self {
        Broke::Protocol(reason)
    }
}

/// One line of an answer: its value, or `None` for the settle marker.
fn answer_line(text: &str) -> Result<Option<Value>, String> {
    // A key given twice is refused, as the core's server refuses it.
    let courier_core::UniqueJson(value) = serde_json::from_str(text)
        .map_err(|error| format!("its line `{}` is not JSON: {error}", shown(&text)))?;
    if value == serde_json::json!({ "settled": true }) {
        return Ok(None);
    }
    if value.get("settled").is_some() {
        // Never an output: waiting on would only time out.
        return Err(format!(
            "its line `{}` is no settle marker: the marker is `{{\"settled\":true}}` exactly",
            shown(&text)
        ));
    }
    if ["input", "restart", "query"]
        .iter()
        .any(|key| value.get(key).is_some())
    {
        // No answer holds these: waiting on would only time out.
        return Err(format!(
            "its line `{}` is a line in, not an answer (does it echo its input?)",
            shown(&text)
        ));
    }
    Ok(Some(value))
}

/// Another implementation runs in a process group of its own, led by the
/// `sh` that starts it, so the whole group can be killed: killing `sh`
/// alone would leave node (or whatever the command started) running. A
/// group of its own is also out of the terminal's reach, so Ctrl-C (and
/// SIGTERM or SIGHUP: `timeout`, a closed terminal, a CI runner's stop) is
/// handled here: it kills every live group, then exits 130.
#[cfg(unix)]
mod group {
    use std::io;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, Once};
    use std::time::{Duration, Instant};

    /// The groups alive now, for Ctrl-C.
    static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

    /// Set once Ctrl-C (or SIGTERM, SIGHUP) is ending the run.
    static STOPPING: AtomicBool = AtomicBool::new(false);

    /// Whether a signal is ending the run (its handler exits 130 within
    /// [`GRACE`]): what the implementation does meanwhile is not news.
    pub(super) fn stopping() -> bool {
        STOPPING.load(Ordering::SeqCst)
    }

    /// Ctrl-C's action (before the exit 130 that removes the temporary
    /// files): every live group is asked to stop, then killed.
    fn stop_groups() {
        // Set under the lock: a group is either in the copy or never
        // spawned (see `spawn`).
        let groups = {
            let live = lock();
            STOPPING.store(true, Ordering::SeqCst);
            live.clone()
        };
        for group in &groups {
            signal(*group, libc::SIGTERM);
        }
        if !groups.is_empty() {
            std::thread::sleep(GRACE);
        }
        for group in &groups {
            signal(*group, libc::SIGKILL);
        }
    }

    /// Spawns `process` as the leader of a new process group.
    pub(super) fn spawn(process: &mut Command) -> io::Result<Child> {
        static HANDLER: Once = Once::new();
        HANDLER.call_once(|| courier::files::at_signal(stop_groups));
        // Spawned and listed under the lock, so the handler cannot copy
        // the groups in between and miss this one.
        let mut live = lock();
        if stopping() {
            // The handler exits (130) within its grace: nothing to start.
            drop(live);
            loop {
                std::thread::park();
            }
        }
        let child = process.process_group(0).spawn()?;
        live.push(leader(&child));
        Ok(child)
    }

    /// Whether the group's leader has exited, without reaping it: while it
    /// is a zombie its pid, the group's id, cannot be reused, so
    /// [`kill`] cannot reach a stranger.
    pub(super) fn exited(child: &mut Child) -> bool {
        ending(child).is_some()
    }

    /// How the group's leader ended (`exited with code 7`, `was killed by
    /// signal 9`), if it has, without reaping it (see [`exited`]).
    pub(super) fn ending(child: &mut Child) -> Option<String> {
        // SAFETY: `waitid` only writes the zeroed `siginfo_t` it is given;
        // `WNOWAIT` leaves the child to `Child::wait`.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let options = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        let waited = unsafe { libc::waitid(libc::P_PID, child.id(), &mut info, options) };
        if waited != 0 {
            // Nothing left to wait for: it ended, reaped already.
            return Some("ended".to_owned());
        }
        // SAFETY: `si_pid` is set by `waitid` (0 when nothing exited yet),
        // and `si_status` once it found the child exited.
        if unsafe { info.si_pid() } == 0 {
            return None;
        }
        let status = unsafe { info.si_status() };
        Some(match info.si_code {
            libc::CLD_EXITED => format!("exited with code {status}"),
            _ => format!("was killed by signal {status}"),
        })
    }

    /// How long a group asked to end (SIGTERM) has to clean up (the dsh
    /// adapter removes its temporary folder) before it is killed.
    const GRACE: Duration = Duration::from_millis(500);

    /// Ends every process of the child's group (the child not yet reaped):
    /// SIGTERM, then SIGKILL once the leader has exited or [`GRACE`] is
    /// over, for whatever of the group is left.
    pub(super) fn kill(child: &mut Child) {
        let group = leader(child);
        lock().retain(|live| *live != group);
        signal(group, libc::SIGTERM);
        let deadline = Instant::now() + GRACE;
        while Instant::now() < deadline && !exited(child) {
            std::thread::sleep(Duration::from_millis(5));
        }
        signal(group, libc::SIGKILL);
    }

    fn signal(group: i32, signal: libc::c_int) {
        // SAFETY: a plain system call; a group already gone is `ESRCH`,
        // which is fine.
        unsafe {
            libc::killpg(group, signal);
        }
    }

    fn leader(child: &Child) -> i32 {
        i32::try_from(child.id()).unwrap_or(i32::MAX)
    }

    /// The live groups, usable after a panic elsewhere held the lock.
    fn lock() -> std::sync::MutexGuard<'static, Vec<i32>> {
        LIVE.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Elsewhere a child is one process: killing it is all there is.
#[cfg(not(unix))]
mod group {
    use std::io;
    use std::process::{Child, Command};

    pub(super) fn spawn(process: &mut Command) -> io::Result<Child> {
        process.spawn()
    }

    pub(super) fn exited(child: &mut Child) -> bool {
        matches!(child.try_wait(), Ok(Some(_)))
    }

    pub(super) fn stopping() -> bool {
        false
    }

    pub(super) fn ending(child: &mut Child) -> Option<String> {
        match child.try_wait() {
            Ok(Some(status)) => Some(format!("ended: {status}")),
            _ => None,
        }
    }

    pub(super) fn kill(child: &mut Child) {
        let _ = child.kill();
    }
}
