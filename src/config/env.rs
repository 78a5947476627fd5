//! Settings from the environment (and the file under it): the lookup that reads every row of
//! the table, the layering defaults < `MPICAST_CONFIG` file < environment, and the names with
//! our prefix that are not settings (typos, with a suggestion; names of other tools).

use super::file::{file_line, parse_config_file};
use super::table::ROWS;
use super::{err, Config, ConfigError, CONFIG_VAR, PREFIX, VARIABLES};

impl Config {
    /// Parses values through `get` (name -> value). Pure; used by tests and by [`Config::from_vars`].
    /// It cannot see names it does not ask for, so it does not detect typos; `from_vars` does.
    /// Rows are read in the table's order, those marked `late` (checked against another
    /// setting) after the others; unset and empty values keep the default.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        for late in [false, true] {
            for row in ROWS.iter().filter(|r| r.late == late) {
                let Some(raw) = get(row.var) else { continue };
                let v = raw.trim();
                if v.is_empty() {
                    continue;
                }
                (row.set)(&mut c, v).map_err(|expected| err(row.var, &raw, expected))?;
            }
        }
        Ok(c)
    }

    /// Parses a whole environment: every `(name, value)` pair, of which only names starting with
    /// `MPICAST_` (in any letter case) matter. A name with that prefix that is not exactly one of
    /// [`VARIABLES`] is an error with a suggestion, unless its value is empty (= unset).
    /// When a name appears twice the last value wins, as in a shell. Reads no file:
    /// `MPICAST_CONFIG` is accepted and its file left alone ([`Config::from_vars_reading`]
    /// reads it).
    pub fn from_vars<I, K, V>(vars: I) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        Config::resolve(vars, None::<fn(&str) -> Result<String, String>>)
    }

    /// As [`Config::from_vars`], and when `MPICAST_CONFIG` names a file, its settings
    /// ([`parse_config_file`]) under the environment's: defaults < file < environment. A
    /// variable set to an empty value in the environment is unset, as everywhere, so the
    /// file's value applies. Every value of the file is checked, also one the environment
    /// overrides (the last of a name, as in force). `read` gives a file's text (or why it
    /// cannot); the only reader that touches the file system is [`Config::from_env`]'s. An
    /// error in the file names the file and the line ([`ConfigError::origin`]).
    pub fn from_vars_reading<I, K, V, R>(vars: I, read: R) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
        R: FnOnce(&str) -> Result<String, String>,
    {
        Config::resolve(vars, Some(read))
    }

    fn resolve<I, K, V, R>(vars: I, read: Option<R>) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
        R: FnOnce(&str) -> Result<String, String>,
    {
        /// name -> (value, the line of the file that set it; None: the environment).
        type Settings = Vec<(String, String, Option<usize>)>;
        fn set(ours: &mut Settings, k: &str, v: &str, line: Option<usize>) {
            match ours.iter_mut().find(|(name, _, _)| name == k) {
                Some(slot) => (slot.1, slot.2) = (v.to_string(), line),
                None => ours.push((k.to_string(), v.to_string(), line)),
            }
        }
        let mut ours: Settings = Vec::new();
        for (k, v) in vars {
            let (k, v) = (k.as_ref(), v.as_ref());
            if !has_prefix(k) {
                continue;
            }
            if !is_known(k) {
                if v.trim().is_empty() {
                    continue;
                }
                return Err(unknown_var(k, v));
            }
            set(&mut ours, k, v, None);
        }

        let mut path = None;
        if let Some(read) = read {
            let named = ours
                .iter()
                .find(|(k, v, _)| k == CONFIG_VAR && !v.trim().is_empty())
                .map(|(_, v, _)| v.clone());
            if let Some(raw) = named {
                let p = raw.trim().to_string();
                let text = read(&p).map_err(|e| {
                    err(
                        CONFIG_VAR,
                        &raw,
                        format!(
                            "the path of a readable file of settings, NAME=VALUE lines (reading it \
                             failed: {e})"
                        ),
                    )
                })?;
                let file = parse_config_file(&p, &text)?;
                // The file is checked whole, even where the environment overrides it: a bad
                // value there would surface the day the variable is unset.
                Config::from_lookup(|name| {
                    file.iter()
                        .rev()
                        .find(|s| s.name == name)
                        .map(|s| s.value.clone())
                })
                .map_err(|mut e| {
                    if let Some(s) = file.iter().rev().find(|s| s.name == e.var) {
                        e.origin = Some(file_line(&p, s.line));
                    }
                    e
                })?;
                // Under the environment: a value set there (not empty) wins.
                let env = std::mem::take(&mut ours);
                for s in &file {
                    set(&mut ours, &s.name, &s.value, Some(s.line));
                }
                for (k, v, _) in env {
                    if !v.trim().is_empty() {
                        set(&mut ours, &k, &v, None);
                    }
                }
                path = Some(p);
            }
        }

        Config::from_lookup(|name| {
            ours.iter()
                .find(|(k, _, _)| k == name)
                .map(|(_, v, _)| v.clone())
        })
        .map_err(|mut e| {
            let line = ours
                .iter()
                .find(|(k, _, _)| *k == e.var)
                .and_then(|(_, _, l)| *l);
            if let (Some(p), Some(l)) = (&path, line) {
                e.origin = Some(file_line(p, l));
            }
            e
        })
    }

    /// Reads the process environment, and the file `MPICAST_CONFIG` names. Not pure;
    /// everything else here is.
    /// The process's configuration: [`Config::from_env`] read once, at the first call (the
    /// library's first MPI call that needs it), so that `MPICAST_CONFIG`'s file is read once
    /// and every part of the library sees the same settings.
    pub fn process() -> Result<Config, ConfigError> {
        static PROCESS: std::sync::OnceLock<Result<Config, ConfigError>> =
            std::sync::OnceLock::new();
        PROCESS.get_or_init(Config::from_env).clone()
    }

    pub fn from_env() -> Result<Config, ConfigError> {
        let mut vars: Vec<(String, String)> = Vec::new();
        // vars_os, because std::env::vars panics on a non-UTF-8 entry anywhere in the environment.
        for (k, v) in std::env::vars_os() {
            let k = match k.into_string() {
                Ok(k) => k,
                Err(k) => {
                    let lossy = k.to_string_lossy().into_owned();
                    if has_prefix(&lossy) {
                        return Err(unknown_var(&lossy, &v.to_string_lossy()));
                    }
                    continue;
                }
            };
            if !has_prefix(&k) {
                continue;
            }
            match v.into_string() {
                Ok(v) => vars.push((k, v)),
                Err(v) => {
                    return Err(err(&k, &v.to_string_lossy(), "a value in valid UTF-8"));
                }
            }
        }
        Config::from_vars_reading(vars, |path| {
            std::fs::read_to_string(path).map_err(|e| e.to_string())
        })
    }
}

