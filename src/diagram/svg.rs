//! A self-contained SVG picture: no scripts, no links, no web fonts, every
//! text escaped, so it opens the same in a browser, an image viewer or a
//! review tool that refuses active content.

use std::borrow::Cow;
use std::fmt::{self, Write};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::Diagram;
use super::sequence::{Lane, Mark, Shown, Style, shown};

/// Horizontal space per lane.
const LANE_WIDTH: usize = 190;
/// Space left of the first lane for row numbers.
const GUTTER: usize = 44;
/// Height of one arrow or note.
const MARK_HEIGHT: usize = 24;
/// Top of the first row.
const ROWS_TOP: usize = 104;
/// Width of one character of the 12px monospace text, for sizing boxes.
const CHAR_WIDTH: f64 = 7.3;
/// Characters per line of the violation detail.
const DETAIL_WIDTH: usize = 140;

/// How to read the picture, printed under it.
const LEGEND: &str = "thick: the input · solid: durable log · dashed: live notifications (~) · dotted: what the driver awaits · boxes: durable events · orange band: a crash, then the events it lost (struck through) and the closers the resume wrote";

/// Whether the file at `path` is a picture drawn here: the root element as
/// written below, then this stylesheet, and the file ends where the
/// picture does (nothing added after it). A default output
/// (`counterexample.svg`, `race-<seed>.svg`) replaces only such a file; a
/// picture of the user's with that name is kept.
pub fn drawn_here(path: &Path) -> io::Result<bool> {
    const ROOT: &[u8] = br#"<svg xmlns="http://www.w3.org/2000/svg" width=""#;
    const END: &[u8] = b"</svg>\n";
    let style = [b"<style>", &STYLE.as_bytes()[..60]].concat();
    let mut file = File::open(path)?;
    // The root's attributes are three numbers: the style follows within
    // a few hundred bytes.
    let mut head = Vec::new();
    (&mut file).take(256).read_to_end(&mut head)?;
    let started = head.starts_with(ROOT) && head.windows(style.len()).any(|window| window == style);
    if !started {
        return Ok(false);
    }
    let mut tail = [0; END.len()];
    file.seek(SeekFrom::End(-(END.len() as i64)))?;
    file.read_exact(&mut tail)?;
    Ok(tail == END)
}

/// The stylesheet, inside the file so nothing is fetched.
const STYLE: &str = "text{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px}\
.title{font-size:15px;font-weight:bold}.lane{font-weight:bold;font-size:13px}\
.row{fill:#888}.live{fill:#35608a}.refused{fill:#b3261e}.await{fill:#6b6b6b;font-style:italic}\
.broken{fill:#b3261e;font-weight:bold}.lost{fill:#8a8a8a}.crash{fill:#8a2c00;font-weight:bold}";

/// The width of the whole picture.
const WIDTH: usize = GUTTER + LANE_WIDTH * Lane::ALL.len() + 16;

/// The diagram as an SVG document.
pub(crate) fn svg(diagram: &Diagram) -> String {
    Svg(diagram).to_string()
}

/// The document as a `Display`, so every write below returns its
/// `fmt::Result` through `?` instead of dropping it, and `to_string` is the
/// one caller.
struct Svg<'a>(&'a Diagram);

impl fmt::Display for Svg<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let diagram = self.0;
        let width = WIDTH;
        // The rows go first into a buffer: the document's height, written
        // in its first tag, is known only once they are laid out.
        let mut body = String::new();
        let y = draw_rows(&mut body, diagram, width)?;
        let legend = wrap(LEGEND, DETAIL_WIDTH + 10);
        for (index, line) in legend.iter().enumerate() {
            write!(
                body,
                r##"<text class="row" x="8" y="{}">{}</text>"##,
                y + 20 + index * 16,
                escape(line)
            )?;
        }
        let height = y + 20 + legend.len() * 16;
        write!(
            out,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}"><style>{STYLE}</style>"##
        )?;
        defs(out)?;
        write!(
            out,
            r##"<rect width="{width}" height="{height}" fill="#fff"/><text class="title" x="8" y="22">{}</text><text x="8" y="42">{}</text>"##,
            escape(&diagram.title),
            escape(&diagram.verdict())
        )?;
        for lane in Lane::ALL {
            draw_lane(out, lane, height)?;
        }
        out.write_str(&body)?;
        out.write_str("</svg>\n")
    }
}

