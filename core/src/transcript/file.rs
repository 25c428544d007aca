//! The transcript file format (SPEC §9): items (comments, blank lines and
//! blocks) read one at a time from a file's lines ([`Items`]), a first pass
//! that keeps no item ([`Outline`]), and the writer of `--rewrite`
//! ([`Rewriter`]). [`Script`] is all three over a file held whole; `courier
//! run` streams them, holding one block at a time.

use std::convert::Infallible;
use std::fmt;
use std::iter::{Enumerate, Peekable};

use super::{Command, Runner, Stalled, parse_command};
use crate::agent::Agent;

/// One item of a transcript file, kept verbatim so `--rewrite` preserves
/// the file byte for byte wherever its outputs did not change.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Item {
    /// Comment and blank lines outside a block, as written (with their
    /// line endings; [`Items`] yields one line each, [`Script::parse`]
    /// joins those in a row).
    Text(String),
    /// A command with its expected output.
    Block(Block),
}

impl Item {
    /// The item as written, line endings included (the file's first line
    /// without its byte order mark): the items' texts in order are the file.
    pub fn raw(&self) -> &str {
        match self {
            Item::Text(raw) => raw,
            Item::Block(block) => &block.raw,
        }
    }
}

/// A command line, then `----` and the expected lines. Comment lines may
/// stand between them (SPEC §9: `#` starts a comment line, wherever it
/// is); they are no expected line, and a rewrite keeps each of them.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Block {
    /// 1-based line of the command.
    pub line: usize,
    /// The command as written, less trailing whitespace.
    pub command: String,
    /// The expected lines; `None` when the block has no `----`.
    pub expected: Option<Vec<String>>,
    /// The block as written: the command line through the blank line that
    /// ends it (when there is one), line endings included.
    raw: String,
    /// The comment lines between the command and its `----`, as written.
    heading: String,
    /// The `----` line as written (empty when there is none).
    separator: String,
    /// The comment lines among the expected ones, as written: a rewrite
    /// writes them, in order, after the outputs it writes.
    notes: String,
    /// The blank line that ended the block as written, if any.
    blank: Option<String>,
}

impl Block {
    /// Whether `printed` is what the block expects. A block without `----`
    /// never passes: it pins nothing. Every runner judges a transcript by
    /// this one rule. Trailing whitespace an editor left on an expected
    /// line is not part of it (commands and the layout's lines are read
    /// trimmed too, and no output ends in whitespace).
    pub fn passes(&self, printed: &[String]) -> bool {
        self.expected.as_deref().is_some_and(|expected| {
            expected.len() == printed.len()
                && expected
                    .iter()
                    .zip(printed)
                    .all(|(expected, printed)| expected.trim_ascii_end() == printed)
        })
    }
}

/// A block whose printed lines differ from its expected ones.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Mismatch<'a> {
    /// The block; its `expected` is `None` when it has no `----` line.
    pub block: &'a Block,
    /// What its command printed.
    pub actual: &'a [String],
}

/// A layout error, naming the 1-based line.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LayoutError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong there.
    pub reason: &'static str,
}

impl fmt::Display for LayoutError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for LayoutError {}

/// The largest block read, command and expected lines together: a
/// runner holds one block at a time, and this bounds it (a line of zeros
/// from `/dev/zero` is refused here, not read into memory). The old cap on
/// a whole file, so every file read before reads now.
pub const BLOCK_BYTES_MAX: usize = 64 << 20;

/// Why [`Items`] stopped: the layout, or the reader of the lines (`E`).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Unreadable<E> {
    /// The lines are not a transcript's.
    Layout(LayoutError),
    /// A line could not be read.
    Read(E),
}

impl<E> From<LayoutError> for Unreadable<E> {
    fn from(error: LayoutError) -> Self {
        Unreadable::Layout(error)
    }
}

/// A transcript's lines, numbered from 0, each as written.
type Lines<I> = Peekable<Enumerate<I>>;

/// A transcript's items, read from its lines (each as written, with its
/// line ending; a reader's error ends them). Commands are parsed only when
/// run, so an unknown command is an `error:` line, not a layout error; but
/// a `----` or a command inside an expected block means a blank line is
/// missing (reading on would swallow the user's lines as outputs, which
/// `--rewrite` then replaces), and a block over [`BLOCK_BYTES_MAX`] is
/// refused. A `#` comment is one anywhere (SPEC §9). After an error there
/// are no more items.
pub struct Items<I: Iterator> {
    lines: Lines<I>,
    newline: &'static str,
    bom: bool,
    stopped: bool,
    /// Comment lines read after a command in case its `----` followed
    /// them; none did, so they are the next item.
    held: Option<String>,
}

