//! Per-communicator `MPI_Info` hints: the rows of the table with a `hint` key, recorded by
//! [`Hints::set`] and applied by [`Config::with_hints`].

use super::table::ROWS;
use super::{err, Config, ConfigError, Hints, HINT_KEYS};

impl Hints {
    /// Records one `MPI_Info` entry. Returns `Ok(false)` for keys that are not ours, `Ok(true)` for
    /// ours; an unknown `mpicast_*` key or a bad value is an error. An empty value clears the hint.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, ConfigError> {
        if let Some(h) = ROWS
            .iter()
            .filter_map(|r| r.hint.as_ref())
            .find(|h| h.key == key)
        {
            (h.set)(self, value.trim())
                .map_err(|expected| err(&format!("MPI_Info key {key}"), value, expected))?;
            return Ok(true);
        }
        if ROWS.iter().any(|r| r.info_key == Some(key)) {
            return Ok(true);
        }
        if key.to_ascii_lowercase().starts_with("mpicast_") {
            let (last, rest) = HINT_KEYS.split_last().expect("the table has hint keys");
            return Err(err(
                &format!("MPI_Info key {key}"),
                value,
                format!("a known key: {} or {last}", rest.join(", ")),
            ));
        }
        Ok(false)
    }
}

impl Config {
    /// This configuration with a communicator's hints applied.
    pub fn with_hints(&self, h: &Hints) -> Config {
        let mut c = self.clone();
        for hint in ROWS.iter().filter_map(|r| r.hint.as_ref()) {
            (hint.apply)(h, &mut c);
        }
        c
    }
}

/// How most hints apply: the communicator's value replaces the process's.
pub(super) fn replace<T: Clone>(given: &T, value: &mut T) {
    *value = given.clone();
}

/// How the hint `mpicast` (on/off) applies to `MPICAST_DISABLE`: `MPICAST_DISABLE=1` is a kill
/// switch that a hint cannot undo; a hint can only turn multicast off for its communicator.
pub(super) fn turns_off(enabled: &bool, disable: &mut bool) {
    if !enabled {
        *disable = true;
    }
}