/// Every row (and the violation box under the broken one); returns the `y`
/// below the last.
fn draw_rows(body: &mut impl Write, diagram: &Diagram, width: usize) -> Result<usize, fmt::Error> {
    let mut y = ROWS_TOP;
    for shown in shown(&diagram.rows, diagram.marked_row()) {
        let (index, row_marks) = match shown {
            Shown::Row(index, row_marks) => (index, row_marks),
            Shown::Elided { from, to } => {
                write!(
                    body,
                    r##"<line x1="0" y1="{y}" x2="{width}" y2="{y}" stroke="#ddd"/><text class="await" x="{}" y="{}" text-anchor="middle">{}</text>"##,
                    width / 2,
                    y + 20,
                    escape(&super::elided(from, to))
                )?;
                y += 30;
                continue;
            }
        };
        let broken = diagram
            .broken
            .as_ref()
            .filter(|(row, _)| *row == index)
            .map(|(_, violation)| format!("BROKEN here: {}", crate::files::shown(violation)));
        let diverged = diagram
            .diverged
            .as_ref()
            .filter(|diverged| diverged.row == index)
            .map(|diverged| format!("DIVERGES here: {}", diverged.text()));
        let broken = broken.or(diverged);
        let height = row_marks.len() * MARK_HEIGHT + 8;
        if broken.is_some() {
            write!(
                body,
                r##"<rect x="0" y="{y}" width="{width}" height="{height}" fill="#f4b4b4" fill-opacity="0.35"/>"##
            )?;
        }
        write!(
            body,
            r##"<line x1="0" y1="{y}" x2="{width}" y2="{y}" stroke="#ddd"/><text class="row" x="8" y="{}">{}</text>"##,
            y + 17,
            index + 1
        )?;
        for (position, mark) in row_marks.iter().enumerate() {
            draw(body, mark, y + 4 + position * MARK_HEIGHT)?;
        }
        y += height;
        if let Some(text) = broken {
            y = draw_violation(body, &text, y, width)?;
        }
    }
    Ok(y)
}

/// The arrowheads: filled for inputs and durable outputs, open for live
/// notifications and awaits, a cross for refusals.
fn defs(out: &mut impl Write) -> fmt::Result {
    let markers = [
        ("solid", r##"<path d="M0,0 L10,5 L0,10 z" fill="#222"/>"##),
        (
            "open",
            r##"<path d="M0,0 L10,5 L0,10" fill="none" stroke="#35608a"/>"##,
        ),
        (
            "cross",
            r##"<path d="M1,1 L9,9 M9,1 L1,9" stroke="#b3261e" stroke-width="2"/>"##,
        ),
        (
            "lost",
            r##"<path d="M1,1 L9,9 M9,1 L1,9" stroke="#8a8a8a" stroke-width="2"/>"##,
        ),
    ];
    out.write_str("<defs>")?;
    for (id, path) in markers {
        write!(
            out,
            r##"<marker id="{id}" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse">{path}</marker>"##
        )?;
    }
    out.write_str("</defs>")
}

/// A lane's title box and its dashed lifeline.
fn draw_lane(document: &mut impl Write, lane: Lane, height: usize) -> fmt::Result {
    let x = center(lane);
    write!(
        document,
        r##"<line x1="{x}" y1="86" x2="{x}" y2="{}" stroke="#bbb" stroke-dasharray="4 4"/><rect x="{}" y="58" width="{}" height="28" rx="4" fill="#eef2f7" stroke="#6d7f99"/><text class="lane" x="{x}" y="77" text-anchor="middle">{}</text>"##,
        height - 8,
        x - LANE_WIDTH / 2 + 12,
        LANE_WIDTH - 24,
        escape(lane.title())
    )
}

fn draw(body: &mut impl Write, mark: &Mark, top: usize) -> fmt::Result {
    match mark {
        Mark::Arrow {
            from,
            to,
            label,
            style,
        } => draw_arrow(body, (*from, *to), &fitted(label), *style, top),
        Mark::Note { lane, label, style } => draw_note(body, *lane, &fitted(label), *style, top),
        Mark::Crash { label } => draw_crash(body, &fitted(label), top),
    }
}

/// The most characters a label shows: about what fits across the lanes.
const LABEL_MAX: usize = (WIDTH - 2 * GUTTER) * 10 / 73;

/// A label cut to [`LABEL_MAX`] characters, saying how long it was (a
/// splice of a few dozen ids is wider than the picture), so its box stays
/// inside the picture; the mermaid text keeps it whole.
fn fitted(label: &str) -> Cow<'_, str> {
    let length = label.chars().count();
    if length <= LABEL_MAX {
        return Cow::Borrowed(label);
    }
    let note = format!("… ({length} characters)");
    let kept: String = label
        .chars()
        .take(LABEL_MAX - note.chars().count())
        .collect();
    Cow::Owned(format!("{kept}{note}"))
}

/// Where a label `width` wide is centered: at `x`, moved in as far as the
/// picture's edges ask (a note on the first lanes is wider than the room
/// left of it). Never left of `GUTTER + width / 2`, so its left edge is no
/// negative number.
fn inside(x: usize, width: usize) -> usize {
    let half = width / 2;
    x.min(WIDTH.saturating_sub(8 + half)).max(GUTTER + half)
}

/// The band across every lane that opens a restart row.
fn draw_crash(body: &mut impl Write, label: &str, top: usize) -> fmt::Result {
    write!(
        body,
        r##"<rect x="{GUTTER}" y="{}" width="{}" height="20" fill="#ffe0b2" stroke="#e65100" stroke-width="1.5" stroke-dasharray="6 3"/><text class="crash" x="{}" y="{}" text-anchor="middle">{}</text>"##,
        top + 2,
        WIDTH - GUTTER - 8,
        (GUTTER + WIDTH) / 2,
        top + 16,
        escape(label)
    )
}

