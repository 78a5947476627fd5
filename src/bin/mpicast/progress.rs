//! A progress line on stderr for long runs of `mpicast sim`: one line rewritten in place when
//! stderr is a terminal, nothing otherwise (logs stay clean), at most five updates a second.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

pub struct Progress {
    label: String,
    on: bool,
    last: Option<Instant>,
    shown: bool,
}

impl Progress {
    /// A progress line called `label`, shown only when stderr is a terminal and `wanted`.
    pub fn new(label: &str, wanted: bool) -> Self {
        Progress {
            label: label.to_string(),
            on: wanted && std::io::stderr().is_terminal(),
            last: None,
            shown: false,
        }
    }

    /// Shows `done` of `total` as a bar and a percentage.
    pub fn update(&mut self, done: u64, total: u64) {
        if !self.on || total == 0 {
            return;
        }
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < Duration::from_millis(200))
        {
            return;
        }
        self.last = Some(now);
        let frac = (done as f64 / total as f64).clamp(0.0, 1.0);
        let width = 30;
        let full = (frac * width as f64) as usize;
        let _ = write!(
            std::io::stderr(),
            "\r{}: [{}{}] {:5.1} %",
            self.label,
            "#".repeat(full),
            " ".repeat(width - full),
            frac * 100.0
        );
        self.shown = true;
    }

    /// Clears the line (the result follows on stdout).
    pub fn finish(&mut self) {
        if self.shown {
            let _ = write!(
                std::io::stderr(),
                "\r{}\r",
                " ".repeat(self.label.len() + 45)
            );
            self.shown = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
