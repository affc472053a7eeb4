//! Here-document bodies where bash and dash end them. Only a line that is exactly the
//! delimiter (after its leading tabs, for `<<-`) ends a body; with no such line the body runs
//! to the end of the input. tree-sitter-bash ends a body at the first line that starts with
//! the delimiter (`EOF; cmd`, `EOF `, ` EOF`), so it would read body text as commands or, the
//! other way round, commands as body text. Where the two disagree, the text is rewritten so
//! that the parser reads it as the shells do: the heredoc gets a fresh delimiter, which
//! replaces the line the shells end it at. What cannot be checked is an error (gated).

use super::syntax::{children, kind};
use tree_sitter::Node;

/// Why the here-documents of a text could not be read as the shells read them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HeredocError {
    #[error("here-document delimiter `{0}` is not a plain word")]
    Delimiter(String),
    #[error("a here-document's body does not start on the line after its command")]
    BodyStart,
    #[error(
        "an unquoted here-document line ends in `\\` (bash and dash end the body differently)"
    )]
    Continuation,
    #[error("the shell parser reads a here-document differently from the shell")]
    Unsettled,
}

/// The start of the delimiters this module writes (a text that uses it itself and needs a
/// rewrite is `Unsettled`).
const FRESH: &str = "SANCTUM_HEREDOC_END_";

/// An unquoted body's text that the parser left as text but the shell expands (`` `cmd` ``,
/// `$[…]`, or a `$(`/`${` it did not parse): the gate's reason. The shell runs those
/// commands; the walk cannot see them.
pub(crate) fn unparsed_substitution(body: Node, src: &str) -> Option<String> {
    let start = body.parent().and_then(|r| {
        children(r)
            .into_iter()
            .find(|c| kind(*c) == "heredoc_start")
    });
    if start.is_some_and(|s| src[s.byte_range()].contains(['\'', '"', '\\'])) {
        return None;
    }
    let mut pos = body.start_byte();
    let mut pieces = Vec::new();
    for child in children(body) {
        pieces.push(&src[pos..child.start_byte()]);
        if kind(child) == "heredoc_content" {
            pieces.push(&src[child.byte_range()]);
        }
        pos = child.end_byte();
    }
    pieces.push(&src[pos..body.end_byte()]);
    let hit = pieces
        .into_iter()
        .find(|p| ["`", "$(", "${", "$["].iter().any(|s| p.contains(s)))?;
    Some(format!(
        "a here-document holds `{}`, which the shell expands and the parser kept as text",
        super::inert::truncate(hit.trim())
    ))
}

/// Rewrites of one text before giving up (each fixes one here-document).
const MAX_REWRITES: usize = 32;

/// `text` (parsed as `root`) as the shells read its here-documents: `None` when the parser
/// already ends every body where they do, else the rewritten text, whose parse does.
pub(crate) fn realign(text: &str, root: Node) -> Result<Option<String>, HeredocError> {
    realign_with(text, root, false)
}

/// [`realign`]; `force` rewrites every here-document (the tests check the shells' reading
/// on texts the parser already reads right).
fn realign_with(text: &str, root: Node, force: bool) -> Result<Option<String>, HeredocError> {
    if !text.contains("<<") {
        return Ok(None);
    }
    let Some(mut next) = first_rewrite(text, root, force)? else {
        return Ok(None);
    };
    for _ in 0..MAX_REWRITES {
        let Some(tree) = super::parse(&next) else {
            return Err(HeredocError::Unsettled);
        };
        if tree.root_node().has_error() {
            // The walk reports the syntax error.
            return Ok(Some(next));
        }
        match first_rewrite(&next, tree.root_node(), force)? {
            Some(again) => next = again,
            None => return Ok(Some(next)),
        }
    }
    Err(HeredocError::Unsettled)
}

/// The text with the first here-document the parser ends elsewhere than the shells
/// rewritten, or `None` when there is none.
fn first_rewrite(text: &str, root: Node, force: bool) -> Result<Option<String>, HeredocError> {
    let mut stack = vec![root];
    let mut found = Vec::new();
    while let Some(n) = stack.pop() {
        if kind(n) == "heredoc_redirect" {
            found.push(n);
        }
        let mut kids = children(n);
        kids.reverse();
        stack.extend(kids);
    }
    for node in found {
        if let Some(rewritten) = check(text, node, force)? {
            return Ok(Some(rewritten));
        }
    }
    Ok(None)
}

