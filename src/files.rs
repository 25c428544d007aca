//! A user's files are sacred: every file a command reads or writes goes
//! through here.
//!
//! [`check_paths`] refuses, before anything is written, an output that is a
//! folder, read-only or a dangling link, lies in a folder that does not
//! exist, or is the same file as an input or as another output of the same
//! command (compared as canonical paths, a file not yet written being its
//! canonical folder plus its name, and by inode). [`replace`] and [`Staged`] write through a
//! temporary file in the target's own folder and rename it over the target,
//! so a full disk, a kill or a write error leaves the old file whole (or no
//! file at all); a device or pipe is written in place, from a temporary
//! file once the output is whole.
//!
//! [`read_capped`] reads a file whole only up to a cap (a transcript to
//! draw: [`TRANSCRIPT_MAX`]) and [`Lines`] a line at a time, each capped,
//! so `courier run /dev/zero` is an error, not gigabytes; [`is_report`] and
//! [`read_report`] tell a race report by content and stream it.
//! [`exit_on_environment_failure`] and [`flush_stdout`] make a closed or
//! full stdout an exit 2, not a panic.

use std::fs::{self, File, Permissions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use tempfile::NamedTempFile;

/// An output a command will write: the flag that named it (`--out`, or a
/// description such as `the diagram beside --out`) and its path.
#[derive(Clone, Copy, Debug)]
pub struct Output<'a> {
    /// How the user named it, for the error.
    pub flag: &'a str,
    /// Where it goes.
    pub path: &'a Path,
}

/// Refuses the outputs of one command before anything is written: a folder,
/// a read-only file (the rename would go around its mode), a dangling link,
/// a path in a missing folder, the same file as an input, or the same file
/// as another output (also through a link). The error names the flag and the path.
/// Outputs it passes are noted with [`output_to`].
pub fn check_paths(inputs: &[&Path], outputs: &[Output<'_>]) -> Result<(), String> {
    let inputs: Vec<(&Path, Option<Identity>)> = inputs
        .iter()
        .map(|input| (*input, Identity::of(input)))
        .collect();
    let mut seen: Vec<(Output<'_>, Identity)> = Vec::new();
    for output in outputs {
        let Output { flag, path } = *output;
        let shown = named(path);
        let resolved = Identity::of(path);
        // First: the input is the reason, whatever else (read-only, say)
        // is true of it.
        if let Some((input, _)) = inputs.iter().find(|(_, input)| {
            input
                .as_ref()
                .zip(resolved.as_ref())
                .is_some_and(|(input, output)| input.same(output))
        }) {
            return Err(format!(
                "{flag} {shown} is the input {}: refused (it would be overwritten)",
                named(input)
            ));
        }
        if let Some(refusal) = unwritable(path) {
            return Err(format!("{flag} {shown}: {refusal}"));
        }
        // `out/` names a folder even before it exists; the rename would
        // fail after all the work.
        if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
            return Err(format!(
                "{flag} {shown}: ends in `/`, so it names a folder, not a file: refused"
            ));
        }
        let Some(resolved) = resolved else {
            return Err(format!(
                "{flag} {shown}: its folder does not exist (or it names no file)"
            ));
        };
        if let Some(refusal) = uncreatable(path) {
            return Err(format!("{flag} {shown}: {refusal}"));
        }
        if let Some((other, _)) = seen.iter().find(|(_, other)| other.same(&resolved)) {
            return Err(format!(
                "{flag} {shown} and {} {} are the same file: refused",
                other.flag,
                named(other.path)
            ));
        }
        seen.push((*output, resolved));
    }
    for output in outputs {
        output_to(output.path);
    }
    Ok(())
}

/// Refuses stdout when it is one of the command's input files (`courier
/// diagram x.txn >> x.txn`): what the command prints would be written into
/// what it reads. A terminal, a pipe or a device is never an input.
pub fn check_stdout(inputs: &[&Path]) -> Result<(), String> {
    let stdout = Path::new("/dev/stdout");
    if !fs::metadata(stdout).is_ok_and(|meta| meta.is_file()) {
        return Ok(());
    }
    let Some(stdout) = Identity::of(stdout) else {
        return Ok(());
    };
    let same = |input: &&&Path| Identity::of(input).is_some_and(|input| input.same(&stdout));
    match inputs.iter().find(same) {
        Some(input) => Err(format!(
            "stdout is the input {}: refused (what this command prints would be written into it)",
            named(input)
        )),
        None => Ok(()),
    }
}

/// Refuses a folder output (`flag` names it) that exists as something
/// else, or whose own folder does not exist, before any work; a folder not
/// there yet is created when written (only it: as for a file output, the
/// folder it goes in must exist).
pub fn check_folder(flag: &str, path: &Path) -> Result<(), String> {
    let not_a_folder = || {
        format!(
            "{flag} {}: not a folder (the output goes in a folder): refused",
            named(path)
        )
    };
    // Where the output's file goes, or where its folder is made: a file
    // made there and removed at once says it can be written (`/proc` is a
    // folder no file can be made in).
    let writable = |folder: &Path| {
        tempfile::Builder::new()
            .prefix(".courier-probe-")
            .tempfile_in(folder)
            .map(drop)
            .map_err(|error| {
                // The OS's words, without the probe's name tempfile adds.
                let error = error.to_string();
                let why = error.split(" at path ").next().unwrap_or_default();
                format!(
                    "{flag} {}: cannot write in {}: {why}",
                    named(path),
                    named(folder)
                )
            })
    };
    match fs::metadata(path) {
        Ok(meta) if !meta.is_dir() => Err(not_a_folder()),
        Ok(_) => writable(path),
        // `file/`: a file named as a folder.
        Err(error) if error.kind() == io::ErrorKind::NotADirectory => Err(not_a_folder()),
        Err(error) if error.kind() != io::ErrorKind::NotFound => {
            Err(format!("{flag} {}: {error}", named(path)))
        }
        // A link to nothing: the folder could not be made where it points.
        Err(_) if fs::symlink_metadata(path).is_ok() => Err(format!(
            "{flag} {}: a symbolic link to nothing: refused (name a folder)",
            named(path)
        )),
        Err(_) if !folder_of(path).is_dir() => Err(format!(
            "{flag} {}: its folder {} does not exist",
            named(path),
            named(folder_of(path))
        )),
        Err(_) => writable(folder_of(path)),
    }
}

/// Refuses `--diagram` beside an output (`flag` names it) that is a device
/// or a pipe (`--out /dev/stdout`): the picture is written beside a file,
/// named after it, and `/dev/stdout.svg` is no place for it.
pub fn check_beside(flag: &str, path: &Path) -> Result<(), String> {
    match fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => Err(format!(
            "--diagram beside {flag} {}: a device or a pipe, not a file to draw beside: \
             refused (name a file)",
            named(path)
        )),
        _ => Ok(()),
    }
}

