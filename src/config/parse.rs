//! The parsers of setting values: the grammar of a value (sizes such as `64k`, port ranges,
//! subnets, words) and, for each kind of setting, what it accepts and the text of what was
//! expected when it does not. A table row names its parser (`table`); the environment, the
//! `MPICAST_CONFIG` file and the `MPI_Info` hints all parse through it.
//!
//! A setting's parser is `fn(value, config) -> Result<T, expected>`: `value` is trimmed and not
//! empty, `config` holds the settings parsed so far (only `MPICAST_TOPO_ID` reads one, the
//! base), and `expected` is the end of the error message ("expected an integer 0..=255").

use super::values::mask;
use super::{Config, IfaceSpec, MinBytes, Progress, SyncAlgo, Topo, TopoPick, MMCAST_ALGOS};
use super::{DbcastTree, ImcastTransport};
use crate::algo::prefix::{Route, Shape};
use std::net::Ipv4Addr;

/// A parsed value, or what would have been accepted.
pub(super) type Parsed<T> = Result<T, String>;

pub(super) const EXPECT_BOOL: &str = "one of 0, 1, true, false, yes, no, on, off";
const EXPECT_SYNC: &str = "tree or linear";
macro_rules! expect_size {
    () => {
        "a size in bytes, optionally with a binary suffix k, KiB, m, MiB, g or GiB (e.g. 1500, 64k, 8MiB)"
    };
}
const EXPECT_SIZE: &str = expect_size!();
const EXPECT_MIN_BYTES: &str = concat!("auto, or ", expect_size!());
const EXPECT_MMCAST_ALGO: &str = "auto, sametree-binomial, sametree-cyclic, random-binomial, \
                                  random-cyclic, spcco or naive";

const MIN_RCVBUF: usize = 64 << 10;
// The kernel doubles the request and stores it in an int; staying at 1 GiB keeps clear of that.
const MAX_RCVBUF: usize = 1 << 30;
const FRAG_RANGE: (usize, usize) = (64, 65000);
const MIN_PORT: u16 = 1024;
const MAX_VERBOSE: u8 = 2;
const MIN_IMCAST_BUFFER: usize = 1 << 20;
const SEGMENT_RANGE: (usize, usize) = (64, 16 << 20);

// The parsers of settings, in the order of the table.

pub(super) fn boolean(v: &str, _: &Config) -> Parsed<bool> {
    parse_bool(v).ok_or_else(|| EXPECT_BOOL.into())
}

pub(super) fn iface(v: &str, _: &Config) -> Parsed<Option<IfaceSpec>> {
    parse_iface(v).map(Some).ok_or_else(|| {
        "an interface name (at most 15 characters, no spaces or '/'), \
         an IPv4 address, or an IPv4 subnet a.b.c.d/n with n <= 32"
            .into()
    })
}

pub(super) fn ttl(v: &str, _: &Config) -> Parsed<u8> {
    parse_uint::<u8>(v).ok_or_else(|| "an integer 0..=255".into())
}

pub(super) fn group(v: &str, _: &Config) -> Parsed<(Ipv4Addr, u8)> {
    parse_group(v).ok_or_else(|| {
        "an IPv4 multicast subnet a.b.c.d/n inside 224.0.0.0/4 with no host bits set \
         (write /32 for a single group)"
            .into()
    })
}

pub(super) fn ports(v: &str, _: &Config) -> Parsed<(u16, u16)> {
    parse_ports(v).ok_or_else(|| {
        format!("a port N or an inclusive range N-M with {MIN_PORT} <= N <= M <= 65535")
    })
}

pub(super) fn sync(v: &str, _: &Config) -> Parsed<SyncAlgo> {
    parse_sync(v).ok_or_else(|| EXPECT_SYNC.into())
}

pub(super) fn topo(v: &str, _: &Config) -> Parsed<Topo> {
    let words = [
        ("auto", Topo::Auto),
        ("flat", Topo::Flat),
        ("leaders", Topo::Leaders),
    ];
    word(v, &words, "auto, flat or leaders")
}

pub(super) fn min_bytes(v: &str, _: &Config) -> Parsed<MinBytes> {
    parse_min_bytes(v).ok_or_else(|| EXPECT_MIN_BYTES.into())
}

pub(super) fn frag_bytes(v: &str, _: &Config) -> Parsed<Option<usize>> {
    let (lo, hi) = FRAG_RANGE;
    if v.eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    parse_size(v)
        .filter(|n| (lo..=hi).contains(n))
        .map(Some)
        .ok_or_else(|| format!("a datagram payload size {lo}..={hi} bytes, or auto"))
}

pub(super) fn rcvbuf(v: &str, _: &Config) -> Parsed<usize> {
    parse_size(v)
        .filter(|n| (MIN_RCVBUF..=MAX_RCVBUF).contains(n))
        .ok_or_else(|| "a size from 64KiB to 1GiB (binary suffixes k, KiB, m, MiB, g, GiB)".into())
}