/// One here-document: `None` when the parser ends it where the shells do.
fn check(text: &str, node: Node, force: bool) -> Result<Option<String>, HeredocError> {
    let items = children(node);
    let strip_tabs = items.first().is_some_and(|op| kind(*op) == "<<-");
    let find = |k: &str| items.iter().copied().find(|c| kind(*c) == k);
    let start = find("heredoc_start").ok_or(HeredocError::Unsettled)?;
    let (delim, quoted) = delimiter(&text[start.byte_range()])?;
    let body = find("heredoc_body")
        .or_else(|| find("heredoc_end"))
        .ok_or(HeredocError::Unsettled)?;
    // The body starts on the line after the command's (tabs there belong to the line, for
    // `<<-`); anything else (two here-documents on a line, a quoted newline) is not checked.
    let between = &text[start.end_byte()..body.start_byte()];
    let line_start = start.end_byte() + between.find('\n').ok_or(HeredocError::BodyStart)? + 1;
    let indent = &text[line_start..body.start_byte()];
    if !(indent.is_empty() || strip_tabs && indent.bytes().all(|b| b == b'\t')) {
        return Err(HeredocError::BodyStart);
    }
    let end = shells_end(text, line_start, &delim, strip_tabs, quoted)?;
    let parsed = find("heredoc_end").map(|e| (line_of(text, e.start_byte()), e.end_byte()));
    let ours = delim.starts_with(FRESH);
    if end.is_some() && parsed == end && (ours || !force) {
        return Ok(None);
    }
    if ours {
        return Err(HeredocError::Unsettled);
    }
    let fresh = fresh_delimiter(text);
    let mut out = String::with_capacity(text.len() + 2 * fresh.len() + 4);
    out.push_str(&text[..start.start_byte()]);
    if quoted {
        out.push('\'');
        out.push_str(&fresh);
        out.push('\'');
    } else {
        out.push_str(&fresh);
    }
    match end {
        Some((from, to)) => {
            out.push_str(&text[start.end_byte()..from]);
            out.push_str(&fresh);
            out.push_str(&text[to..]);
        }
        None => {
            out.push_str(&text[start.end_byte()..]);
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&fresh);
        }
    }
    Ok(Some(out))
}

/// The line that ends a body starting at `from`, as the shells read it: its start and end
/// (before the newline); `None` when the body runs to the end of the input.
fn shells_end(
    text: &str,
    from: usize,
    delim: &str,
    strip_tabs: bool,
    quoted: bool,
) -> Result<Option<(usize, usize)>, HeredocError> {
    let mut pos = from;
    while pos < text.len() {
        let stop = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let line = &text[pos..stop];
        let bare = if strip_tabs {
            line.trim_start_matches('\t')
        } else {
            line
        };
        if bare == delim {
            return Ok(Some((pos, stop)));
        }
        // Unquoted, bash joins `E\` and `OF` into a delimiter line; dash does not.
        if !quoted && line.ends_with('\\') {
            return Err(HeredocError::Continuation);
        }
        pos = stop + 1;
    }
    Ok(None)
}

/// The start of the line holding byte `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// A delimiter no line of `text` holds.
fn fresh_delimiter(text: &str) -> String {
    let mut n = 0usize;
    loop {
        let name = format!("{FRESH}{n}");
        if !text.contains(&name) {
            return name;
        }
        n += 1;
    }
}

/// Characters a delimiter may hold outside quotes (no expansion, glob or operator).
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_.-+,:@%/=".contains(c)
}

/// The delimiter word after quote removal, and whether any of it was quoted (the body is
/// then not expanded). Only plain characters, in or out of quotes (spaces inside quotes).
fn delimiter(word: &str) -> Result<(String, bool), HeredocError> {
    let bad = || HeredocError::Delimiter(word.to_string());
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                quoted = true;
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some(x) if plain(x) || x == ' ' => out.push(x),
                        _ => return Err(bad()),
                    }
                }
            }
            '\\' => {
                quoted = true;
                match chars.next() {
                    Some(x) if plain(x) => out.push(x),
                    _ => return Err(bad()),
                }
            }
            c if plain(c) => out.push(c),
            _ => return Err(bad()),
        }
    }
    if out.is_empty() {
        return Err(bad());
    }
    Ok((out, quoted))
}

#[cfg(test)]
mod tests;