/// Why `path` cannot be an output, if it cannot: a folder, a read-only
/// file (a rename over it would go around its mode), or a dangling link.
fn unwritable(path: &Path) -> Option<&'static str> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        // A rename would replace the user's link with a file (and where it
        // points is not for us to create).
        Err(error) => {
            let link = fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
            return match error.kind() {
                _ if !link => None,
                io::ErrorKind::NotFound => Some("is a link to a file that does not exist: refused"),
                _ => Some("is a link that leads to no file (a loop of links?): refused"),
            };
        }
    };
    if meta.is_dir() {
        Some("is a folder, not a file")
    } else if meta.permissions().readonly() {
        Some("is read-only: refused")
    } else {
        None
    }
}

/// Why no file can be written at `path` when its folder takes none (a
/// read-only folder or file system, `/proc`, `/sys`): a temporary file is
/// made there and removed at once, so the refusal comes before the work,
/// not after it. A device or pipe, written in place, is not probed.
fn uncreatable(path: &Path) -> Option<String> {
    if fs::metadata(path).is_ok_and(|meta| !meta.is_file()) {
        return None;
    }
    // The probe's own name is cut to fit; the output's must fit as it is.
    let bytes = path.file_name()?.len();
    if bytes > NAME_MAX {
        return Some(format!(
            "its name is {bytes} bytes long: a file name holds at most {NAME_MAX}"
        ));
    }
    let name = path.file_name()?.to_string_lossy();
    let target = canonical(path)?;
    match temporary_in(folder_of(&target), &name) {
        Ok(_removed_when_dropped) => None,
        Err(error) => Some(format!(
            "cannot create a file in its folder: {}",
            unnamed(error)
        )),
    }
}

/// Whether `path` names this process's stdout (`/dev/stdout`, or the file
/// or pipe stdout is): a protocol server's answers go there, and a file
/// written there would be read as answers, or replace them.
pub fn is_stdout(path: &Path) -> bool {
    match (Identity::of(path), Identity::of(Path::new("/dev/stdout"))) {
        (Some(path), Some(stdout)) => path.same(&stdout),
        _ => false,
    }
}

/// Whether an output of this command is its stdout (see [`output_to`]).
static STDOUT_IS_AN_OUTPUT: AtomicBool = AtomicBool::new(false);

/// Notes that the command writes an output to `path`: when that is its
/// stdout (`--out /dev/stdout`), its status lines ([`status!`]) go to
/// stderr from then on, so what is piped on is the output alone.
///
/// [`status!`]: crate::status
pub fn output_to(path: &Path) {
    if is_stdout(path) {
        STDOUT_IS_AN_OUTPUT.store(true, Ordering::Relaxed);
    }
}

/// Whether status lines go to stderr (see [`output_to`]).
pub fn status_on_stderr() -> bool {
    STDOUT_IS_AN_OUTPUT.load(Ordering::Relaxed)
}

/// `println!` for a command's status lines (a verdict, `wrote FILE`): on
/// stderr when an output of the command is stdout ([`files::output_to`]).
///
/// [`files::output_to`]: crate::files::output_to
#[macro_export]
macro_rules! status {
    ($($line:tt)*) => {
        if $crate::files::status_on_stderr() {
            eprintln!($($line)*)
        } else {
            println!($($line)*)
        }
    };
}

/// Which file a path names: its canonical path (for a file not written yet,
/// its canonical folder joined with its name) and, for a file that exists,
/// its device and inode, so a hard link to an input is that input too.
#[derive(PartialEq, Eq, Debug)]
struct Identity {
    path: PathBuf,
    node: Option<(u64, u64)>,
}

impl Identity {
    fn of(path: &Path) -> Option<Identity> {
        Some(Identity {
            path: canonical(path)?,
            node: node(path),
        })
    }

    /// Whether both name the same file.
    fn same(&self, other: &Identity) -> bool {
        self.path == other.path || (self.node.is_some() && self.node == other.node)
    }
}

/// The first path of `paths` that names the same file as an earlier one
/// (also through a link, `./`, or a hard link), with that earlier one's
/// index: for a command that writes each of its inputs. A path to no file
/// is compared by its name in its folder (`nope.txn` given twice repeats);
/// one whose folder does not exist is not compared.
pub fn first_repeated(paths: &[PathBuf]) -> Option<(usize, usize)> {
    let mut by_path = std::collections::BTreeMap::new();
    let mut by_node = std::collections::BTreeMap::new();
    for (index, path) in paths.iter().enumerate() {
        let Some(identity) = Identity::of(path) else {
            continue;
        };
        let earlier = by_path
            .get(&identity.path)
            .copied()
            .or_else(|| identity.node.and_then(|node| by_node.get(&node).copied()));
        if let Some(earlier) = earlier {
            return Some((earlier, index));
        }
        by_path.insert(identity.path, index);
        if let Some(node) = identity.node {
            by_node.insert(node, index);
        }
    }
    None
}

#[cfg(unix)]
fn node(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|meta| (meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn node(_: &Path) -> Option<(u64, u64)> {
    None
}

/// The canonical path of `path`, or of its folder joined with its name when
/// the file does not exist yet; `None` when neither resolves.
fn canonical(path: &Path) -> Option<PathBuf> {
    if let Ok(resolved) = fs::canonicalize(path) {
        return Some(resolved);
    }
    let name = path.file_name()?;
    Some(fs::canonicalize(folder_of(path)).ok()?.join(name))
}

/// The folder a path's file lives in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    }
}

/// Writes `bytes` to `path` whole or not at all (see [`replace_with`]).
pub fn replace(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    replace_with(path, |file| file.write_all(bytes.as_ref()))
}

/// A file a command writes and may find there already: one it wrote
/// before, which it replaces, or a file of the user's, which it keeps (a
/// user's data is never overwritten, even at a path the user named: a
/// mistyped `--out b.txn` for `b.svg` must not destroy the transcript).
pub struct Replaceable<'a> {
    /// Where it goes.
    pub path: &'a Path,
    /// The flag that names the path (or another one).
    pub flag: &'static str,
    /// Who chose the path.
    pub chosen: Chosen,
    /// Whether the whole file at the path is one this command wrote: its
    /// kind's reader takes all of it, so a file the user wrote, or one of
    /// ours the user added to, is kept.
    pub ours: fn(&Path) -> io::Result<bool>,
}

/// Who chose an output's path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chosen {
    /// The user, with the flag: a device or a pipe there is written in place.
    ByUser,
    /// The command (`check`'s `counterexample.txn`, `sim`'s
    /// `race-<seed>.json`, a picture beside an output): a device or pipe
    /// there is the user's too, and is neither read, which could block,
    /// nor written.
    Default,
}