pub(super) fn millis(v: &str, _: &Config) -> Parsed<u64> {
    parse_uint::<u64>(v)
        .filter(|&n| n > 0)
        .ok_or_else(|| "an integer number of milliseconds > 0".into())
}

pub(super) fn verbose(v: &str, _: &Config) -> Parsed<u8> {
    parse_uint::<u8>(v)
        .filter(|&n| n <= MAX_VERBOSE)
        .ok_or_else(|| "an integer 0..=2".into())
}

pub(super) fn progress(v: &str, _: &Config) -> Parsed<Progress> {
    let words = [
        ("poll", Progress::Poll),
        ("thread", Progress::Thread),
        ("auto", Progress::Auto),
    ];
    word(v, &words, "auto, poll or thread")
}

pub(super) fn size(v: &str, _: &Config) -> Parsed<usize> {
    parse_size(v).ok_or_else(|| EXPECT_SIZE.into())
}

pub(super) fn actions(v: &str, _: &Config) -> Parsed<usize> {
    parse_uint::<usize>(v).ok_or_else(|| "an integer number of actions".into())
}

/// Checked against `MPICAST_TOPO_BASE`, which the table parses first.
pub(super) fn topo_id(v: &str, c: &Config) -> Parsed<Option<String>> {
    match check_topo_id(c.topo_base, v) {
        Ok(()) => Ok(Some(v.to_string())),
        Err(e) => Err(format!(
            "a topology ID in base {} (MPICAST_TOPO_BASE): {}, each below the base, \
             at most 64 bits ({e})",
            c.topo_base,
            if c.topo_base <= 16 {
                "one hex digit per character (01a3) or dotted decimal digits \
                 (0.1.10.3)"
            } else {
                "dotted decimal digits (0.1.10.3)"
            }
        )),
    }
}

/// A path, as written (trimmed); read where it is used.
pub(super) fn path(v: &str, _: &Config) -> Parsed<Option<String>> {
    Ok(Some(v.to_string()))
}

pub(super) fn topo_base(v: &str, _: &Config) -> Parsed<u32> {
    parse_uint::<u32>(v)
        .filter(|&b| Shape::new(b, 1).is_ok())
        .ok_or_else(|| "a power of two from 2 to 256 (2, 4, 8, 16, 32, 64, 128 or 256)".into())
}

pub(super) fn topo_pick(v: &str, _: &Config) -> Parsed<TopoPick> {
    parse_topo_pick(v).ok_or_else(|| {
        "nearest, random, or random:SEED with SEED a decimal integer below 2^64".into()
    })
}

pub(super) fn imcast_route(v: &str, _: &Config) -> Parsed<Route> {
    let words = [("dests", Route::Dests), ("table", Route::Table)];
    word(v, &words, "dests or table")
}

/// Lower case, one of [`MMCAST_ALGOS`].
pub(super) fn mmcast_algo(v: &str, _: &Config) -> Parsed<String> {
    let v = v.to_ascii_lowercase();
    if !MMCAST_ALGOS.contains(&v.as_str()) {
        return Err(EXPECT_MMCAST_ALGO.into());
    }
    Ok(v)
}

pub(super) fn segment_bytes(v: &str, _: &Config) -> Parsed<usize> {
    let (lo, hi) = SEGMENT_RANGE;
    parse_size(v)
        .filter(|n| (lo..=hi).contains(n))
        .ok_or_else(|| "a size from 64 bytes to 16MiB (binary suffixes k, KiB, m, MiB)".into())
}

pub(super) fn imcast_buffer(v: &str, _: &Config) -> Parsed<usize> {
    parse_size(v)
        .filter(|&n| n >= MIN_IMCAST_BUFFER)
        .ok_or_else(|| "a size of at least 1MiB".into())
}

pub(super) fn imcast_transport(v: &str, _: &Config) -> Parsed<ImcastTransport> {
    let words = [
        ("p2p", ImcastTransport::P2p),
        ("ip", ImcastTransport::Ip),
        ("auto", ImcastTransport::Auto),
    ];
    word(v, &words, "p2p, ip or auto")
}

/// Note: Rust's own integer parsing, which takes a leading `+`.
pub(super) fn percent(v: &str, _: &Config) -> Parsed<u32> {
    v.parse::<u32>()
        .ok()
        .filter(|p| (1..=100).contains(p))
        .ok_or_else(|| "a percentage, 1 to 100".into())
}

pub(super) fn imcast_ip_bytes(v: &str, _: &Config) -> Parsed<usize> {
    parse_size(v).ok_or_else(|| "a size".into())
}

pub(super) fn dbcast_tree(v: &str, _: &Config) -> Parsed<DbcastTree> {
    let words = [
        ("binomial", DbcastTree::Binomial),
        ("topo", DbcastTree::Topo),
    ];
    word(v, &words, "binomial or topo")
}