/// A line through a label centered at `x` on the baseline `y`: a lost
/// event never happened (drawn, not styled, so every renderer shows it).
fn strike(body: &mut impl Write, label: &str, x: usize, y: usize) -> fmt::Result {
    let half = text_width(label) / 2;
    let x = inside(x, 2 * half);
    write!(
        body,
        r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#8a8a8a" stroke-width="1.2"/>"##,
        x - half,
        y - 4,
        x + half,
        y - 4
    )
}

fn draw_arrow(
    body: &mut impl Write,
    (from, to): (Lane, Lane),
    label: &str,
    style: Style,
    top: usize,
) -> fmt::Result {
    let (x1, x2) = (center(from), center(to));
    let line_y = top + 18;
    let (color, dash, head) = match style {
        Style::Input | Style::Durable => ("#222", "", "solid"),
        Style::Live => ("#35608a", r#" stroke-dasharray="5 3""#, "open"),
        Style::Await => ("#6b6b6b", r#" stroke-dasharray="2 3""#, "open"),
        Style::Refused => ("#b3261e", "", "cross"),
        Style::Lost => ("#8a8a8a", r#" stroke-dasharray="3 3""#, "lost"),
    };
    let width = if style == Style::Input { 2 } else { 1 };
    let middle = inside((x1 + x2) / 2, text_width(label));
    write!(
        body,
        r##"<line x1="{x1}" y1="{line_y}" x2="{x2}" y2="{line_y}" stroke="{color}" stroke-width="{width}"{dash} marker-end="url(#{head})"/><text{} x="{middle}" y="{}" text-anchor="middle">{}</text>"##,
        class(style),
        line_y - 4,
        escape(label)
    )?;
    match style {
        Style::Lost => strike(body, label, middle, line_y - 4),
        Style::Input | Style::Durable | Style::Live | Style::Await | Style::Refused => Ok(()),
    }
}

fn draw_note(
    body: &mut impl Write,
    lane: Lane,
    label: &str,
    style: Style,
    top: usize,
) -> fmt::Result {
    let width = text_width(label) + 14;
    let (fill, stroke) = match style {
        Style::Refused => ("#fde2e2", "#b3261e"),
        Style::Lost => ("#f2f2f2", "#b0b0b0"),
        Style::Input | Style::Durable | Style::Live | Style::Await => ("#fff8d6", "#c9b458"),
    };
    let x = inside(center(lane), width);
    write!(
        body,
        r##"<rect x="{}" y="{}" width="{width}" height="19" rx="3" fill="{fill}" stroke="{stroke}"/><text{} x="{x}" y="{}" text-anchor="middle">{}</text>"##,
        x - width / 2,
        top + 3,
        class(style),
        top + 17,
        escape(label)
    )?;
    match style {
        Style::Lost => strike(body, label, x, top + 17),
        Style::Input | Style::Durable | Style::Live | Style::Await | Style::Refused => Ok(()),
    }
}

/// The violation box under the row where the property broke.
fn draw_violation(
    body: &mut impl Write,
    text: &str,
    top: usize,
    width: usize,
) -> Result<usize, fmt::Error> {
    let lines = wrap(text, DETAIL_WIDTH);
    let height = lines.len() * 16 + 10;
    write!(
        body,
        r##"<rect x="4" y="{}" width="{}" height="{height}" rx="4" fill="#fff" stroke="#b3261e" stroke-width="2"/>"##,
        top + 2,
        width - 8
    )?;
    for (index, line) in lines.iter().enumerate() {
        write!(
            body,
            r##"<text class="broken" x="14" y="{}">{}</text>"##,
            top + 18 + index * 16,
            escape(line)
        )?;
    }
    Ok(top + height + 6)
}

fn class(style: Style) -> &'static str {
    match style {
        Style::Input | Style::Durable => "",
        Style::Live => r#" class="live""#,
        Style::Await => r#" class="await""#,
        Style::Refused => r#" class="refused""#,
        Style::Lost => r#" class="lost""#,
    }
}

fn center(lane: Lane) -> usize {
    GUTTER + LANE_WIDTH * lane.index() + LANE_WIDTH / 2
}

fn text_width(text: &str) -> usize {
    (text.chars().count() as f64 * CHAR_WIDTH).ceil() as usize
}

/// Greedy word wrap at `width` characters (a longer word gets its own line).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines
}

/// XML text and attribute escaping.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            // XML 1.0 forbids most control characters, even escaped.
            control if control.is_control() => escaped.push('\u{fffd}'),
            other => escaped.push(other),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::{escape, wrap};

    #[test]
    fn markup_in_text_is_escaped() {
        assert_eq!(
            escape(r#"<a href="x">&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;"
        );
        assert_eq!(escape("a\u{0}b"), "a\u{fffd}b");
    }

    #[test]
    fn wrap_breaks_between_words_within_the_width() {
        assert_eq!(wrap("aa bb cc dd", 5), ["aa bb", "cc dd"]);
        assert_eq!(wrap("toolongword x", 4), ["toolongword", "x"]);
    }
}