impl Replaceable<'_> {
    /// Why the path cannot be written, if a file of the user's is there.
    /// An empty file holds nothing to lose (`mktemp`'s); a file that cannot
    /// be read is kept, since whose it is cannot be told.
    pub fn foreign(&self) -> Option<String> {
        // Nothing there, or a folder (refused elsewhere).
        let meta = fs::metadata(self.path).ok()?;
        if meta.is_dir() {
            return None;
        }
        let why = if !meta.is_file() {
            match self.chosen {
                Chosen::ByUser => return None,
                Chosen::Default => "is not a regular file".to_owned(),
            }
        } else if meta.len() == 0 {
            return None;
        } else {
            match (self.ours)(self.path) {
                Ok(true) => return None,
                Ok(false) => "was not written by this command".to_owned(),
                Err(error) => {
                    format!("cannot be read ({error}) to tell whether this command wrote it")
                }
            }
        };
        Some(match self.chosen {
            Chosen::ByUser => format!(
                "{} {} is there and {why}: kept (delete it first, or name another path)",
                self.flag,
                named(self.path)
            ),
            Chosen::Default => format!(
                "{} is there and {why}: kept (name another path with {})",
                named(self.path),
                self.flag
            ),
        })
    }

    /// [`replace`], unless [`Replaceable::foreign`] says the file there is
    /// the user's (asked again when writing: it may have appeared since).
    pub fn replace(&self, bytes: impl AsRef<[u8]>) -> io::Result<()> {
        match self.foreign() {
            Some(why) => Err(io::Error::new(io::ErrorKind::AlreadyExists, why)),
            None => replace(self.path, bytes),
        }
    }
}

/// Writes `path` through `write`, whole or not at all: `write` fills a
/// temporary file in `path`'s folder, which is synced and renamed over
/// `path`. If `write` fails (a full disk), `path` is as it was and the
/// temporary file is gone. A link is followed, so the file it names is
/// replaced, not the link; an existing file keeps its permissions.
pub fn replace_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    staged_with(path, write)?.commit()
}

/// A staged file filled by `write`, not yet committed.
fn staged_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<Staged> {
    let mut staged = Staged::new(path)?;
    {
        let mut buffered = io::BufWriter::new(staged.file());
        write(&mut buffered)?;
        buffered.flush()?;
    }
    Ok(staged)
}

/// The whole text of a file a command may have written, for its
/// [`Replaceable::ours`]: `None` when it is not UTF-8 or is larger than
/// anything a command writes there (64 MiB).
pub fn whole_text(path: &Path) -> io::Result<Option<String>> {
    const CAP: u64 = 64 << 20;
    let mut bytes = Vec::new();
    File::open(path)?.take(CAP + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= CAP)
        .then(|| String::from_utf8(bytes).ok())
        .flatten())
}

/// Whether `text` is a transcript a command wrote: its first line starts
/// with `heading` (how it says to replay it) and the whole file reads as a
/// transcript (SPEC §9) whose every block pins its outputs (a line the
/// user added reads as a block without `----`), with no comment after its
/// first command (the commands write theirs above it).
pub fn is_transcript(text: &str, heading: &str) -> bool {
    let Ok(script) = courier_core::transcript::Script::parse(text) else {
        return false;
    };
    let first = script
        .blocks()
        .next()
        .map_or(usize::MAX, |block| block.line);
    let comment_below = text
        .lines()
        .skip(first)
        .any(|line| line.trim_ascii_start().starts_with('#'));
    text.starts_with(heading)
        && !comment_below
        && script.blocks().all(|block| block.expected.is_some())
}

/// As [`replace_with`], for a path that must be new: fails
/// (`AlreadyExists`) when a file has appeared there meanwhile (see
/// [`Staged::commit_new`]).
pub fn create_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    staged_with(path, write)?.commit_new()
}

/// Why `path`, named by `flag`, may not be written by a command that
/// writes only new files: a file is there (a user's data is never
/// overwritten). A device or a pipe (`/dev/null`, `/dev/stdout`) is
/// written in place, so it may be named.
pub fn refused_existing(flag: &str, path: &Path) -> Option<String> {
    let device = fs::metadata(path).is_ok_and(|meta| !meta.is_file() && !meta.is_dir());
    let there = fs::symlink_metadata(path).is_ok();
    (there && !device && !is_stdout(path))
        .then(|| format!("{flag} {} exists: refused (write a new file)", named(path)))
}

/// A file being written beside its target, renamed over it by
/// [`Staged::commit`]; dropped uncommitted, it is deleted and the target is
/// untouched. For writers that need a path of their own (a session log).
/// A target that exists and is not a regular file (`/dev/null`, a FIFO) has
/// nothing to keep whole and must not be replaced: it is written in place,
/// copied there from a temporary file on commit (a writer may sync or read
/// back what it wrote, which a device or pipe cannot do).
#[derive(Debug)]
pub struct Staged(Stage);

#[derive(Debug)]
enum Stage {
    /// A temporary file beside a regular (or new) file.
    Beside {
        temporary: Temporary,
        target: PathBuf,
        permissions: Option<Permissions>,
        /// The replaced file's owner (user, group), given back to it.
        owner: Option<(u32, u32)>,
    },
    /// A device or pipe: written to a temporary file in the system's
    /// temporary folder (a writer may sync it or read it back, which a
    /// device or pipe cannot do), copied into the target on commit.
    InPlace {
        temporary: Temporary,
        target: PathBuf,
    },
}