pub(super) fn has_prefix(name: &str) -> bool {
    name.len() >= PREFIX.len() && name[..PREFIX.len()].eq_ignore_ascii_case(PREFIX)
}

/// Variables of mpicast's command-line tools, not of the library: a tool that exports one
/// starts ranks that inherit it, so the library accepts them and ignores them.
pub const TOOL_VARIABLES: &[&str] = &[
    "MPICAST_GOAL_RUNNER",
    "MPICAST_TUNE_RUNNER",
    "MPICAST_DOCTOR_RUNNER",
    "MPICAST_CLI",
];

pub(super) fn is_known(name: &str) -> bool {
    VARIABLES.iter().any(|(n, _, _)| *n == name)
        || TOOL_VARIABLES.contains(&name)
        || owned_by_other_tools(name)
}

/// Names with our prefix that other tools set for their own purposes, in any letter case:
/// CMake's `find_package(mpicast)` reads `mpicast_DIR` and `mpicast_ROOT` (and
/// `MPICAST_ROOT`), and module systems and package managers export `<PKG>_HOME`, `_DIR`,
/// `_ROOT` and `_PREFIX` for what they install. They are not settings of the library, so
/// they are let through (and ignored); anything else with the prefix is still checked.
pub const OTHER_TOOLS_SUFFIXES: &[&str] = &["ROOT", "DIR", "HOME", "PREFIX"];

fn owned_by_other_tools(name: &str) -> bool {
    has_prefix(name)
        && OTHER_TOOLS_SUFFIXES
            .iter()
            .any(|s| name[PREFIX.len()..].eq_ignore_ascii_case(s))
}

pub(super) fn unknown_var(name: &str, value: &str) -> ConfigError {
    let upper = name.to_ascii_uppercase();
    let best = VARIABLES
        .iter()
        .map(|(n, _, _)| (edit_distance(&upper, n), *n))
        .min();
    let expected = match best {
        // Distance 0 means only the letter case differs; environment names are case-sensitive.
        Some((d, n)) if d <= 3 => format!("a known MPICAST_ variable name (did you mean {n}?)"),
        _ => {
            let names: Vec<&str> = VARIABLES.iter().map(|(n, _, _)| *n).collect();
            format!("a known MPICAST_ variable name: {}", names.join(", "))
        }
    };
    err(name, value, expected)
}

/// Levenshtein distance over bytes; the names compared are short ASCII.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}