impl<I, S, E> Items<I>
where
    I: Iterator<Item = Result<S, E>>,
    S: AsRef<str>,
{
    /// The items of `lines` (the first is read at once, for the file's line
    /// ending and byte order mark).
    pub fn new(lines: I) -> Self {
        let mut lines = lines.enumerate().peekable();
        let first = match lines.peek() {
            Some((_, Ok(first))) => first.as_ref(),
            Some((_, Err(_))) | None => "",
        };
        Self {
            newline: if first.ends_with("\r\n") {
                "\r\n"
            } else {
                "\n"
            },
            bom: first.starts_with('\u{feff}'),
            lines,
            stopped: false,
            held: None,
        }
    }

    /// The file's line ending (`\r\n` when its first line ends so), used
    /// for the lines `--rewrite` writes anew.
    pub fn newline(&self) -> &'static str {
        self.newline
    }

    /// Whether the file begins with a UTF-8 byte order mark (kept out of
    /// the first item).
    pub fn bom(&self) -> bool {
        self.bom
    }

    fn read(&mut self) -> Option<Result<Item, Unreadable<E>>> {
        if let Some(held) = self.held.take() {
            return Some(Ok(Item::Text(held)));
        }
        let (index, raw) = self.lines.next()?;
        let raw = match raw {
            Ok(raw) => raw,
            Err(error) => return Some(Err(Unreadable::Read(error))),
        };
        let number = index + 1;
        let raw = raw.as_ref();
        let raw = match raw.strip_prefix('\u{feff}') {
            Some(rest) if number == 1 => rest,
            Some(_) | None => raw,
        };
        if let Err(error) = whole(number, raw) {
            return Some(Err(Unreadable::Layout(error)));
        }
        // A later line may start a second file joined to the first (`cat
        // a.txn b.txn`): its byte order mark is kept as written and read
        // as the first line's is.
        let line = content(raw);
        let line = line.strip_prefix('\u{feff}').unwrap_or(line);
        if is_blank(line) || is_comment(line) {
            return Some(Ok(Item::Text(raw.to_owned())));
        }
        if is_dashes(line) {
            // Only a comment or blank line can come before it here (a
            // block reads its own `----`).
            let reason = match number {
                1 => "`----` without a command before it",
                _ => "`----` after a comment or blank line: it goes right under its command",
            };
            return Some(Err(Unreadable::Layout(LayoutError {
                line: number,
                reason,
            })));
        }
        // Not blank (a no-break space is text), yet no command either: read
        // as one, `--rewrite` would pin its `bad-command` as a block.
        if line.trim().is_empty() {
            return Some(Err(Unreadable::Layout(LayoutError {
                line: number,
                reason: "a line of non-ASCII spaces only (a no-break space?): not blank \
                         (only spaces and tabs are) nor a command",
            })));
        }
        let block = block(number, line, raw, &mut self.lines);
        Some(block.map(|(block, held)| {
            self.held = held;
            Item::Block(block)
        }))
    }
}

impl<I, S, E> Iterator for Items<I>
where
    I: Iterator<Item = Result<S, E>>,
    S: AsRef<str>,
{
    type Item = Result<Item, Unreadable<E>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stopped {
            return None;
        }
        let item = self.read();
        self.stopped = matches!(item, Some(Err(_)));
        item
    }
}

/// Refuses a line that holds a lone carriage return: it ends no line (only
/// LF and CRLF do), so the lines after it would be read, run and rewritten
/// as part of this one.
fn whole(number: usize, raw: &str) -> Result<(), LayoutError> {
    // Without its ending: a CR the file ends on ends the line too.
    if crate::log::lone_cr_hint(content(raw)).is_empty() {
        return Ok(());
    }
    Err(LayoutError {
        line: number,
        reason: "holds a lone carriage return, which ends no line: only LF and CRLF do \
                 (what follows it would be read as part of this line)",
    })
}

/// An expected line without what an output never starts with (whitespace,
/// a byte order mark, invisible spaces): what is left tells whether the
/// line is the user's (a comment, a `----`, a command) and not an output.
fn bare(output: &str) -> &str {
    output.trim_start_matches(|c: char| {
        c.is_whitespace() || matches!(c, '\u{feff}' | '\u{200b}' | '\u{2060}')
    })
}