impl Staged {
    /// A fresh temporary file in `target`'s folder (or, for a device or a
    /// pipe, in the system's temporary folder).
    pub fn new(target: &Path) -> io::Result<Staged> {
        if let Some(refusal) = unwritable(target) {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, refusal));
        }
        // Replace the file a link names, not the link.
        let target = fs::canonicalize(target).unwrap_or_else(|_| target.to_owned());
        let metadata = fs::metadata(&target).ok();
        let name = target.file_name().map_or_else(
            || "courier".into(),
            |name| name.to_string_lossy().into_owned(),
        );
        if metadata.as_ref().is_some_and(|meta| !meta.is_file()) {
            let folder = std::env::temp_dir();
            let temporary = temporary_in(&folder, &name).map_err(|error| {
                let error = unnamed(error);
                io::Error::new(
                    error.kind(),
                    format!("a temporary file in {}: {error}", named(&folder)),
                )
            })?;
            return Ok(Staged(Stage::InPlace {
                temporary: Temporary::register(temporary),
                target,
            }));
        }
        let temporary = temporary_in(folder_of(&target), &name).map_err(unnamed)?;
        Ok(Staged(Stage::Beside {
            temporary: Temporary::register(temporary),
            target,
            owner: metadata.as_ref().and_then(owner),
            permissions: metadata.map(|meta| meta.permissions()),
        }))
    }

    /// The path to write: always a regular temporary file.
    pub fn path(&self) -> &Path {
        match &self.0 {
            Stage::Beside { temporary, .. } | Stage::InPlace { temporary, .. } => temporary.path(),
        }
    }

    /// The temporary file, open for writing.
    pub fn file(&mut self) -> &mut File {
        match &mut self.0 {
            Stage::Beside { temporary, .. } | Stage::InPlace { temporary, .. } => temporary.file(),
        }
    }

    /// Syncs the temporary file and renames it over the target; the rename
    /// is made durable by syncing the folder (best effort: not every file
    /// system can sync a folder).
    pub fn commit(self) -> io::Result<()> {
        self.finish(Replacing::Allowed)
    }

    /// As [`Staged::commit`], but fails (`AlreadyExists`) when a file has
    /// appeared at the target since it was checked: a command that writes
    /// only new files never replaces one made meanwhile. A device or pipe
    /// is written in place, as by `commit`: nothing is replaced there.
    pub fn commit_new(self) -> io::Result<()> {
        self.finish(Replacing::Refused)
    }

    fn finish(self, replacing: Replacing) -> io::Result<()> {
        let (mut temporary, target, permissions, owner) = match self.0 {
            Stage::Beside {
                temporary,
                target,
                permissions,
                owner,
            } => (temporary, target, permissions, owner),
            Stage::InPlace {
                temporary, target, ..
            } => {
                // Read from the path: a writer may have replaced the file
                // there (a log created anew at `path()`).
                let mut written = File::open(temporary.path())?;
                let mut device = fs::OpenOptions::new().write(true).open(&target)?;
                let copied = io::copy(&mut written, &mut device).and_then(|_| device.flush());
                // Stdout closed (`--out /dev/stdout | head -1`): nobody
                // reads any more, and the command ends quietly, as when it
                // prints there. `exit` runs no destructors: every temporary
                // file this one among them goes first.
                if let Err(error) = &copied
                    && error.kind() == io::ErrorKind::BrokenPipe
                    && is_stdout(&target)
                {
                    remove_live_temporaries();
                    std::process::exit(2);
                }
                return copied;
            }
        };
        temporary.file().sync_all()?;
        let permissions = match permissions {
            Some(permissions) => permissions,
            None => default_permissions(temporary.file())?,
        };
        fs::set_permissions(temporary.path(), permissions)?;
        give_back(temporary.file(), owner);
        temporary.persist(&target, replacing)?;
        if let Ok(folder) = File::open(folder_of(&target)) {
            let _best_effort = folder.sync_all();
        }
        Ok(())
    }
}

/// Who owns the file `meta` describes (user, group), where owners exist.
fn owner(meta: &fs::Metadata) -> Option<(u32, u32)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.uid(), meta.gid()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// Gives the replacing file the replaced one's owner, so a rewrite by
/// another user (root) does not take the user's file from them. Best
/// effort: only a privileged process may give a file away, and one that
/// cannot made the file its own owner could not change anyway.
fn give_back(file: &File, owner: Option<(u32, u32)>) {
    #[cfg(unix)]
    if let Some((user, group)) = owner {
        use std::os::unix::fs::MetadataExt;
        let mine = file
            .metadata()
            .is_ok_and(|meta| (meta.uid(), meta.gid()) == (user, group));
        if !mine {
            let _best_effort = std::os::unix::fs::fchown(file, Some(user), Some(group));
        }
    }
    #[cfg(not(unix))]
    let _ = (file, owner);
}

/// Whether a commit may replace a file at its target.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Replacing {
    Allowed,
    Refused,
}

/// A new temporary file for `name` in `folder`: `.NAME.PID.N.tmp`, where
/// PID is this process's id and N counts the temporary files it made, so
/// two processes (or two writes of one) never share a name. A file of that
/// name already there (left by a process killed mid-write whose pid is
/// ours now) is not ours: it is left alone and the next N is tried. NAME is
/// cut (at a character) so the whole fits the file system's 255 bytes.
fn temporary_in(folder: &Path, name: &str) -> io::Result<NamedTempFile> {
    use std::sync::atomic::AtomicU64;
    /// How many stale names in a row are passed over before giving up.
    const TRIES: u32 = 1000;
    static MADE: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    for _ in 0..TRIES {
        let made = MADE.fetch_add(1, Ordering::Relaxed);
        let tail = format!(".{pid}.{made}.tmp");
        let room = NAME_MAX - 1 - tail.len();
        let cut = name
            .char_indices()
            .map(|(at, c)| at + c.len_utf8())
            .take_while(|end| *end <= room)
            .last()
            .unwrap_or(0);
        let created = tempfile::Builder::new()
            .prefix(&format!(".{}", &name[..cut]))
            .suffix(&tail)
            .rand_bytes(0)
            .tempfile_in(folder);
        match created {
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            created => return created,
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{TRIES} temporary names in a row are taken (stale `.*.{pid}.*.tmp` files?)"),
    ))
}

/// The longest file name most file systems take, in bytes.
const NAME_MAX: usize = 255;

/// A temporary file's creation error without its random name (tempfile
/// appends ` at path "..."` to the system's message): the user named the
/// target, and the caller names that.
fn unnamed(error: io::Error) -> io::Error {
    let text = error.to_string();
    match text.rsplit_once(" at path \"") {
        Some((cause, _)) => io::Error::new(error.kind(), cause),
        None => error,
    }
}

/// What a new file gets: readable by others as `fs::write` would leave it
/// (the temporary file is private until renamed).
#[cfg(unix)]
fn default_permissions(file: &File) -> io::Result<Permissions> {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = file.metadata()?.permissions();
    permissions.set_mode(0o644);
    Ok(permissions)
}

#[cfg(not(unix))]
fn default_permissions(file: &File) -> io::Result<Permissions> {
    Ok(file.metadata()?.permissions())
}

/// Reads `path` as UTF-8 text of at most `cap` bytes; a longer input (or an
/// endless one, such as `/dev/zero`) is an error saying the cap, read no
/// further than one byte past it.
pub fn read_capped(path: &Path, cap: u64) -> Result<String, String> {
    if path.is_dir() {
        return Err("cannot read: is a folder".to_owned());
    }
    let file = File::open(path).map_err(|error| format!("cannot read: {error}"))?;
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("cannot read: {error}"))?;
    if bytes.len() as u64 > cap {
        return Err(format!(
            "larger than {} MiB: refused (this command reads its input whole)",
            cap >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|error| {
        let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|byte| **byte == b'\n').count() + 1;
        format!(
            "line {line}: not UTF-8 text (byte {} of the file is invalid){}",
            valid.len() + 1,
            courier_core::log::encoding_hint(error.as_bytes())
        )
    })
}

/// A file's lines as written (line endings kept), read one at a time as
/// UTF-8, each at most `max` bytes: a transcript is run a block at a time,
/// so its size is not capped, but `/dev/zero` (one endless line) is refused
/// at the cap. An error ends the lines. [`Lines::fingerprint`] tells whether
/// a file read twice (a first pass for its layout, then the run) changed
/// between the readings.
pub struct Lines<'a> {
    reader: Box<dyn io::BufRead + 'a>,
    max: usize,
    number: usize,
    read: u64,
    hash: std::hash::DefaultHasher,
    stopped: bool,
}

