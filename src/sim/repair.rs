//! Loss and NACK repair of the multicast channel, as the wire protocol does it (docs/sim.md,
//! "Multicast loss"): a multicast of `s` bytes is `ceil(s / mF)` datagrams; each receiver loses
//! each datagram on its own with probability `mloss`. A receiver that lost some asks the root
//! for them once the stream has passed (a gap shows itself when a later datagram arrives; a lost
//! tail only when `mnack` has passed without it), over MPI point-to-point (`o + L + o`), and the
//! root multicasts them again (`mo + mL` and `mG` per byte), where they may be lost again. The
//! receiver takes the message when its last datagram is in, so the repair rounds delay its
//! arrival; the root's CPU and NIC are not charged for the repairs (one receiver's NACK is cheap
//! next to the stream, and mpicast suppresses duplicate requests).
//!
//! The draws are pseudo-random but fixed by `mseed`, the root, the send, the receiver and the
//! round, so a run gives the same times every time and does not depend on event order.

use super::loggops::Params;

/// What the repair of one receiver's copy of a multicast cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Repair {
    /// Added to the receiver's arrival, in ns.
    pub delay: u64,
    /// Datagrams lost (counting each loss of a resent one again).
    pub lost: u64,
    /// NACK rounds.
    pub rounds: u32,
}

/// Rounds after which a receiver is taken to have everything: at a loss rate below 1 the chance
/// to need more is below `mloss^64`.
const MAX_ROUNDS: u32 = 64;

use crate::rng::mix;

/// A uniform draw in (0, 1) from a state that `next` advances.
fn uniform(state: &mut u64) -> f64 {
    *state = mix(*state);
    ((*state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// How receiver `dst` fares with the `len`-byte multicast of send `send` (a global action
/// number) from `root`.
pub fn repair(prm: &Params, root: u32, send: u64, dst: u32, len: u64) -> Repair {
    let p = prm.mcast_loss_ppm as f64 / 1e6;
    if p <= 0.0 {
        return Repair::default();
    }
    let frag = prm.mcast_frag.max(1);
    let mut missing = len.max(1).div_ceil(frag);
    let mut out = Repair::default();
    let mut state = mix(prm.mcast_seed ^ mix(root as u64 ^ mix(send ^ mix(dst as u64))));
    let log_keep = (1.0 - p).ln();
    for _ in 0..MAX_ROUNDS {
        // Losses among `missing` datagrams, found by geometric jumps between them (as many
        // draws as losses, not as datagrams).
        let (mut lost, mut tail_lost) = (0u64, false);
        let mut at = 0u64;
        loop {
            let skip = (uniform(&mut state).ln() / log_keep).floor();
            if !skip.is_finite() || skip >= (missing - at) as f64 {
                break;
            }
            at += skip as u64;
            lost += 1;
            tail_lost |= at == missing - 1;
            at += 1;
            if at >= missing {
                break;
            }
        }
        if lost == 0 {
            break;
        }
        out.lost += lost;
        out.rounds += 1;
        // Noticing: at once for a gap (a later datagram shows it), `mnack` for a lost tail.
        // Then the NACK over MPI, and the resent datagrams by multicast.
        let notice = if tail_lost { prm.mcast_nack } else { 0 };
        let bytes = (lost * frag).min(len.max(1));
        out.delay += notice
            + 2 * prm.overhead
            + prm.latency
            + prm.mcast_o()
            + prm.mcast_l()
            + prm.mcast_gb().time(bytes - 1);
        missing = lost;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lossy(ppm: u32) -> Params {
        Params {
            mcast_loss_ppm: ppm,
            ..Params::default()
        }
    }

    #[test]
    fn no_loss_costs_nothing() {
        assert_eq!(
            repair(&Params::default(), 0, 3, 1, 1 << 20),
            Repair::default()
        );
    }

    #[test]
    fn the_loss_rate_is_what_was_asked() {
        // 2000 receivers x 750 datagrams (1 MiB at 1400 bytes) at 2 %: the first round's
        // losses are 30000 on average; the draws are within a few standard deviations.
        let prm = lossy(20_000);
        let mut first = 0u64;
        let mut rounds = 0u64;
        for dst in 0..2000 {
            let r = repair(&prm, 0, 7, dst, 1 << 20);
            assert!(r.rounds >= 1, "750 datagrams at 2 % lose some");
            rounds += r.rounds as u64;
            first += r.lost;
        }
        let per = first as f64 / 2000.0;
        // Expected lost in all rounds: 750 p / (1 - p) = 15.3.
        assert!((per - 15.3).abs() < 0.6, "{per} lost per receiver");
        assert!((2000..2000 * 3).contains(&rounds), "{rounds} rounds");
    }

    #[test]
    fn one_round_worked_by_hand() {
        // Find a receiver that lost exactly one datagram, not the last, in one round: its delay
        // is 2o + L (the NACK) + mo + mL (the resend) + (1400-1) G = 3000 + 2500 + 1500 +
        // 2500 + 8394 = 17894 ns.
        let prm = lossy(100_000);
        let found = (0..1000)
            .map(|d| repair(&prm, 2, 9, d, 10 * 1400))
            .find(|r| r.rounds == 1 && r.lost == 1 && r.delay < prm.mcast_nack)
            .expect("some receiver loses exactly one datagram");
        assert_eq!(found.delay, 17894);
        // A lost tail waits mnack first.
        let tail = (0..1000)
            .map(|d| repair(&prm, 2, 9, d, 1400))
            .find(|r| r.rounds == 1)
            .expect("some receiver loses the only datagram");
        assert_eq!(
            tail.delay,
            prm.mcast_nack + 3000 + 2500 + 1500 + 2500 + 1399 * 6
        );
    }

    #[test]
    fn draws_are_fixed_by_the_seed_and_the_message() {
        let prm = lossy(50_000);
        let a: Vec<_> = (0..50).map(|d| repair(&prm, 1, 4, d, 100_000)).collect();
        let b: Vec<_> = (0..50).map(|d| repair(&prm, 1, 4, d, 100_000)).collect();
        assert_eq!(a, b);
        let other = Params {
            mcast_seed: 2,
            ..prm
        };
        let c: Vec<_> = (0..50).map(|d| repair(&other, 1, 4, d, 100_000)).collect();
        assert_ne!(a, c);
    }
}