/// A line without its line ending (`\n` or `\r\n`).
fn content(raw: &str) -> &str {
    let line = raw.strip_suffix('\n').unwrap_or(raw);
    line.strip_suffix('\r').unwrap_or(line)
}

/// Blank: spaces and tabs at most (ASCII whitespace, the only separator a
/// transcript has; a no-break space is text, as in a command).
fn is_blank(line: &str) -> bool {
    line.trim_ascii().is_empty()
}

/// A comment line: commands are read trimmed, so an indented `#` is a
/// comment too.
fn is_comment(line: &str) -> bool {
    line.trim_ascii_start().starts_with('#')
}

/// The `----` line, whatever spaces an editor left around it (commands are
/// read trimmed too).
fn is_dashes(line: &str) -> bool {
    line.trim_ascii() == "----"
}

/// Takes the next line (1-based number, as written) when it is `wanted`;
/// a reader's error is taken and returned.
fn next_if<I, S, E>(
    lines: &mut Lines<I>,
    wanted: impl Fn(&str) -> bool,
) -> Result<Option<(usize, S)>, E>
where
    I: Iterator<Item = Result<S, E>>,
    S: AsRef<str>,
{
    let taken = lines.next_if(|(_, line)| {
        line.as_ref()
            .map_or(true, |line| wanted(content(line.as_ref())))
    });
    match taken {
        None => Ok(None),
        Some((index, Ok(line))) => Ok(Some((index + 1, line))),
        Some((_, Err(error))) => Err(error),
    }
}

/// Checks an expected block's line `number` (its content, `output`, not a
/// comment): no output is `----`, as that line is the user's, and
/// `--rewrite` would replace it with outputs; nor starts with `#` behind
/// an invisible space (a comment the user sees); nor with a byte order mark
/// (another file starts there); nor with a command's word (`spliced`, not
/// `splice`; `step/start`, not `step`; `~status`, not `status`): such a
/// line is the user's next block (a new one without `----` yet, for
/// `--rewrite` to fill, or the last, well formed or not), and `--rewrite`
/// would delete it.
fn expected_line(number: usize, output: &str) -> Result<(), LayoutError> {
    let refused = |reason| {
        Err(LayoutError {
            line: number,
            reason,
        })
    };
    if output.starts_with('\u{feff}') {
        return refused(
            "a byte order mark inside an expected block (another file joined here?): a \
             blank line must end the block before it",
        );
    }
    let output = bare(output);
    if is_dashes(output) {
        return refused(
            "`----` inside an expected block: a blank line must end the block before the \
             next command",
        );
    }
    if output.starts_with('#') {
        return refused(
            "a comment behind an invisible or non-ASCII space inside an expected block: \
             no output starts so",
        );
    }
    if super::starts_as_command(output) {
        return refused(
            "a command inside an expected block: a blank line must end the block before it",
        );
    }
    Ok(())
}

/// Whether the line under a command with no `----` reads as an output and
/// not as a command of its own (`splice` is one, `spliced` is not).
fn forgotten_dashes(below: &str) -> bool {
    let below = content(below);
    super::starts_as_output(below) && !super::starts_as_command(below)
}