impl<'a> Lines<'a> {
    /// Opens `path` (a folder is an error, as is a file that cannot be opened).
    pub fn open(path: &Path, max: usize) -> Result<Lines<'a>, String> {
        if path.is_dir() {
            return Err("cannot read: is a folder".to_owned());
        }
        let file = File::open(path).map_err(|error| format!("cannot read: {error}"))?;
        Ok(Lines::of(io::BufReader::with_capacity(1 << 16, file), max))
    }

    /// The lines of `reader` (a file's text already held, for one).
    pub fn of(reader: impl io::BufRead + 'a, max: usize) -> Lines<'a> {
        Lines {
            reader: Box::new(reader),
            max,
            number: 0,
            read: 0,
            hash: std::hash::DefaultHasher::new(),
            stopped: false,
        }
    }

    /// The bytes read so far and a hash of them.
    pub fn fingerprint(&self) -> (u64, u64) {
        use std::hash::Hasher;
        (self.read, self.hash.finish())
    }

    fn read_line(&mut self) -> Result<Option<String>, String> {
        use io::BufRead;
        use std::hash::Hasher;
        self.number += 1;
        let mut bytes = Vec::new();
        let cap = self.max as u64 + 1;
        let read = self
            .reader
            .as_mut()
            .take(cap)
            .read_until(b'\n', &mut bytes)
            .map_err(|error| format!("cannot read: {error}"))?;
        if read == 0 {
            return Ok(None);
        }
        if bytes.len() > self.max {
            return Err(format!(
                "line {}: larger than {} MiB: refused (a line is read whole)",
                self.number,
                self.max >> 20
            ));
        }
        let start = self.read;
        self.read += read as u64;
        self.hash.write(&bytes);
        let line = self.number;
        String::from_utf8(bytes).map(Some).map_err(|error| {
            let hint = if start == 0 {
                courier_core::log::encoding_hint(error.as_bytes())
            } else {
                ""
            };
            format!(
                "line {line}: not UTF-8 text (byte {} of the file is invalid){hint}",
                start + error.utf8_error().valid_up_to() as u64 + 1
            )
        })
    }
}

impl Iterator for Lines<'_> {
    type Item = Result<String, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stopped {
            return None;
        }
        let line = self.read_line().transpose();
        self.stopped = !matches!(line, Some(Ok(_)));
        line
    }
}

/// Makes a failure of the environment an exit, not a panic with a
/// backtrace. std panics when stdout or stderr cannot be written (`print!`)
/// and when a thread cannot be spawned (`thread::spawn`, in the simulator's
/// and the model checker's workers); a user causes the first with `| head
/// -1` or `> /dev/full`, the second with too many threads for the machine.
/// A closed pipe (nobody reads any more) exits quietly; any other such
/// failure prints one `error:` line; all exit 2. Every other panic is a bug
/// and keeps the default report.
pub fn exit_on_environment_failure() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        let printing = ["stdout", "stderr"]
            .into_iter()
            .find(|stream| message.starts_with(&format!("failed printing to {stream}:")));
        let report = match printing {
            Some(_) if broken_pipe(message) => None,
            // Nowhere left to say it: the exit code does.
            Some("stderr") => None,
            Some(_) => Some(format!("error: cannot write to stdout: {message}")),
            // std's words, and stateright's for its checker's workers.
            None if message.starts_with("failed to spawn thread")
                || message.starts_with("Failed to spawn a thread") =>
            {
                // std writes the error's Debug (`Os { code: 11, kind: ... }`):
                // said as the OS says it.
                let why = os_code(message).map_or_else(
                    || message.to_owned(),
                    |code| io::Error::from_raw_os_error(code).to_string(),
                );
                Some(no_worker_thread(why))
            }
            None => return default(info),
        };
        if let Some(report) = report {
            let _unreported = writeln!(io::stderr(), "{report}");
        }
        // `exit` runs no destructors: the temporary files they would
        // remove go now.
        remove_live_temporaries();
        std::process::exit(2);
    }));
}

/// The temporary files and folders this process made and still holds (each
/// while its [`Live`] lives): an exit that runs no destructors (the panic
/// hook's, for a stdout that cannot be written, or a signal's, see
/// [`at_signal`]) removes them itself, so only a kill leaves one behind.
static LIVE_TEMPORARIES: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn live_temporaries() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE_TEMPORARIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A temporary file's or folder's path, registered for [`remove_live_temporaries`]
/// from its creation until this is dropped (after the file was renamed or
/// removed: a name this process made is never made again, so removing it
/// late removes nothing else).
#[derive(Debug)]
struct Live(PathBuf);

impl Live {
    /// Registers `path`, a temporary file this process just made.
    fn new(path: &Path) -> Live {
        exit_on_signal();
        live_temporaries().push(path.to_owned());
        Live(path.to_owned())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let mut live = live_temporaries();
        if let Some(at) = live.iter().rposition(|path| *path == self.0) {
            live.swap_remove(at);
        }
    }
}

/// A temporary file this process made: deleted when dropped, and removed
/// by [`remove_live_temporaries`] on an exit that runs no destructors,
/// until it is dropped or renamed over its target.
#[derive(Debug)]
pub struct Temporary {
    /// Declared first, so it is deleted before its name is unregistered.
    file: NamedTempFile,
    _live: Live,
}

impl Temporary {
    /// Registers `file`, just made by this process.
    pub fn register(file: NamedTempFile) -> Temporary {
        let _live = Live::new(file.path());
        Temporary { file, _live }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The file, open for writing.
    pub fn file(&mut self) -> &mut File {
        self.file.as_file_mut()
    }

    /// Renames it to `target` (over a file there only when `replacing` is
    /// allowed); its name is unregistered once renamed.
    fn persist(self, target: &Path, replacing: Replacing) -> io::Result<()> {
        let Temporary { file, _live } = self;
        match replacing {
            Replacing::Allowed => file.persist(target),
            Replacing::Refused => file.persist_noclobber(target),
        }
        .map(drop)
        .map_err(|error| error.error)
    }
}

/// A temporary folder this process made (the `TMPDIR` of an
/// implementation run by `--against`): removed with all it holds when
/// dropped, and by [`remove_live_temporaries`] on an exit that runs no
/// destructors. So what a killed implementation could not clean up goes
/// too.
#[derive(Debug)]
pub struct TemporaryFolder {
    /// Declared first, so it is removed before its name is unregistered.
    folder: tempfile::TempDir,
    _live: Live,
}

impl TemporaryFolder {
    /// A new folder in the system's temporary folder, its name starting
    /// with `prefix`.
    pub fn new(prefix: &str) -> io::Result<TemporaryFolder> {
        let folder = tempfile::Builder::new().prefix(prefix).tempdir()?;
        let _live = Live::new(folder.path());
        Ok(TemporaryFolder { folder, _live })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        self.folder.path()
    }
}

/// The error line for a worker thread the OS refused.
pub fn no_worker_thread(why: impl std::fmt::Display) -> String {
    format!("error: cannot start a worker thread: {why}")
}

/// Whether `count` threads with std's default stack can live here at once:
/// each is started, waits until all are, and ends. The model checker's
/// workers start one by one and fill memory as soon as they start, so a
/// worker the OS refuses late (too little address space left) races the
/// running ones' allocations, and a failed allocation aborts the process;
/// asked first, while nothing else runs, the refusal is a plain error.
pub fn threads_available(count: usize) -> io::Result<()> {
    let gate = std::sync::RwLock::new(());
    let held = gate
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    std::thread::scope(|scope| {
        let mut started = Ok(());
        for _ in 0..count {
            let waits = || drop(gate.read());
            if let Err(error) = std::thread::Builder::new().spawn_scoped(scope, waits) {
                started = Err(error);
                break;
            }
        }
        drop(held);
        started
    })
}

/// Removes every temporary file and folder still registered: for an exit
/// that runs no destructors.
fn remove_live_temporaries() {
    for path in live_temporaries().drain(..) {
        let folder = fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_dir());
        let _best_effort = if folder {
            fs::remove_dir_all(path)
        } else {
            fs::remove_file(path)
        };
    }
}

