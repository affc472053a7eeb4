//! Errors of the policy loader: each names the file and, when it comes from the text, the
//! line and column (1-based) of the offending key or value.

use std::ops::Range;

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// Not TOML, an unknown key, a bad enum value, a wrong type, a missing key.
    #[error("{origin}:{line}:{column}: {message}")]
    Syntax {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// Well-formed, but breaks a rule the loader enforces.
    #[error("{origin}:{line}:{column}: {message}")]
    Invalid {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A sensitive-path or program pattern that does not compile.
    #[error("bad pattern {pattern:?}: {message}")]
    Pattern { pattern: String, message: String },
    #[error("{origin}: {source}")]
    Io {
        origin: String,
        #[source]
        source: std::io::Error,
    },
}

impl PolicyError {
    pub(crate) fn pattern(pattern: &str, message: impl Into<String>) -> Self {
        PolicyError::Pattern {
            pattern: pattern.to_string(),
            message: message.into(),
        }
    }

    /// An [`PolicyError::Invalid`] at byte range `span` of `text`.
    pub(crate) fn at(
        origin: &str,
        text: &str,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        let (line, column) = line_col(text, span.start);
        PolicyError::Invalid {
            origin: origin.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    /// A [`PolicyError::Syntax`] from the TOML deserialiser.
    pub(crate) fn syntax(origin: &str, text: &str, err: &toml::de::Error) -> Self {
        let (line, column) = line_col(text, err.span().map_or(0, |s| s.start));
        PolicyError::Syntax {
            origin: origin.to_string(),
            line,
            column,
            message: err.message().trim().to_string(),
        }
    }

    /// (line, column), 1-based, when the error points into the text.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            PolicyError::Syntax { line, column, .. }
            | PolicyError::Invalid { line, column, .. } => Some((*line, *column)),
            _ => None,
        }
    }
}

/// 1-based line and column (in characters) of byte `offset`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn line_col_counts_characters() {
        let text = "a = 1\nbé = x\n";
        assert_eq!(super::line_col(text, 0), (1, 1));
        assert_eq!(super::line_col(text, 6), (2, 1));
        assert_eq!(super::line_col(text, 11), (2, 5));
    }
}
