//! pmtu: which datagram sizes reach every rank of a communicator's multicast group. A switch
//! or link with a smaller MTU than the hosts' (jumbo-frame hosts behind a 1500-byte switch)
//! drops the larger multicast datagrams without a word while small ones pass: a path-MTU black
//! hole. The setup probe therefore sends, besides its small probe, one probe of each size of
//! a ladder: the datagram the communicator would use, then the payloads of the common MTUs
//! below it (9000, 1500, 576 bytes); each rank reports the largest it received, and every rank
//! chooses alike from the smallest report (`choose`). Pure: sizes in, a choice out.

use super::packet::{MIN_FRAG, OVERHEAD};

/// UDP payloads of the common MTUs (9000, 1500 and 576 bytes less 28 bytes of IPv4 and UDP
/// headers), the rungs tried below the intended datagram.
pub const RUNGS: [usize; 3] = [8972, 1472, 548];

/// The smallest datagram that can carry data: the header, the MAC and `MIN_FRAG` bytes.
pub const SMALLEST: usize = OVERHEAD + MIN_FRAG;

/// The datagram sizes (UDP payloads) a probe tries, largest first: `top`, the datagram the
/// communicator would use, then each rung below it that can carry data.
pub fn ladder(top: usize) -> Vec<usize> {
    let mut v = vec![top];
    v.extend(RUNGS.iter().copied().filter(|&r| r < top && r >= SMALLEST));
    v
}

/// What the probe's reports allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Datagrams of the intended size reach every rank.
    Keep,
    /// Only datagrams up to `udp` bytes reach every rank: use that size.
    Step { udp: usize },
    /// Not even the smallest datagram that carries data reaches every rank.
    Nothing,
}

/// The choice for a probe whose largest datagram was `top` bytes, when the smallest of the
/// ranks' reports (the largest probe each received) is `seen_min` bytes.
pub fn choose(top: usize, seen_min: usize) -> Choice {
    if seen_min >= top {
        Choice::Keep
    } else if seen_min >= SMALLEST {
        Choice::Step { udp: seen_min }
    } else {
        Choice::Nothing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_goes_down_through_the_common_mtus() {
        assert_eq!(ladder(65507), vec![65507, 8972, 1472, 548]);
        assert_eq!(ladder(8972), vec![8972, 1472, 548]);
        assert_eq!(ladder(1472), vec![1472, 548]);
        assert_eq!(ladder(1000), vec![1000, 548]);
        assert_eq!(ladder(200), vec![200]);
    }

    #[test]
    fn the_choice_takes_the_largest_size_every_rank_received() {
        assert_eq!(choose(65507, 65507), Choice::Keep);
        assert_eq!(choose(8972, 1472), Choice::Step { udp: 1472 });
        assert_eq!(choose(65507, 548), Choice::Step { udp: 548 });
        // Only the small probe came (or nothing): no size carries data to everyone.
        assert_eq!(choose(65507, OVERHEAD), Choice::Nothing);
        assert_eq!(choose(1472, 0), Choice::Nothing);
        // A size in every rung's ladder is always at least the smallest that carries data.
        for top in [65507, 9000, 1472, 548, 300] {
            assert!(ladder(top)[1..].iter().all(|&s| s >= SMALLEST && s < top));
        }
    }
}