/// What a signal does before the exit it ends in (see [`at_signal`]).
static SIGNAL_ACTIONS: std::sync::Mutex<Vec<fn()>> = std::sync::Mutex::new(Vec::new());

/// Has Ctrl-C (or SIGTERM, SIGHUP: `timeout`, a closed terminal, a CI
/// runner's stop) run `action` first, then end the process as
/// [`exit_on_signal`] does: `--against` stops the process groups it started.
pub fn at_signal(action: fn()) {
    SIGNAL_ACTIONS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(action);
    exit_on_signal();
}

/// Ends the process on Ctrl-C, SIGTERM or SIGHUP with exit 130, after the
/// [`at_signal`] actions, removing the temporary files still live: an exit
/// runs no destructors, and the default death none either, so a Ctrl-C
/// while a command staged its output (or sat blocked writing it to a FIFO
/// nobody reads) left the staged file beside the user's. Installed once:
/// by every command as it starts, and at the first temporary file or
/// action; a handler set before (the Explorer's) keeps its place. A signal
/// the process was started ignoring (`nohup`, a background job's SIGINT)
/// stays ignored.
pub fn exit_on_signal() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let ignored = ignored_signals();
        let _another_handler_stays = ctrlc::set_handler(|| {
            let actions = SIGNAL_ACTIONS
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            for action in actions {
                action();
            }
            remove_live_temporaries();
            std::process::exit(130);
        });
        ignore_again(&ignored);
    });
}

/// The signals [`exit_on_signal`] handles that this process was started
/// ignoring.
#[cfg(unix)]
fn ignored_signals() -> Vec<libc::c_int> {
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
        .into_iter()
        .filter(|&signal| {
            // SAFETY: with no new action, `sigaction` only writes the
            // current one into the zeroed struct it is given.
            let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
            let read = unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) };
            read == 0 && current.sa_sigaction == libc::SIG_IGN
        })
        .collect()
}

#[cfg(not(unix))]
fn ignored_signals() -> Vec<i32> {
    Vec::new()
}

/// Ignores `signals` again (the handler took them over).
#[cfg(unix)]
fn ignore_again(signals: &[libc::c_int]) {
    for &signal in signals {
        // SAFETY: a plain system call setting a signal's disposition.
        unsafe {
            libc::signal(signal, libc::SIG_IGN);
        }
    }
}

#[cfg(not(unix))]
fn ignore_again(_: &[i32]) {}

/// The OS error code in std's Debug of an `io::Error` (`Os { code: 11, ...`).
fn os_code(message: &str) -> Option<i32> {
    let (_, after) = message.split_once("Os { code: ")?;
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Whether std's print failure names a closed pipe: its message ends with
/// the `io::Error` it got, whose OS code the platform maps to a kind.
fn broken_pipe(message: &str) -> bool {
    message
        .rsplit_once("(os error ")
        .and_then(|(_, code)| code.strip_suffix(')')?.parse().ok())
        .is_some_and(|code| io::Error::from_raw_os_error(code).kind() == io::ErrorKind::BrokenPipe)
}

/// serde's reason a value did not read (a protocol line, a race report), in
/// JSON's and docs/PROTOCOL.md's words: what serde expected is named by
/// Rust types (`internally tagged enum CancelCause`, `usize`) and JSON by
/// serde's data model (`map`, `sequence`, `unit`), none of which a user
/// has heard of.
pub fn in_json_words(reason: &str) -> String {
    /// serde's phrase, then the protocol's, longest phrases first where one
    /// holds another.
    const WORDS: [(&str, &str); 13] = [
        (
            "expected internally tagged enum CancelCause",
            "expected a cause: an object whose `kind` is `user`, `parent` or `hook`",
        ),
        (
            "expected map with a single key",
            "expected exactly one step outcome key: `completed`, `max-tokens`, \
             `tool-calls` or `fail` (each with null)",
        ),
        (
            "expected usize",
            "expected an integer from 0 to 18446744073709551615",
        ),
        (
            "expected u64",
            "expected an integer from 0 to 18446744073709551615",
        ),
        ("expected u32", "expected an integer from 0 to 4294967295"),
        (
            "expected variant identifier",
            "expected a kind's name (a string)",
        ),
        (
            "expected string or map",
            "expected a kind's name (a string)",
        ),
        ("expected unit", "expected null"),
        ("expected a sequence", "expected an array"),
        ("expected a map", "expected an object"),
        ("invalid type: map", "invalid type: an object"),
        ("invalid type: sequence", "invalid type: an array"),
        ("invalid value: map", "invalid value: an object"),
    ];
    let text = WORDS
        .iter()
        .fold(reason.to_owned(), |text, (serde, protocol)| {
            text.replace(serde, protocol)
        });
    // The phrases that name a Rust type after them (`expected null variant
    // PreStepDecision::Pass`: the value the word `pass` stands for is
    // null), said without it.
    const NAMING: [(&str, &str); 5] = [
        ("expected null variant ", "expected null"),
        ("expected unit variant ", "expected null"),
        ("expected struct variant ", "expected an object"),
        ("expected struct ", "expected an object"),
        (
            "expected internally tagged enum ",
            "expected an object whose `kind` names its case",
        ),
    ];
    NAMING.iter().fold(text, |text, (serde, protocol)| {
        let Some(at) = text.find(serde) else {
            return text;
        };
        let rest = &text[at + serde.len()..];
        let path = rest
            .find(|c: char| !(c.is_alphanumeric() || c == ':' || c == '_'))
            .unwrap_or(rest.len());
        format!("{}{protocol}{}", &text[..at], &rest[path..])
    })
}

/// Whether stdout is a pipe whose reader has gone (`| head -1` exited): a
/// command that prints only at its end (`sim` over a long range) asks
/// between its steps, and ends quietly instead of working for nobody.
#[cfg(unix)]
pub fn stdout_closed() -> bool {
    let mut stdout = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid `pollfd`, and a zero timeout: poll only reads the
    // descriptor's state.
    let ready = unsafe { libc::poll(&mut stdout, 1, 0) };
    ready > 0 && stdout.revents & libc::POLLERR != 0
}

#[cfg(not(unix))]
pub fn stdout_closed() -> bool {
    false
}

/// Whether a command has met (and reported) a stdout it cannot write.
static STDOUT_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A command that writes stdout itself met `error`: says why once (nothing
/// for a closed pipe: nobody reads any more) and marks it, so
/// [`flush_stdout`] neither says it again nor overrides the exit code the
/// command chose (`serve-protocol` ends with 0 when its client goes).
pub fn stdout_failed(error: &io::Error) {
    let again = STDOUT_FAILED.swap(true, Ordering::Relaxed);
    if !again && error.kind() != io::ErrorKind::BrokenPipe {
        let _unreported = writeln!(io::stderr(), "error: cannot write to stdout: {error}");
    }
}

/// Flushes what a command left in stdout's buffer (std would drop the
/// error at exit): `Some(exit 2)` after saying why when it fails, quietly
/// for a closed pipe; `None` when the command already met the failure
/// ([`stdout_failed`]) and chose its exit code.
pub fn flush_stdout() -> Option<std::process::ExitCode> {
    if STDOUT_FAILED.load(Ordering::Relaxed) {
        return None;
    }
    let error = io::stdout().flush().err()?;
    stdout_failed(&error);
    Some(std::process::ExitCode::from(2))
}

/// An error about a file as every command prints it after `error: `:
/// `<file>:<line>: <why>` when the error names its line (`line N: why`,
/// as the readers say it), else `<file>: <why>`, so each error about a
/// line reads the same way, whichever command found it. The error is
/// printed [`escaped`]: it may quote what the file holds (an id, a key, a
/// field of a report), which must not end the line or act on the terminal.
pub fn located(file: impl std::fmt::Display, error: impl std::fmt::Display) -> String {
    let error = error.to_string();
    let error = escaped(&error);
    let line = error
        .strip_prefix("line ")
        .and_then(|rest| rest.split_once(": "))
        .filter(|(number, _)| !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()));
    match line {
        Some((number, why)) => format!("{file}:{number}: {why}"),
        None => format!("{file}: {error}"),
    }
}

/// A path as every command prints it: as written, unless it holds a
/// control character (a newline would let a file's name forge another
/// file's output line: `a\nb.txn: ok`), a character that reorders text
/// on a terminal, or bytes that are not UTF-8; such a name is printed
/// quoted and escaped as Rust writes a string (`"a\nb.txn"`, `"\u{202e}x"`,
/// and a byte that is not UTF-8 as `\xFF`), so it reads as one name that
/// was not typed as shown.
///
/// Any name a user or a file chose prints this way: a message id read from
/// a log too.
pub fn named<N: AsRef<std::ffi::OsStr> + ?Sized>(name: &N) -> Named<'_> {
    Named(name.as_ref())
}