/// Reads the block whose command is `line` (numbered `number`, written
/// `raw`): the comments between it and its `----`, then its expected lines
/// and comments up to a blank line. Comment lines after a command that no
/// `----` follows are not the block's: they come back second, as written.
fn block<I, S, E>(
    number: usize,
    line: &str,
    raw: &str,
    lines: &mut Lines<I>,
) -> Result<(Block, Option<String>), Unreadable<E>>
where
    I: Iterator<Item = Result<S, E>>,
    S: AsRef<str>,
{
    let mut written = raw.to_owned();
    // Refuses the block once what it holds passes the cap.
    let take = |written: &mut String, raw: &str| {
        written.push_str(raw);
        if written.len() <= BLOCK_BYTES_MAX {
            return Ok(());
        }
        Err(LayoutError {
            line: number,
            reason: "larger than 64 MiB: refused (a block, its command and expected \
                     lines, is read whole)",
        })
    };
    let mut heading = String::new();
    while let Some((number, raw)) = next_if(lines, is_comment).map_err(Unreadable::Read)? {
        whole(number, raw.as_ref())?;
        take(&mut heading, raw.as_ref())?;
    }
    let Some((dashes_line, dashes)) = next_if(lines, is_dashes).map_err(Unreadable::Read)? else {
        // An output line right under the command is an expected block
        // whose `----` was forgotten: read as commands, `--rewrite` would
        // pin a `bad-command` under each of its lines.
        if heading.is_empty()
            && let Some((below, raw)) =
                next_if(lines, forgotten_dashes).map_err(Unreadable::Read)?
        {
            whole(below, raw.as_ref())?;
            return Err(Unreadable::Layout(LayoutError {
                line: below,
                reason: "an output line right under a command with no `----` between them: \
                         add `----` under the command",
            }));
        }
        // No `----`: the comments are the next item's.
        let block = Block {
            line: number,
            command: line.trim_ascii_end().to_owned(),
            expected: None,
            raw: written,
            heading: String::new(),
            separator: String::new(),
            notes: String::new(),
            blank: None,
        };
        return Ok((block, Some(heading).filter(|held| !held.is_empty())));
    };
    whole(dashes_line, dashes.as_ref())?;
    let separator = dashes.as_ref().to_owned();
    take(&mut written, &heading)?;
    take(&mut written, &separator)?;
    let mut expected = Vec::new();
    let mut notes = String::new();
    while let Some((number, raw)) =
        next_if(lines, |line| !is_blank(line)).map_err(Unreadable::Read)?
    {
        let raw = raw.as_ref();
        whole(number, raw)?;
        take(&mut written, raw)?;
        let output = content(raw);
        if is_comment(output) {
            notes.push_str(raw);
            continue;
        }
        expected_line(number, output).map_err(Unreadable::Layout)?;
        expected.push(output.to_owned());
    }
    let blank = match next_if(lines, is_blank).map_err(Unreadable::Read)? {
        Some((number, raw)) => {
            whole(number, raw.as_ref())?;
            take(&mut written, raw.as_ref())?;
            Some(raw.as_ref().to_owned())
        }
        None => None,
    };
    let block = Block {
        line: number,
        command: line.trim_ascii_end().to_owned(),
        expected: Some(expected),
        raw: written,
        heading,
        separator,
        notes,
        blank,
    };
    Ok((block, None))
}

/// What a first pass over a transcript's items keeps, never the items:
/// whether any block is a command (a file where none is, such as a README,
/// a JSON report or an empty file, is not a transcript: running it would
/// pass without checking anything) and the events all its `restart`s lose
/// together (how far back a [`Runner::keeping`] must hold the log).
#[derive(Clone, Copy, Default, Debug)]
pub struct Outline {
    first_block: Option<usize>,
    commands: bool,
    /// `None` until a `restart`.
    lose_total: Option<usize>,
}

impl Outline {
    /// Notes the next item.
    pub fn add(&mut self, item: &Item) {
        let block = match item {
            Item::Text(_) => return,
            Item::Block(block) => block,
        };
        self.first_block.get_or_insert(block.line);
        // Parse only what can change the outline: every block until one is
        // a command, then restarts.
        let restart = block.command.split_ascii_whitespace().next() == Some("restart");
        if self.commands && !restart {
            return;
        }
        match parse_command(&block.command) {
            Ok(Command::Restart { lose }) => {
                self.commands = true;
                let before = self.lose_total.unwrap_or_default();
                self.lose_total = Some(before.saturating_add(lose));
            }
            Ok(Command::Input(_) | Command::Run | Command::Inbox | Command::Status) => {
                self.commands = true;
            }
            // A block that pins a malformed command's refusal checks
            // something too (a file of such blocks is a transcript); a
            // README's `----` under a heading pins no such line.
            Err(_) => {
                self.commands |= block.expected.as_deref().is_some_and(|expected| {
                    matches!(expected, [line] if line.starts_with("error: bad-command: "))
                });
            }
        }
    }

    /// Refuses a file none of whose blocks is a command, naming its first
    /// block's line (or line 1).
    pub fn check(&self) -> Result<(), LayoutError> {
        if self.commands {
            return Ok(());
        }
        Err(LayoutError {
            line: self.first_block.unwrap_or(1),
            reason: "not a transcript: no line is a command (SPEC §9)",
        })
    }

    /// The events all `restart`s of the file lose together: each cuts the
    /// log from its end, so no restart reaches back further than that;
    /// `None` when the file has no `restart`.
    pub fn lose_total(&self) -> Option<usize> {
        self.lose_total
    }
}

