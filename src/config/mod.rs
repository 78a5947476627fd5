//! Configuration: every `MPICAST_*` environment variable, parsed once into one typed [`Config`],
//! and the per-communicator `MPI_Info` hints ([`Hints`]) that may override a few of them.
//!
//! Pure: apart from the thin [`Config::from_env`] wrapper nothing here reads the environment, a
//! file, a clock or a socket. A bad value, or an `MPICAST_*` name that is not in [`VARIABLES`]
//! (a typo), is a [`ConfigError`] naming the variable: nothing is silently ignored and nothing
//! panics.
//!
//! `MPICAST_CONFIG=FILE` names a file of the same settings ([`parse_config_file`]), under the
//! environment: defaults < file < environment, an empty environment variable being unset (so
//! the file's value applies). Every rank reads the file itself, in `from_env`; its values take
//! part in everything the environment's do (the ranks' comparison of [`Config::agreed`] sees
//! only the values in force), and its errors name the file and the line.
//!
//! Conventions shared by all variables:
//! - An empty (or all-blank) value means "unset", so `MPICAST_TTL=` gives the default.
//! - Surrounding whitespace is ignored.
//! - Sizes are a decimal integer with an optional binary suffix: `k`/`KiB` (1024),
//!   `m`/`MiB` (1024²) or `g`/`GiB` (1024³), case-insensitive. `kB`/`MB` are rejected because they
//!   are ambiguous between decimal and binary.
//! - Subnets: `MPICAST_IFACE=10.1.2.3/16` is normalised to `10.1.0.0/16` (the form `ip addr`
//!   prints is accepted as is), but `MPICAST_GROUP` with host bits set is rejected: a set host
//!   part there usually means one specific group was wanted, which is written `/32`.
//!
//! Where things are: `table` holds one row per setting (name, field, default, parser, help,
//! agreed or not, hint key) and makes [`Config`], [`VARIABLES`] and [`Hints`] from it; `parse`
//! the value parsers; `env` the lookup and the names; `file` the `MPICAST_CONFIG` file; `agree`
//! the settings ranks share; `hints` the `MPI_Info` keys; `values` the types of values.
//! To add a setting, add a row to `table` (and its README row); nothing else lists settings.

mod agree;
mod env;
mod file;
mod hints;
mod parse;
mod table;
mod values;

pub use agree::{differences, parse_agreed_line, rank_list};
pub use env::{OTHER_TOOLS_SUFFIXES, TOOL_VARIABLES};
pub use file::{parse_config_file, FileSetting};
pub use table::{Config, Hints, HINT_KEYS, VARIABLES};
pub use values::{
    in_subnet, DbcastTree, IfaceSpec, ImcastTransport, MinBytes, Progress, SyncAlgo, Topo,
    TopoPick, MMCAST_ALGOS,
};

use std::fmt;

/// Prefix shared by every variable; any other name with it is a typo.
pub const PREFIX: &str = "MPICAST_";

/// The variable naming a file of settings ([`parse_config_file`]); read from the environment
/// only (a file cannot name another).
pub const CONFIG_VAR: &str = "MPICAST_CONFIG";

/// A variable (or `MPI_Info` key) whose value, or name, is not acceptable.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    /// The variable or key, as given; [`CONFIG_VAR`] for a line of its file that is not a
    /// setting at all (then `value` is the line).
    pub var: String,
    /// The value, as given.
    pub value: String,
    /// What would have been accepted.
    pub expected: String,
    /// Where the setting was written when not in the environment: the file of
    /// [`CONFIG_VAR`] and the line (`MPICAST_CONFIG: /etc/mpicast.conf line 3`).
    pub origin: Option<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            None => write!(
                f,
                "mpicast: {}={} is invalid: expected {}",
                self.var, self.value, self.expected
            ),
            // A line that is no setting: quote it whole.
            Some(o) if self.var == CONFIG_VAR => write!(
                f,
                "mpicast: {o}: `{}` is invalid: expected {}",
                self.value, self.expected
            ),
            Some(o) => write!(
                f,
                "mpicast: {o}: {}={} is invalid: expected {}",
                self.var, self.value, self.expected
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

fn err(var: &str, value: &str, expected: impl Into<String>) -> ConfigError {
    ConfigError {
        var: var.to_string(),
        value: value.to_string(),
        expected: expected.into(),
        origin: None,
    }
}

#[cfg(test)]
mod tests;