/// A path as a word a shell reads back as that path, for a command printed
/// to be copied (`replay: courier replay <path>`): as written when it needs
/// no quoting, else quoted (`'a b;c.json'`). A name [`named`] escapes (a
/// control character, bytes that are not UTF-8) prints as it does there,
/// which no shell reads back, rather than as bytes that act on a terminal.
pub fn shell_word(path: &Path) -> String {
    let named = named(path);
    match named.plain().and_then(|text| shlex::try_quote(text).ok()) {
        Some(word) => word.into_owned(),
        None => named.to_string(),
    }
}

/// A name to print: see [`named`].
#[derive(Clone, Copy, Debug)]
pub struct Named<'a>(&'a std::ffi::OsStr);

impl Named<'_> {
    /// The name as UTF-8 text when it prints as written; `None` when it is
    /// escaped (also a name starting with `"`, which would read as escaped).
    pub fn plain(&self) -> Option<&str> {
        self.0
            .to_str()
            .filter(|text| !text.starts_with('"') && !text.chars().any(forges))
    }
}

/// Text from a file printed inside a line of ours (a violation's detail,
/// which quotes ids): each control or bidi character escaped in place
/// (`\n`, `\u{202e}`), so it cannot end the line or reorder it.
pub fn escaped(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(forges) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .map(|c| match forges(c) {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect()
}

impl Named<'_> {
    /// The name as a word of a space-separated list prints it: as written
    /// when [`Named::plain`] and a word no reader could split or miss (not
    /// empty, no whitespace, not `reserved`: what the list prints for
    /// nothing), else quoted as [`named`] quotes, so an id `a b` reads as
    /// one and an empty id as `""`.
    pub fn word(&self, reserved: &str) -> String {
        match self.plain() {
            Some(text)
                if !text.is_empty() && text != reserved && !text.contains(char::is_whitespace) =>
            {
                text.to_owned()
            }
            _ => Quoted(*self).to_string(),
        }
    }
}

/// A name always quoted and escaped (see [`named`]).
struct Quoted<'a>(Named<'a>);

impl std::fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.plain() {
            Some(text) => f.write_str(text),
            None => Quoted(*self).fmt(f),
        }
    }
}

impl std::fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Quoted(Named(name)) = self;
        f.write_str("\"")?;
        for chunk in name.as_encoded_bytes().utf8_chunks() {
            for c in chunk.valid().chars() {
                match c {
                    '"' | '\\' => write!(f, "\\{c}")?,
                    c if forges(c) => write!(f, "{}", c.escape_default())?,
                    c => write!(f, "{c}")?,
                }
            }
            for byte in chunk.invalid() {
                write!(f, "\\x{byte:02X}")?;
            }
        }
        f.write_str("\"")
    }
}

/// Whether a character in a name could make printed output lie: a control
/// character (C0, DEL, C1) or a bidirectional formatting character.
fn forges(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The most characters of a user's text (or another program's) an error
/// quotes.
const SHOWN_MAX: usize = 200;

/// Text an error quotes (a line of a file, what another implementation
/// printed), its control characters escaped: whole when short, else its
/// start and its length, so a 100 MB line is not a 100 MB error message.
pub fn shown(text: &impl std::fmt::Display) -> String {
    // Escaped first: a newline or a terminal's escape sequence in the text
    // must not act on the error it is quoted in.
    let text = escaped(&text.to_string()).into_owned();
    match text.char_indices().nth(SHOWN_MAX) {
        None => text,
        Some((end, _)) => format!("{}... ({} bytes in all)", &text[..end], text.len()),
    }
}

/// [`shown`] for bytes that may not be UTF-8 (another program's line): a
/// byte that is no character shows as `\xFF`, as [`named`] shows it, not
/// as a replacement character that hides which byte it was.
pub fn shown_bytes(bytes: &[u8]) -> String {
    let mut text = String::new();
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        for byte in chunk.invalid() {
            text.push_str(&format!("\\x{byte:02X}"));
        }
    }
    shown(&text)
}

