//! Just enough of git's config syntax to tell which entries a run added: every entry not on
//! a short allow-list of inert keys counts as able to run code (`core.hooksPath`,
//! `core.fsmonitor`, `core.sshCommand`, `core.pager`, `*.textconv`, `filter.*`,
//! `diff.external`, `credential.helper`, `include.path`, `remote.*.uploadpack`, ... and any
//! key git adds later). Text this parser does not understand is treated as dangerous.

/// One entry: `section[.subsection].key` (section and key lowercased, as git compares
/// them) and its value text as written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub section: String,
    pub subsection: Option<String>,
    pub key: String,
    pub value: Option<String>,
}

impl Entry {
    pub fn name(&self) -> String {
        match &self.subsection {
            Some(s) => format!("{}.{s}.{}", self.section, self.key),
            None => format!("{}.{}", self.section, self.key),
        }
    }

    /// Whether git reading this entry cannot run a program or load other config.
    pub fn inert(&self) -> bool {
        let sub = self.subsection.is_some();
        let plain = |list: &[&str]| !sub && list.contains(&self.key.as_str());
        let value = self.value.as_deref().unwrap_or("");
        match self.section.as_str() {
            "core" => plain(&[
                "repositoryformatversion",
                "filemode",
                "bare",
                "logallrefupdates",
                "ignorecase",
                "precomposeunicode",
                "symlinks",
                "autocrlf",
                "eol",
                "safecrlf",
                "quotepath",
            ]),
            "extensions" => plain(&["objectformat", "refstorage", "worktreeconfig"]),
            "init" => plain(&["defaultbranch"]),
            "user" => plain(&["name", "email"]),
            "color" => plain(&["ui"]),
            "pull" => plain(&["rebase", "ff"]),
            "push" => plain(&["default", "autosetupremote"]),
            "fetch" => plain(&["prune"]),
            // URLs: transports that run commands (ext::, fd::) are not inert.
            "remote" | "submodule" if sub && self.key.ends_with("url") => {
                !value.contains("::") && !value.starts_with('-')
            }
            "remote" => {
                sub && ["fetch", "push", "tagopt", "prune", "mirror"].contains(&self.key.as_str())
            }
            "submodule" => sub && ["active", "path", "branch"].contains(&self.key.as_str()),
            "branch" => {
                sub && ["remote", "merge", "rebase", "pushremote", "description"]
                    .contains(&self.key.as_str())
            }
            _ => false,
        }
    }
}

/// The entries of a config file in order; None when the text is not plain enough for this
/// parser (continuation lines, bad headers, non-UTF-8): callers treat that as dangerous.
pub fn parse(bytes: &[u8]) -> Option<Vec<Entry>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut out = Vec::new();
    let mut section: Option<(String, Option<String>)> = None;
    for line in text.lines() {
        let mut rest = line.trim_start();
        if rest.starts_with('[') {
            let (header, after) = parse_header(rest)?;
            section = Some(header);
            rest = after.trim_start();
        }
        if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
            continue;
        }
        let (sec, sub) = section.clone()?;
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(rest.len());
        let (name, tail) = rest.split_at(name_len);
        if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return None;
        }
        let tail = tail.trim_start();
        let value = if tail.is_empty() || tail.starts_with('#') || tail.starts_with(';') {
            None
        } else {
            let v = tail.strip_prefix('=')?.trim();
            if v.ends_with('\\') {
                return None; // continuation line
            }
            Some(v.to_string())
        };
        out.push(Entry {
            section: sec,
            subsection: sub,
            key: name.to_ascii_lowercase(),
            value,
        });
    }
    Some(out)
}

/// `[section]`, `[section "sub"]` or `[section.sub]`; returns the header and the rest of the
/// line (git allows an entry after the header on the same line).
fn parse_header(line: &str) -> Option<((String, Option<String>), &str)> {
    let body = line.strip_prefix('[')?;
    let name_len = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.'))
        .unwrap_or(body.len());
    let (name, rest) = body.split_at(name_len);
    if name.is_empty() {
        return None;
    }
    if let Some(after) = rest.strip_prefix(']') {
        return Some(match name.split_once('.') {
            Some((s, sub)) => (
                (s.to_ascii_lowercase(), Some(sub.to_ascii_lowercase())),
                after,
            ),
            None => ((name.to_ascii_lowercase(), None), after),
        });
    }
    if name.contains('.') {
        return None;
    }
    let quoted = rest.strip_prefix(' ')?.trim_start().strip_prefix('"')?;
    let mut sub = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => sub.push(chars.next()?.1),
            '"' => {
                let after = quoted[i + 1..].strip_prefix(']')?;
                return Some(((name.to_ascii_lowercase(), Some(sub)), after));
            }
            _ => sub.push(c),
        }
    }
    None
}

/// A config holding only the inert `entries`, one header per entry (valid git syntax).
pub fn render(entries: &[Entry]) -> Vec<u8> {
    let mut out = String::new();
    for e in entries {
        match &e.subsection {
            Some(s) => {
                let s = s.replace('\\', "\\\\").replace('"', "\\\"");
                out.push_str(&format!("[{} \"{s}\"]\n", e.section));
            }
            None => out.push_str(&format!("[{}]\n", e.section)),
        }
        match &e.value {
            Some(v) => out.push_str(&format!("\t{} = {v}\n", e.key)),
            None => out.push_str(&format!("\t{}\n", e.key)),
        }
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str, inert: bool) -> Vec<String> {
        parse(text.as_bytes())
            .unwrap()
            .iter()
            .filter(|e| e.inert() == inert)
            .map(Entry::name)
            .collect()
    }

    #[test]
    fn code_running_keys_are_never_inert() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = ./x\n\
            [Core] HooksPath = /tmp\n[core \"x\"]\n\tbare = true\n\
            [diff \"a\"]\n\ttextconv = sh\n[filter \"lfs\"]\n\tclean = sh\n\
            [include]\n\tpath = ../evil\n[includeIf \"gitdir:/\"]\n\tpath = x\n\
            [remote \"o\"]\n\turl = ext::sh -c evil\n\tuploadpack = sh\n\tfetch = +refs/*:refs/*\n\
            [credential]\n\thelper = !sh\n[submodule \"s\"]\n\tupdate = !sh\n\
            [core.sshcommand]\n[alias]\n\tst = !sh\n[user]\n\tname = A ; comment\n";
        assert_eq!(
            names(text, false),
            [
                "core.fsmonitor",
                "core.hookspath",
                "core.x.bare",
                "diff.a.textconv",
                "filter.lfs.clean",
                "include.path",
                "includeif.gitdir:/.path",
                "remote.o.url",
                "remote.o.uploadpack",
                "credential.helper",
                "submodule.s.update",
                "alias.st",
            ]
        );
        assert_eq!(
            names(text, true),
            [
                "core.repositoryformatversion",
                "remote.o.fetch",
                "user.name"
            ]
        );
    }

    #[test]
    fn unparsable_text_is_none_and_render_round_trips() {
        assert!(parse(b"[core]\n\tfsmonitor = a\\\n b\n").is_none());
        assert!(
            parse(b"fsmonitor = x\n").is_none(),
            "entry before any section"
        );
        assert!(parse(b"[core \"x]\n").is_none());
        assert!(parse(&[0xff, 0xfe]).is_none());
        let text = b"[remote \"o\\\"x\"]\n\turl = https://h/r\n[core]\n\tbare\n";
        let entries = parse(text).unwrap();
        assert_eq!(parse(&render(&entries)).unwrap(), entries);
    }
}
