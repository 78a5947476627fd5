//! What every rank of a communicator must share: the agreed settings (the rows of the table
//! with an `agreed` position), their one canonical spelling, the line and the
//! `NAME:value` list they travel in, and where ranks differ.

use super::table::ROWS;
use super::{Config, ImcastTransport, MinBytes, SyncAlgo, Topo, PREFIX};
use crate::algo::prefix::Route;
use std::net::Ipv4Addr;

/// The settings that every rank of a communicator must share, as (variable, value) in one
/// canonical spelling: ranks that differ in any of them would take different paths for the
/// same call (one multicasting, another waiting in the host MPI), draw groups from other
/// ranges, or cut datagrams differently. Values are the ones in force (for a communicator,
/// after its hints). Settings that may differ between ranks are not listed: the interface
/// (hosts may name theirs differently), buffer sizes (the setup takes the smallest),
/// timeouts, statistics, verbosity and the GOAL settings.
impl Config {
    /// In the order of the rows' `agreed` positions, which the line keeps: `MPICAST_TOPO_FILE`,
    /// the only value of unbounded length, last (see `agreed_path`).
    pub fn agreed(&self) -> Vec<(&'static str, String)> {
        let mut rows: Vec<(u8, &'static str, String)> = ROWS
            .iter()
            .filter_map(|r| r.agreed.map(|(at, show)| (at, r.var, show(self))))
            .collect();
        rows.sort_by_key(|r| r.0);
        rows.into_iter().map(|(_, var, v)| (var, v)).collect()
    }

    /// One line of `agreed()`: `NAME=value` pairs (without the prefix), space-separated.
    pub fn agreed_line(&self) -> String {
        let parts: Vec<String> = self
            .agreed()
            .iter()
            .map(|(k, v)| format!("{}={v}", &k[PREFIX.len()..]))
            .collect();
        parts.join(" ")
    }
}

/// A path as an agreed value: the values travel as space-separated `NAME=value` words (and
/// through the launcher's name service as `NAME:value,...`), so every byte but letters, digits
/// and `/._-+~@:` is written `%XX`; `(` is among them, so no path reads as `(unset)`. A path
/// whose written form is longer than 200 characters is cut to its last 160, after `...` and
/// before `#` and a digest of the whole path, so that a line of agreed values stays short and
/// different paths still differ.
fn agreed_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for &b in path.as_bytes() {
        if b.is_ascii_alphanumeric() || b"/._-+~@:".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.len() <= 200 {
        return out;
    }
    // FNV-1a: a digest to tell paths apart, not a protection.
    let h = path.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    // ASCII only, so any byte offset is a character boundary.
    format!("...{}#{h:016x}", &out[out.len() - 160..])
}

/// Reads a line made by [`Config::agreed_line`] back into (variable, value) pairs; words
/// that are not `NAME=value` are skipped.
pub fn parse_agreed_line(line: &str) -> Vec<(String, String)> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (format!("{PREFIX}{k}"), v.to_string()))
        .collect()
}

/// Where ranks disagree: one line per variable whose value is not the same on every rank
/// listed, naming each value and the ranks that have it (the most common value first).
/// `ranks[i]` holds rank `i`'s (variable, value) pairs. Only variables every rank lists are
/// compared: a rank's list ends early where the launcher's name service cut its registration
/// (MPICH keeps 255 bytes), which says nothing of the rest.
pub fn differences(ranks: &[(u32, Vec<(String, String)>)]) -> Vec<String> {
    let mut names: Vec<&str> = Vec::new();
    for (_, kv) in ranks {
        for (k, _) in kv {
            if !names.contains(&k.as_str()) {
                names.push(k);
            }
        }
    }
    names.retain(|n| ranks.iter().all(|(_, kv)| kv.iter().any(|(k, _)| k == n)));
    let mut out = Vec::new();
    for name in names {
        // value -> ranks, in first-seen order.
        let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
        for (r, kv) in ranks {
            let v = kv
                .iter()
                .find(|(k, _)| k == name)
                .map_or_else(|| "(not set)".to_string(), |(_, v)| v.clone());
            match groups.iter_mut().find(|(gv, _)| *gv == v) {
                Some((_, rs)) => rs.push(*r),
                None => groups.push((v, vec![*r])),
            }
        }
        if groups.len() < 2 {
            continue;
        }
        groups.sort_by_key(|g| std::cmp::Reverse(g.1.len()));
        let parts: Vec<String> = groups
            .iter()
            .map(|(v, rs)| format!("{v} on {}", rank_list(rs)))
            .collect();
        out.push(format!("{name}: {}", parts.join("; ")));
    }
    out
}

/// "rank 3", "ranks 0-2, 5": ascending, runs collapsed.
pub fn rank_list(ranks: &[u32]) -> String {
    let mut rs = ranks.to_vec();
    rs.sort_unstable();
    rs.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < rs.len() {
        let mut j = i;
        while j + 1 < rs.len() && rs[j + 1] == rs[j] + 1 {
            j += 1;
        }
        parts.push(match j - i {
            0 => rs[i].to_string(),
            1 => format!("{}, {}", rs[i], rs[j]),
            _ => format!("{}-{}", rs[i], rs[j]),
        });
        i = j + 1;
    }
    format!(
        "{} {}",
        if rs.len() == 1 { "rank" } else { "ranks" },
        parts.join(", ")
    )
}

// The canonical spellings of agreed values, named by the table's rows.

pub(super) fn on_off(b: &bool) -> String {
    if *b { "1" } else { "0" }.to_string()
}

pub(super) fn plain<T: ToString>(t: &T) -> String {
    t.to_string()
}

pub(super) fn sync(s: &SyncAlgo) -> String {
    match s {
        SyncAlgo::Tree => "tree",
        SyncAlgo::Linear => "linear",
    }
    .to_string()
}

pub(super) fn topo(t: &Topo) -> String {
    match t {
        Topo::Auto => "auto",
        Topo::Flat => "flat",
        Topo::Leaders => "leaders",
    }
    .to_string()
}

pub(super) fn min_bytes(m: &MinBytes) -> String {
    match m {
        MinBytes::Auto => "auto".to_string(),
        MinBytes::Fixed(n) => n.to_string(),
    }
}

pub(super) fn frag_bytes(f: &Option<usize>) -> String {
    f.map_or_else(|| "auto".to_string(), |n| n.to_string())
}

pub(super) fn group(&(g, gp): &(Ipv4Addr, u8)) -> String {
    format!("{g}/{gp}")
}

pub(super) fn ports(&(lo, hi): &(u16, u16)) -> String {
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}-{hi}")
    }
}

pub(super) fn route(r: &Route) -> String {
    match r {
        Route::Dests => "dests",
        Route::Table => "table",
    }
    .to_string()
}

/// Whether the communicator's engine sets up a multicast group is collective; the choice per
/// multicast is the root's, and receivers take either.
pub(super) fn imcast_transport(t: &ImcastTransport) -> String {
    match t {
        ImcastTransport::P2p => "p2p",
        ImcastTransport::Ip | ImcastTransport::Auto => "ip/auto",
    }
    .to_string()
}

pub(super) fn topo_file(p: &Option<String>) -> String {
    p.as_deref()
        .map_or_else(|| "(unset)".to_string(), agreed_path)
}