pub(super) fn dbcast_chain_bytes(v: &str, _: &Config) -> Parsed<Option<usize>> {
    if v.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    parse_size(v)
        .map(Some)
        .ok_or_else(|| "a size (binary suffixes k, KiB, m, MiB) or off".into())
}

// The grammar of values.

/// One of `words`, in any letter case.
fn word<T: Copy>(v: &str, words: &[(&str, T)], expected: &str) -> Parsed<T> {
    let v = v.to_ascii_lowercase();
    words
        .iter()
        .find(|(w, _)| *w == v)
        .map(|&(_, t)| t)
        .ok_or_else(|| expected.to_string())
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn parse_min_bytes(v: &str) -> Option<MinBytes> {
    if v.trim().eq_ignore_ascii_case("auto") {
        Some(MinBytes::Auto)
    } else {
        parse_size(v).map(MinBytes::Fixed)
    }
}

fn parse_topo_pick(v: &str) -> Option<TopoPick> {
    let v = v.to_ascii_lowercase();
    match v.as_str() {
        "nearest" => Some(TopoPick::Nearest),
        "random" => Some(TopoPick::Random { seed: None }),
        _ => {
            let seed = v.strip_prefix("random:")?.trim();
            Some(TopoPick::Random {
                seed: Some(parse_uint::<u64>(seed)?),
            })
        }
    }
}

/// Checks a topology ID's text in base `base`: as many digits as it has (dotted decimal, or in
/// a base up to 16 one hex digit per character), each below the base, at most 64 bits.
fn check_topo_id(base: u32, text: &str) -> Result<(), crate::algo::prefix::IdError> {
    let digits = if text.contains('.') || base > 16 {
        text.split('.').count()
    } else {
        text.chars().count()
    };
    Shape::new(base, u32::try_from(digits).unwrap_or(u32::MAX))?
        .parse(text)
        .map(|_| ())
}

fn parse_sync(v: &str) -> Option<SyncAlgo> {
    match v.to_ascii_lowercase().as_str() {
        "tree" => Some(SyncAlgo::Tree),
        "linear" => Some(SyncAlgo::Linear),
        _ => None,
    }
}

/// Plain decimal digits only: Rust's `from_str` would also take a leading `+`.
fn parse_uint<T: std::str::FromStr>(v: &str) -> Option<T> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

/// A decimal integer with an optional binary suffix (`k`/`KiB`, `m`/`MiB`, `g`/`GiB`).
fn parse_size(v: &str) -> Option<usize> {
    let digits = v.bytes().take_while(u8::is_ascii_digit).count();
    let n: usize = parse_uint(&v[..digits])?;
    let mult: usize = match v[digits..].trim_start().to_ascii_lowercase().as_str() {
        "" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

fn parse_ports(v: &str) -> Option<(u16, u16)> {
    let (lo, hi) = match v.split_once('-') {
        Some((a, b)) => (parse_uint::<u16>(a.trim())?, parse_uint::<u16>(b.trim())?),
        None => {
            let p = parse_uint::<u16>(v)?;
            (p, p)
        }
    };
    (lo >= MIN_PORT && lo <= hi).then_some((lo, hi))
}

/// `a.b.c.d/n`, host bits returned as written (callers decide whether to clear or reject them).
fn parse_cidr(v: &str) -> Option<(Ipv4Addr, u8)> {
    let (a, p) = v.split_once('/')?;
    let addr: Ipv4Addr = a.trim().parse().ok()?;
    let p = p.trim();
    if p.len() > 2 {
        return None;
    }
    let prefix: u8 = parse_uint(p)?;
    (prefix <= 32).then_some((addr, prefix))
}

fn parse_group(v: &str) -> Option<(Ipv4Addr, u8)> {
    let (addr, prefix) = parse_cidr(v)?;
    let a = u32::from(addr);
    let host_bits = a & !mask(prefix) != 0;
    // Inside 224.0.0.0/4: the subnet is at least as narrow as /4 and starts with 1110.
    let multicast = prefix >= 4 && a >> 28 == 0xE;
    (!host_bits && multicast).then_some((addr, prefix))
}

fn parse_iface(v: &str) -> Option<IfaceSpec> {
    if v.contains('/') {
        let (addr, prefix) = parse_cidr(v)?;
        let base = Ipv4Addr::from(u32::from(addr) & mask(prefix));
        return Some(IfaceSpec::Cidr(base, prefix));
    }
    if let Ok(a) = v.parse::<Ipv4Addr>() {
        return Some(IfaceSpec::Addr(a));
    }
    // Something made of digits and dots was meant as an address; naming it an interface would
    // only give a confusing "no such interface" later.
    if v.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    // IFNAMSIZ is 16 including the NUL; names never hold whitespace or '/'.
    let ok = v.len() <= 15 && !v.bytes().any(|b| b.is_ascii_whitespace() || b == b'/');
    ok.then(|| IfaceSpec::Name(v.to_string()))
}