/// The largest transcript read whole: by `courier diagram`, and by `courier
/// run` from a pipe or a device, which it cannot read twice (the biggest
/// written by hand or by `courier check` are a few kilobytes). `courier run`
/// streams a regular file and caps only a block
/// ([`courier_core::transcript::BLOCK_BYTES_MAX`]).
pub const TRANSCRIPT_MAX: u64 = 64 << 20;

/// Whether `path` holds a race report rather than a transcript, judged by
/// content, not by name: a report is a JSON object, so its first byte past
/// blanks (and a byte order mark) is `{`, which no transcript line starts
/// with.
pub fn is_report(path: &Path) -> Result<bool, String> {
    if path.is_dir() {
        return Err("cannot read: is a folder".to_owned());
    }
    let file = File::open(path).map_err(|error| format!("cannot read: {error}"))?;
    let mut start = Vec::new();
    file.take(4096)
        .read_to_end(&mut start)
        .map_err(|error| format!("cannot read: {error}"))?;
    let start = start.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&start);
    Ok(start
        .iter()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|byte| *byte == b'{'))
}

/// Reads a race report, streamed (see [`courier_sim::Report::read`]): a
/// report of a million stimuli needs memory for its trace, not for its text.
/// It is read twice (its version first), so `path` must be [`Rereadable`].
/// A byte order mark an editor saved before the report is passed over, as
/// [`is_report`] passes over it when it tells the report apart.
pub fn read_report(path: &Rereadable) -> Result<courier_sim::Report, String> {
    let open = || past_bom(path.path()).map_err(|error| format!("cannot read: {error}"));
    courier_sim::Report::read(open()?, open()?).map_err(|error| {
        // A session log is JSON too, a line at a time: say what it is.
        let log = open().ok().and_then(|file| {
            let line = io::BufRead::lines(io::BufReader::new(file.take(1 << 20))).next()?;
            let first: serde_json::Value = serde_json::from_str(&line.ok()?).ok()?;
            Some(first.get("type")?.is_string())
        });
        // Enough for a UTF-16 byte order mark or Zstandard's magic number.
        let mut start = Vec::new();
        let hint = File::open(path.path())
            .and_then(|file| file.take(4).read_to_end(&mut start))
            .map_or("", |_| courier_core::log::encoding_hint(&start));
        match log {
            Some(true) => format!(
                "{error} (it reads as a JSONL session log, an event a line: `courier \
                 validate` and `courier repair` read those)"
            ),
            Some(false) | None => format!("{}{hint}", in_json_words(&error.to_string())),
        }
    })
}

/// `path` opened and read past a UTF-8 byte order mark, if it starts with
/// one (its first bytes are given back when it does not).
fn past_bom(path: &Path) -> io::Result<impl Read> {
    const BOM: &[u8] = "\u{feff}".as_bytes();
    let mut file = File::open(path)?;
    let mut start = Vec::with_capacity(BOM.len());
    (&mut file).take(BOM.len() as u64).read_to_end(&mut start)?;
    if start == BOM {
        start.clear();
    }
    Ok(io::Cursor::new(start).chain(file))
}

/// An input a command reads more than once (a report: its version, then
/// the whole; a file told apart by content, then read; a log read, then
/// copied). A regular file (or a device) is opened again; a pipe or FIFO
/// (`/dev/stdin` under `|`, `<(...)`) gives its bytes once, so it is first
/// copied to a temporary file, of at most [`TRANSCRIPT_MAX`] bytes (a
/// bigger one is refused: save it to a file).
#[derive(Debug)]
pub struct Rereadable {
    path: PathBuf,
    /// The copy of a pipe, kept (and removed when dropped) while `path`
    /// names it.
    _copy: Option<Temporary>,
}

impl Rereadable {
    /// `path`, copied first when it is a pipe.
    pub fn new(path: &Path) -> Result<Rereadable, String> {
        let meta = fs::metadata(path).map_err(|error| format!("cannot read: {error}"))?;
        if meta.is_dir() {
            return Err("cannot read: is a folder".to_owned());
        }
        if !is_pipe(&meta) {
            return Ok(Rereadable {
                path: path.to_owned(),
                _copy: None,
            });
        }
        let source = File::open(path).map_err(|error| format!("cannot read: {error}"))?;
        let copy = NamedTempFile::new().map_err(unnamed).map_err(|error| {
            let folder = std::env::temp_dir();
            format!(
                "cannot copy the pipe to a temporary file in {}: {error}",
                named(&folder)
            )
        })?;
        let mut copy = Temporary::register(copy);
        let copied = io::copy(&mut source.take(TRANSCRIPT_MAX + 1), copy.file())
            .map_err(|error| format!("cannot read: {error}"))?;
        if copied > TRANSCRIPT_MAX {
            return Err(format!(
                "a pipe larger than {} MiB: refused (it is read more than once, so it is \
                 copied first; save it to a file)",
                TRANSCRIPT_MAX >> 20
            ));
        }
        Ok(Rereadable {
            path: copy.path().to_owned(),
            _copy: Some(copy),
        })
    }

    /// Where to read it (again): the file, or the pipe's copy.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(unix)]
fn is_pipe(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    meta.file_type().is_fifo() || meta.file_type().is_socket()
}

#[cfg(not(unix))]
fn is_pipe(_: &fs::Metadata) -> bool {
    false
}

/// What a file is as it is read: its length, modification time and inode.
/// A command that rewrites its input compares them again just before it
/// replaces the file, so an edit saved meanwhile (an editor, another
/// `--rewrite`) is not overwritten by a rewrite of the older text.
#[derive(PartialEq, Eq, Debug)]
pub struct Stamp(Option<Seen>);

/// A file's length, modification time and device and inode, as read.
#[derive(PartialEq, Eq, Debug)]
struct Seen {
    length: u64,
    modified: Option<std::time::SystemTime>,
    node: Option<(u64, u64)>,
}

impl Stamp {
    /// `path` as it is now (nothing, if it cannot be read).
    pub fn of(path: &Path) -> Stamp {
        Stamp(fs::metadata(path).ok().map(|meta| Seen {
            length: meta.len(),
            modified: meta.modified().ok(),
            node: node(path),
        }))
    }

    /// Refuses when `path` is no longer as it was stamped.
    pub fn unchanged(&self, path: &Path) -> Result<(), String> {
        match Stamp::of(path) == *self {
            true => Ok(()),
            false => {
                Err("changed while it ran: not rewritten, the change kept (run again)".to_owned())
            }
        }
    }
}

/// Refuses to rewrite `path` in place unless it is a regular file: a pipe
/// or a device (`/dev/stdin`) cannot be replaced, and writing into it would
/// lose the rewrite while saying it was done.
pub fn rewritable(path: &Path) -> Result<(), String> {
    match fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => {
            Err("not a regular file (a pipe or a device): --rewrite cannot replace it".to_owned())
        }
        _ => Ok(()),
    }
}
