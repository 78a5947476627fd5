//! wire: the sans-IO protocols of mpicast on the wire: bytes and virtual time in, bytes to send
//! and deadlines out. Nothing here reads a clock, touches a socket or calls MPI, so every
//! behaviour is tested deterministically (`tests.rs`, `decode_tests.rs`, each part's tests).
//!
//! The reliable multicast of one communicator (MPI_Bcast, MPI_Barrier, GOAL `mcast`):
//! - `packet`: the datagram format and its MAC; `control`: the receiver -> root messages
//!   (ack, nack, decline);
//! - `sender`, `receiver`: the root's and the receivers' state machines of one broadcast;
//! - `release`: the barrier's release datagram and its repair; `pmtu`: which datagram sizes
//!   reach every rank; `heal`: what a communicator does when multicast stops reaching some
//!   ranks mid-job (unicast repair, the switch every rank takes alike, the probes back).
//!
//! The point-to-point forwarding of the extension calls:
//! - `forward`: MPICAST_Imcast's segments and their routing hop by hop;
//! - `dbcast`: MPICAST_Dbcast's segments, recipient lists and matching with posted receives;
//! - `matching`: which posted receive takes which multicast, in MPI's matching order.
//!
//! `check`: what every decoder keeps for any input (never panics, accepts only canonical
//! bytes), shared by the property tests and the fuzz targets of `fuzz/`.

use std::fmt;

pub mod check;
pub mod control;
pub mod dbcast;
pub mod forward;
pub mod heal;
pub mod matching;
pub mod packet;
pub mod pmtu;
pub mod receiver;
pub mod release;
pub mod sender;

#[cfg(test)]
mod decode_tests;
#[cfg(test)]
mod tests;

pub use control::{Control, MAX_CONTROL_LEN, MAX_NACK_MISSING};
pub use packet::{Header, Kind, Reject, HEADER_LEN, MAC_LEN, OVERHEAD};
pub use receiver::{McastReceiver, Outcome, ReceiverStats};
pub use release::{encode_release, ReleaseWaiter, Responder};
pub use sender::{McastSender, SenderStats};

/// Virtual time in nanoseconds, supplied by the caller.
pub type Nanos = u64;

/// The per-communicator MAC key: 32 random bytes that rank 0 draws, and the 16-byte key of
/// the MAC of short datagrams derived from them (`packet`: two MACs, one key each).
#[derive(Clone, PartialEq, Eq)]
pub struct Key {
    bytes: [u8; 32],
    short: [u8; 16],
}

impl Key {
    pub fn new(bytes: [u8; 32]) -> Key {
        let derived =
            blake3::derive_key("mpicast datagram MAC, short datagrams, SipHash-2-4", &bytes);
        let mut short = [0; 16];
        short.copy_from_slice(&derived[..16]);
        Key { bytes, short }
    }

    /// The key of the MAC of long datagrams (keyed BLAKE3).
    pub fn bytes(&self) -> &[u8; 32] {
        &self.bytes
    }

    /// The key of the MAC of short datagrams (SipHash-2-4-128).
    pub fn short(&self) -> &[u8; 16] {
        &self.short
    }
}

impl fmt::Debug for Key {
    // A key never ends up in a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(..)")
    }
}

/// What every datagram of one communicator is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ctx {
    pub key: Key,
    pub job: u64,
    pub comm: u32,
}

/// Protocol tuning shared by the root and the receivers of a communicator.
#[derive(Clone, Debug)]
pub struct Params {
    /// Payload bytes per datagram (the transport derives it from the MTU minus headers).
    pub frag_payload: usize,
    /// Max fragments beyond the slowest receiver's cumulative ack (flow control).
    pub window_frags: u32,
    /// First NACK after this much time without progress.
    pub nack_initial: Nanos,
    /// Cap of the exponential NACK/probe backoff.
    pub nack_max: Nanos,
    /// No progress for this long means `stalled()`; the transport aborts.
    pub stall_timeout: Nanos,
}

impl Params {
    pub const DEFAULT_NACK_INITIAL: Nanos = 2_000_000;
    pub const DEFAULT_NACK_MAX: Nanos = 200_000_000;

    pub fn new(frag_payload: usize, window_frags: u32, stall_timeout: Nanos) -> Params {
        Params {
            frag_payload,
            window_frags,
            nack_initial: Self::DEFAULT_NACK_INITIAL,
            nack_max: Self::DEFAULT_NACK_MAX,
            stall_timeout,
        }
    }

    // Zero would divide by zero or deadlock the window; the state machines use these instead of
    // the raw fields so a misconfigured transport degrades instead of panicking.
    pub(crate) fn frag(&self) -> usize {
        self.frag_payload.max(1)
    }

    pub(crate) fn window(&self) -> u32 {
        self.window_frags.max(1)
    }

    pub(crate) fn nack_initial(&self) -> Nanos {
        self.nack_initial.max(1)
    }

    pub(crate) fn nack_max(&self) -> Nanos {
        self.nack_max.max(self.nack_initial())
    }

    /// Number of fragments of a `total_len`-byte message. An empty message is one empty
    /// fragment: its receivers still learn that it was sent (a GOAL `mcast` of 0 bytes
    /// orders like a 0-byte send).
    pub fn nfrags(&self, total_len: usize) -> u32 {
        nfrags(total_len, self.frag())
    }

    /// Every fragment of a `total_len`-byte message goes out at once: the sender never
    /// waits for an acknowledgement to send the rest.
    pub fn fits_window(&self, total_len: usize) -> bool {
        self.nfrags(total_len) <= self.window()
    }
}

/// Number of `frag`-byte fragments of a `total_len`-byte message (see `Params::nfrags`).
pub fn nfrags(total_len: usize, frag: usize) -> u32 {
    let n = total_len.div_ceil(frag.max(1)).max(1);
    u32::try_from(n).expect("message has more than u32::MAX fragments")
}

/// Exponential backoff: double, but never beyond `max`.
pub(crate) fn backoff(cur: Nanos, max: Nanos) -> Nanos {
    cur.saturating_mul(2).min(max)
}

/// A sleep of `wait` cut short at the next timer `due` (if any), or None when what is left
/// is under `min` (poll instead): the waits of `McastSender::ack_wait` and
/// `McastReceiver::batch_wait`.
pub(crate) fn sleep_before(
    wait: Nanos,
    due: Option<Nanos>,
    now: Nanos,
    min: Nanos,
) -> Option<Nanos> {
    let wait = due.map_or(wait, |t| wait.min(t.saturating_sub(now)));
    (wait >= min).then_some(wait)
}

/// Growable bit set over fragment numbers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bits(Vec<u64>);

impl Bits {
    pub(crate) fn new(n: u32) -> Bits {
        Bits(vec![0; (n as usize).div_ceil(64)])
    }

    pub(crate) fn get(&self, i: u32) -> bool {
        self.0[i as usize / 64] & (1 << (i % 64)) != 0
    }

    /// Sets bit `i`; returns whether it was clear.
    pub(crate) fn set(&mut self, i: u32) -> bool {
        let w = &mut self.0[i as usize / 64];
        let m = 1 << (i % 64);
        let was_clear = *w & m == 0;
        *w |= m;
        was_clear
    }

    pub(crate) fn clear(&mut self, i: u32) {
        self.0[i as usize / 64] &= !(1 << (i % 64));
    }
}
