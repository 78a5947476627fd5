//! The file `MPICAST_CONFIG` names: its lines parsed into settings, each with its line, so that
//! an error names the file and the line. Its values are checked where the environment's are
//! (`env`), under the environment.

use super::env::{has_prefix, is_known, unknown_var};
use super::{err, ConfigError, CONFIG_VAR};

/// The help of `MPICAST_CONFIG` in [`super::VARIABLES`] (the variable has no field).
pub(super) const CONFIG_HELP: &str =
    "file of settings loaded at start: NAME=VALUE lines with the names of this table \
     (`export NAME=VALUE` and 'quoted' or \"quoted\" values too, # comments), values as in \
     the environment; a variable set (not empty) in the environment wins over the file. \
     Every rank reads it; an error names the file and the line";

/// One setting of a `MPICAST_CONFIG` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSetting {
    /// Its line, from 1.
    pub line: usize,
    /// The variable, as written.
    pub name: String,
    /// The value, quotes removed (checked later, as the environment's values are).
    pub value: String,
}

/// "MPICAST_CONFIG: PATH line N", where a setting of the file was written.
pub(super) fn file_line(path: &str, line: usize) -> String {
    format!("{CONFIG_VAR}: {path} line {line}")
}

pub(super) const EXPECT_LINE: &str =
    "a setting NAME=VALUE (or export NAME=VALUE; the value may be quoted \
     '...' or \"...\"), a # comment, or a blank line";

/// Parses the text of a `MPICAST_CONFIG` file (`path` only names it in errors). Pure.
///
/// One setting per line, `NAME=VALUE` or the shell's `export NAME=VALUE`; whitespace around
/// the name and the value is ignored, a value may be in single or double quotes (taken as
/// they are, with no escapes), and `#` starts a comment at the start of a line or after
/// whitespace outside quotes. Blank lines are ignored. Names are the environment's: an
/// unknown `MPICAST_*` name is an error with a suggestion (unless its value is empty, as in
/// the environment), and so is a name without the prefix (the file holds mpicast's
/// settings only) and `MPICAST_CONFIG` itself (a file cannot name another). Values are not
/// checked here: [`Config::from_vars_reading`] checks them as the environment's.
pub fn parse_config_file(path: &str, text: &str) -> Result<Vec<FileSetting>, ConfigError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let at = |mut e: ConfigError| {
            e.origin = Some(file_line(path, line));
            e
        };
        let bad_line = |why: &str| {
            at(err(
                CONFIG_VAR,
                raw.trim(),
                if why.is_empty() {
                    EXPECT_LINE.to_string()
                } else {
                    format!("{EXPECT_LINE}; {why}")
                },
            ))
        };
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let t = match t.strip_prefix("export") {
            Some(rest) if rest.starts_with(|c: char| c.is_whitespace()) => rest.trim_start(),
            _ => t,
        };
        let Some((name, rest)) = t.split_once('=') else {
            return Err(bad_line("there is no '='"));
        };
        let name = name.trim();
        let name_ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !name_ok {
            return Err(bad_line("the name is not a variable name"));
        }
        let rest = rest.trim_start();
        let value = match rest.chars().next() {
            Some(q @ ('\'' | '"')) => {
                let inner = &rest[1..];
                let Some(end) = inner.find(q) else {
                    return Err(bad_line("a quote is not closed"));
                };
                let after = inner[end + 1..].trim_start();
                if !(after.is_empty() || after.starts_with('#')) {
                    return Err(bad_line("text follows the closing quote"));
                }
                &inner[..end]
            }
            _ => {
                // A comment starts at a '#' after whitespace.
                let cut = rest
                    .char_indices()
                    .find(|&(j, c)| c == '#' && rest[..j].ends_with(|p: char| p.is_whitespace()))
                    .map_or(rest.len(), |(j, _)| j);
                rest[..cut].trim_end()
            }
        };
        if name.eq_ignore_ascii_case(CONFIG_VAR) {
            return Err(at(err(
                CONFIG_VAR,
                raw.trim(),
                format!(
                    "settings only: {CONFIG_VAR} is read from the environment, and a file \
                     cannot name another"
                ),
            )));
        }
        if !has_prefix(name) {
            return Err(at(err(
                name,
                value,
                "an MPICAST_* variable: the file holds mpicast's settings only (others belong \
                 in the environment)",
            )));
        }
        if !is_known(name) {
            if value.trim().is_empty() {
                continue;
            }
            return Err(at(unknown_var(name, value)));
        }
        out.push(FileSetting {
            line,
            name: name.to_string(),
            value: value.to_string(),
        });
    }
    Ok(out)
}