/// Writes a transcript back item by item: a failing block's expected lines
/// replaced by what it printed, everything else as written, byte for byte
/// (comments, blank lines, line endings), so a passing file writes itself.
/// [`Script::render`] is this over a whole file; `courier run --rewrite`
/// streams it.
#[derive(Clone, Copy, Debug)]
pub struct Rewriter {
    newline: &'static str,
    /// A rewritten block had no blank line after it: one is written before
    /// the next item unless that is a blank line.
    owed: bool,
}

impl Rewriter {
    /// A writer of new lines in `newline` (see [`Items::newline`]).
    pub fn new(newline: &'static str) -> Self {
        Self {
            newline,
            owed: false,
        }
    }

    /// Appends `raw`, comment and blank lines, to `text`.
    pub fn text(&mut self, raw: &str, text: &mut String) {
        let first = raw.split_inclusive('\n').next().unwrap_or(raw);
        if std::mem::take(&mut self.owed) && !is_blank(first) {
            text.push_str(self.newline);
        }
        text.push_str(raw);
    }

    /// Appends `block` to `text`, as written when it `printed` what it
    /// expects, else with `printed` as its expected lines.
    pub fn block(&mut self, block: &Block, printed: &[String], text: &mut String) {
        if std::mem::take(&mut self.owed) {
            text.push_str(self.newline);
        }
        if block.passes(printed) {
            text.push_str(&block.raw);
            return;
        }
        // The command, comment and `----` lines as written, trailing spaces
        // and line endings too (a file may mix them); a `----` is added in
        // the file's line ending, as is one for a last line that has none.
        let command = block.raw.split_inclusive('\n').next().unwrap_or_default();
        let dashes = match block.expected {
            Some(_) => block.separator.as_str(),
            None => "----",
        };
        for line in [command, &block.heading, dashes] {
            text.push_str(line);
            if !line.is_empty() && !line.ends_with('\n') {
                text.push_str(self.newline);
            }
        }
        for line in printed {
            text.push_str(line);
            text.push_str(self.newline);
        }
        // The user's comments stay, after the outputs.
        text.push_str(&block.notes);
        if !block.notes.is_empty() && !block.notes.ends_with('\n') {
            text.push_str(self.newline);
        }
        // A blank line ends the block (unless one follows already).
        match &block.blank {
            Some(blank) => text.push_str(blank),
            None => self.owed = true,
        }
    }

    /// Appends what the end of the file needs: the blank line a last
    /// rewritten block still owes (SPEC §9: a block ends with one).
    pub fn finish(self, text: &mut String) {
        if self.owed {
            text.push_str(self.newline);
        }
    }
}

/// A parsed transcript file.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Script {
    /// Comments, blank lines and blocks in file order.
    pub items: Vec<Item>,
    /// The file's line ending (`\r\n` when its first line ends so), used for
    /// the lines `--rewrite` writes anew.
    newline: &'static str,
    /// Whether the file began with a UTF-8 byte order mark (kept out of the
    /// first command, and written back by [`Script::render`]).
    bom: bool,
}

impl Script {
    /// Splits a file into comments and blocks (see [`Items`]); a file where
    /// no line is a command is not a transcript (see [`Outline`]).
    pub fn parse(text: &str) -> Result<Script, LayoutError> {
        let mut read = Items::new(text.split_inclusive('\n').map(Ok::<_, Infallible>));
        let mut outline = Outline::default();
        let mut items = Vec::new();
        for item in &mut read {
            let item = item.map_err(|unreadable| match unreadable {
                Unreadable::Layout(error) => error,
                Unreadable::Read(never) => match never {},
            })?;
            outline.add(&item);
            // Comments and blank lines in a row are one item: a file of
            // millions of them costs its bytes, not an item per line.
            match (items.last_mut(), item) {
                (Some(Item::Text(text)), Item::Text(raw)) => text.push_str(&raw),
                (_, item) => items.push(item),
            }
        }
        outline.check()?;
        Ok(Script {
            items,
            newline: read.newline(),
            bom: read.bom(),
        })
    }

    /// The blocks in order.
    pub fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.items.iter().filter_map(|item| match item {
            Item::Block(block) => Some(block),
            Item::Text(_) => None,
        })
    }

    /// Runs every block against `agent`, returning what each printed.
    pub fn run(&self, agent: &Agent) -> Result<Vec<Vec<String>>, (usize, Stalled)> {
        let mut runner = Runner::new(agent.clone());
        self.blocks()
            .map(|block| {
                let printed = runner.execute(&block.command);
                printed.map_err(|stalled| (block.line, stalled))
            })
            .collect()
    }

    /// The blocks whose printed lines (`actual`: one entry per block, as
    /// [`Script::run`] returns) differ from their expected ones (see
    /// [`Block::passes`]).
    pub fn mismatches<'a>(&'a self, actual: &'a [Vec<String>]) -> Vec<Mismatch<'a>> {
        self.blocks()
            .zip(actual)
            .filter(|(block, actual)| !block.passes(actual))
            .map(|(block, actual)| Mismatch { block, actual })
            .collect()
    }

    /// The file with every mismatching block's expected lines replaced by
    /// `actual` (one entry per block; see [`Rewriter`]), a byte order mark
    /// written back, so a passing file renders to itself.
    pub fn render(&self, actual: &[Vec<String>]) -> String {
        let mut text = String::from(if self.bom { "\u{feff}" } else { "" });
        let mut rewriter = Rewriter::new(self.newline);
        let mut outputs = actual.iter();
        for item in &self.items {
            match item {
                Item::Text(raw) => rewriter.text(raw, &mut text),
                Item::Block(block) => {
                    let printed = outputs.next().map_or(&[][..], Vec::as_slice);
                    rewriter.block(block, printed, &mut text);
                }
            }
        }
        rewriter.finish(&mut text);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output line right under a command is a forgotten `----`; a
    /// command there (`splice`, not `spliced`) is a block of its own.
    #[test]
    fn an_output_line_right_under_a_command_is_a_forgotten_separator() {
        let forgotten = Script::parse("followup A\nspliced next-turn@0 +A\n").unwrap_err();
        assert_eq!(forgotten.line, 2, "{forgotten:?}");
        let script = Script::parse("followup A\nsplice next-turn 0 0 B\n# ~idle\n").unwrap();
        assert_eq!(script.blocks().count(), 2);
        // Below a comment, it is a block of its own (a bad command).
        let script = Script::parse("followup A\n# why\n~idle\n").unwrap();
        assert_eq!(script.blocks().count(), 2);
    }

    #[test]
    fn a_read_error_inside_a_block_ends_the_items_with_it_not_with_a_cut_block() {
        let lines = [Ok("status\n"), Ok("----\n"), Ok("idle\n"), Err("disk")];
        let items: Vec<_> = Items::new(lines.into_iter()).collect();
        assert_eq!(items, [Err(Unreadable::Read("disk"))]);
        // Between items, it follows the items before it.
        let lines = [Ok("# c\n"), Ok("\n"), Err("disk"), Ok("status\n")];
        let items: Vec<_> = Items::new(lines.into_iter()).collect();
        assert_eq!(items.len(), 3, "{items:?}");
        assert_eq!(items[2], Err(Unreadable::Read("disk")));
    }

    #[test]
    fn trailing_whitespace_on_an_expected_line_is_not_expected() {
        let script = Script::parse("inbox\n----\nnext-turn: \t\nnext-step:\n").unwrap();
        let Some(Item::Block(block)) = script.items.first() else {
            panic!("{script:?}");
        };
        let printed = ["next-turn:".to_owned(), "next-step:".to_owned()];
        assert!(block.passes(&printed));
        // Anything else still differs: a line, a line too many or too few.
        assert!(!block.passes(&["next-turn: A".to_owned(), "next-step:".to_owned()]));
        assert!(!block.passes(&printed[..1]));
        let more = [printed[0].clone(), printed[1].clone(), String::new()];
        assert!(!block.passes(&more));
    }

    #[test]
    fn a_block_larger_than_the_cap_is_refused_naming_its_line() {
        let output = "x".repeat(1 << 20);
        let mut text = String::from("# big\n\nstatus\n----\n");
        for _ in 0..(BLOCK_BYTES_MAX >> 20) {
            text.push_str(&output);
            text.push('\n');
        }
        let error = Script::parse(&text).unwrap_err();
        assert_eq!(error.line, 3);
        assert!(error.reason.starts_with("larger than 64 MiB"), "{error}");
        // One line less fits.
        let fits = &text[..text.len() - output.len() - 1];
        assert!(Script::parse(fits).is_ok());
    }

    /// Commands are read trimmed, so the layout's own lines are too: an
    /// indented `#` is a comment (not a bad command `--rewrite` would
    /// answer), and `----` with spaces around it is the separator.
    #[test]
    fn an_indented_comment_and_a_spaced_separator_are_what_they_look_like() {
        let script = Script::parse("  # note\nstatus\n ----  \nidle\n").expect("a transcript");
        let [Item::Text(comment), Item::Block(block)] = script.items.as_slice() else {
            panic!("a comment then a block: {:?}", script.items);
        };
        assert_eq!(comment, "  # note\n");
        assert_eq!(block.command, "status");
        assert_eq!(block.expected.as_deref(), Some(&["idle".to_owned()][..]));
        let error = Script::parse("status\n----\nidle\n ---- \n").expect_err("a layout error");
        assert_eq!(error.line, 4);
    }

    /// A carriage return not before a line feed ends no line, so whatever
    /// follows it on a comment, a `----`, an expected or a blank line would
    /// be read (and rewritten) as part of that line: each is refused, naming
    /// its line. Before, only a file with no command at all was told so.
    #[test]
    fn a_lone_carriage_return_on_any_line_is_a_layout_error_naming_it() {
        for (text, line) in [
            (
                "status\n----\nidle\r# note\rfollowup A\r----\r\n\nstatus\n",
                3,
            ),
            ("# a\rfollowup Z\n\nstatus\n", 1),
            ("status\n----\ridle\n", 2),
            ("status\n---- \rx\nidle\n", 2),
            ("status\n----\nidle\n \r \nstatus\n", 4),
            ("status\rinbox\n", 1),
        ] {
            let error = Script::parse(text).expect_err(text);
            assert_eq!(error.line, line, "{text:?}: {error}");
            assert!(error.reason.contains("lone carriage return"), "{error}");
        }
        // CRLF ends lines, and so does a CR the file ends on (a CRLF file
        // cut between the two).
        assert!(Script::parse("status\r\n----\r\nidle\r\n\r\n").is_ok());
        assert!(Script::parse("status\r\n----\r\nidle\r").is_ok());
    }

    /// A second file joined to the first (`cat a.txn b.txn`) starts with its
    /// own byte order mark: between blocks it reads as the first line's does
    /// (and is kept as written); inside an expected block it is refused, as
    /// is a comment or command there behind invisible or non-ASCII spaces
    /// (no output starts with one). Before, such a line was an expected line
    /// that `--rewrite` replaced.
    #[test]
    fn a_joined_files_byte_order_mark_or_an_invisibly_indented_line_is_not_an_output() {
        let joined = "status\n----\nidle\n\n\u{feff}# part two\n\n\u{feff}status\n----\nidle\n";
        let script = Script::parse(joined).expect("a transcript");
        let [Item::Block(_), Item::Text(comment), Item::Block(block)] = script.items.as_slice()
        else {
            panic!("{:?}", script.items);
        };
        assert_eq!(comment, "\u{feff}# part two\n\n");
        assert_eq!(block.command, "status");
        assert_eq!(
            script.render(&[vec!["idle".into()], vec!["idle".into()]]),
            joined
        );
        for inside in [
            "status\n----\nidle\n\u{feff}# second file\n",
            "status\n----\nidle\n\u{feff}\n",
            "status\n----\nidle\n\u{a0}# note\n",
            "status\n----\nidle\n\u{200b}followup A\n",
            "status\n----\nidle\n\u{3000}----\n",
        ] {
            let error = Script::parse(inside).expect_err(inside);
            assert_eq!(error.line, 4, "{inside:?}: {error}");
        }
    }

    /// A rewritten block keeps its command and `----` lines as written,
    /// trailing spaces and line endings too, in a file that mixes them;
    /// the lines it writes anew take the file's ending (its first line's).
    /// Before, both were written again in the file's ending, and `----  `
    /// lost its spaces.
    #[test]
    fn a_rewritten_block_keeps_its_command_and_separator_lines_as_written() {
        let text = "status\r\n----\r\nidle\r\n\r\nstatus  \n----  \nwrong\n\nstatus";
        let script = Script::parse(text).expect("a transcript");
        let idle = || vec!["idle".to_owned()];
        assert_eq!(
            script.render(&[idle(), idle(), idle()]),
            "status\r\n----\r\nidle\r\n\r\nstatus  \n----  \nidle\r\n\nstatus\r\n----\r\nidle\r\n\r\n"
        );
    }

    /// A `----` no command stands right above says what does: nothing (the
    /// file's first line) or a comment or blank line between them (it read
    /// "without a command before it", though a command was there).
    #[test]
    fn a_separator_away_from_its_command_says_what_is_between() {
        for (text, line, reason) in [
            ("----\nstatus\n", 1, "`----` without a command before it"),
            (
                "followup A\n# note\n\n----\n",
                4,
                "`----` after a comment or blank line: it goes right under its command",
            ),
            (
                "status\n\n----\nidle\n",
                3,
                "`----` after a comment or blank line: it goes right under its command",
            ),
        ] {
            let error = Script::parse(text).expect_err("a layout error");
            assert_eq!((error.line, error.reason), (line, reason), "{text:?}");
        }
    }

    /// SPEC §9: `#` starts a comment line, wherever it stands: between a
    /// command and its `----` or among the expected lines, it is no
    /// expected line, a passing block writes itself as it was, and a
    /// rewrite keeps every comment (those among the outputs after the
    /// outputs it writes). Before, either was a layout error: the file
    /// could not be run.
    #[test]
    fn a_comment_inside_a_block_is_a_comment_and_a_rewrite_keeps_it() {
        let text = "inbox\n# why\n----\nnext-turn:\n  # a note\nnext-step:\n# last\n\nstatus\n----\nidle\n# end";
        let script = Script::parse(text).expect("a transcript");
        let blocks: Vec<&Block> = script.blocks().collect();
        let expected = |index: usize| blocks[index].expected.clone().unwrap_or_default();
        assert_eq!(expected(0), ["next-turn:", "next-step:"]);
        assert_eq!(expected(1), ["idle"]);
        let lines = |lines: &[&str]| {
            lines
                .iter()
                .map(|line| line.to_string())
                .collect::<Vec<_>>()
        };
        let passing = [lines(&["next-turn:", "next-step:"]), lines(&["idle"])];
        assert!(blocks[0].passes(&passing[0]) && blocks[1].passes(&passing[1]));
        assert_eq!(script.render(&passing), text);
        let failing = [lines(&["next-turn: A", "next-step:"]), lines(&["running"])];
        assert_eq!(
            script.render(&failing),
            "inbox\n# why\n----\nnext-turn: A\nnext-step:\n  # a note\n# last\n\n\
             status\n----\nrunning\n# end\n\n"
        );
    }

    /// Comments after a command that no `----` follows belong to what comes
    /// next, as before: a rewrite writes the block's `----` and outputs
    /// above them.
    #[test]
    fn comments_after_a_command_without_its_separator_are_the_next_item() {
        let text = "status\n# now the inbox\ninbox\n----\nnext-turn:\nnext-step:\n";
        let script = Script::parse(text).expect("a transcript");
        let [Item::Block(status), Item::Text(comment), Item::Block(inbox)] =
            script.items.as_slice()
        else {
            panic!("{:?}", script.items);
        };
        assert_eq!(
            (status.expected.as_ref(), comment.as_str()),
            (None, "# now the inbox\n")
        );
        assert_eq!(inbox.line, 3);
        let printed = [
            vec!["idle".to_owned()],
            vec!["next-turn:".into(), "next-step:".into()],
        ];
        assert_eq!(
            script.render(&printed),
            "status\n----\nidle\n\n# now the inbox\ninbox\n----\nnext-turn:\nnext-step:\n"
        );
    }

    /// Comments and blank lines in a row are one item (a file of millions
    /// of them made `diagram` hold an item each: 135 bytes a line), and a
    /// rewrite is as it was item by item.
    #[test]
    fn comments_and_blank_lines_in_a_row_are_one_item_and_render_as_written() {
        let text = "# a\n\n# b\nstatus\n----\nwrong\n\n\n# c\nstatus\n----\nwrong\n";
        let script = Script::parse(text).expect("a transcript");
        let texts: Vec<&str> = script
            .items
            .iter()
            .filter_map(|item| match item {
                Item::Text(raw) => Some(raw.as_str()),
                Item::Block(_) => None,
            })
            .collect();
        assert_eq!(texts, ["# a\n\n# b\n", "\n# c\n"]);
        let printed = |line: &str| vec![vec![line.to_owned()], vec![line.to_owned()]];
        assert_eq!(script.render(&printed("wrong")), text);
        assert_eq!(
            script.render(&printed("idle")),
            "# a\n\n# b\nstatus\n----\nidle\n\n\n# c\nstatus\n----\nidle\n\n"
        );
    }
}
