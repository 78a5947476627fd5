//! LogGOPSim's binary schedules, the files its `txt2bin` writes from LogGOPSim text and its
//! simulator maps into memory: read-only here, into the same `RankProgram`s the text gives.
//!
//! The layout, little-endian and packed (from the writer, LogGOPSim's `Parser.hpp`
//! `serialize_mmap`): a `u64` magic cookie 4223 (2342 marks a file a `--save-mem` run has
//! consumed); then, at what LogGOPSim calls the mapping start (byte 8), a `u32` rank count, the
//! largest `cpu` and `nic` numbers (`u8` each) and per rank a `u64` start and end of its
//! section, both counted from byte 8. A rank's section: `u32` action count, `u32` count of
//! independent actions and their indices (`u32` each); then per action 39 bytes: `u32` count
//! of prerequisites, `u8` type (1 send, 2 recv, 3 calc), `u32` peer, `u64` size (bytes, or ns
//! for a calc), `u32` tag, `u8` cpu, `u8` nic, `u32` count and `u32` first index of the
//! actions that require it, and the same for the actions that irequire it; then the list of
//! those indices (`u32` each) that the first indices point into. An action's index is its
//! place in the text, so the actions come back in the text's order.

use super::{Dialect, Hint, Program, RankProgram, DEFAULT_BUFFER};
use crate::sched::{BufRef, Builder, Op, SCRATCH_SLOT};

/// The first 8 bytes of a schedule txt2bin wrote.
pub const MAGIC: [u8; 8] = 4223u64.to_le_bytes();
/// The first 8 bytes of a schedule that LogGOPSim's `--save-mem` consumed.
pub const MAGIC_USED: [u8; 8] = 2342u64.to_le_bytes();

/// Bytes of one action's record.
const NODE: usize = 39;

fn u8_at(b: &[u8], at: usize) -> Result<u8, String> {
    b.get(at)
        .copied()
        .ok_or_else(|| format!("truncated: byte {at} is past the end ({} bytes)", b.len()))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, String> {
    at.checked_add(4)
        .and_then(|end| b.get(at..end))
        .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
        .ok_or_else(|| {
            format!(
                "truncated: bytes {at}.. are past the end ({} bytes)",
                b.len()
            )
        })
}

fn u64_at(b: &[u8], at: usize) -> Result<u64, String> {
    at.checked_add(8)
        .and_then(|end| b.get(at..end))
        .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| {
            format!(
                "truncated: bytes {at}.. are past the end ({} bytes)",
                b.len()
            )
        })
}

/// Whether `bytes` start as a LogGOPSim binary schedule (or a consumed one, which `load_each`
/// refuses with the reason).
pub fn is_lgs_binary(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC) || bytes.starts_with(&MAGIC_USED)
}

/// Reads every rank in order and hands it to `each` (which may drop it). Returns the rank
/// count. Errors say what is wrong and where (rank, action, byte).
pub fn load_each(
    bytes: &[u8],
    mut each: impl FnMut(u32, RankProgram) -> Result<(), String>,
) -> Result<u32, String> {
    if bytes.starts_with(&MAGIC_USED) {
        return Err(
            "a LogGOPSim schedule that a --save-mem run consumed (its magic \
                    cookie is 2342); convert the text again with txt2bin"
                .into(),
        );
    }
    if !bytes.starts_with(&MAGIC) {
        return Err("not a LogGOPSim binary schedule (no magic cookie 4223)".into());
    }
    let base = 8usize;
    let b = bytes;
    let n = u32_at(b, base)?;
    let table = base + 6;
    // Every rank needs 16 bytes of table: a count the file cannot hold is refused before
    // anything is allocated for it.
    if (n as usize).saturating_mul(16) > b.len() {
        return Err(format!(
            "{n} ranks do not fit in a file of {} bytes",
            b.len()
        ));
    }
    for r in 0..n {
        let start = u64_at(b, table + 16 * r as usize)?;
        let end = u64_at(b, table + 16 * r as usize + 8)?;
        let (start, end) = (start as usize, end as usize);
        let sec = base
            .checked_add(start)
            .filter(|_| start <= end)
            .and_then(|s| Some(s..base.checked_add(end)?))
            .and_then(|range| b.get(range))
            .ok_or_else(|| {
                format!(
                    "rank {r}: its section {start}..{end} is not within the file ({} bytes)",
                    b.len()
                )
            })?;
        let rp = rank(sec, n).map_err(|m| format!("rank {r}: {m}"))?;
        each(r, rp).map_err(|m| format!("rank {r}: {m}"))?;
    }
    Ok(n)
}

/// One rank's section.
fn rank(s: &[u8], num_ranks: u32) -> Result<RankProgram, String> {
    let count = u32_at(s, 0)? as usize;
    let roots = u32_at(s, 4)? as usize;
    let nodes = 8usize.saturating_add(roots.saturating_mul(4));
    let apdx = nodes.saturating_add(count.saturating_mul(NODE));
    if apdx > s.len() {
        return Err(format!(
            "{count} actions do not fit in its {} bytes",
            s.len()
        ));
    }
    let mut b = Builder::new();
    let mut hints = Vec::with_capacity(count);
    let mut incoming = vec![0u32; count];
    let mut want = Vec::with_capacity(count);
    let dependents = |first: u32, k: u32| -> Result<Vec<u32>, String> {
        (0..k as usize)
            .map(|i| {
                let d = u32_at(s, apdx + 4 * (first as usize + i))?;
                if d as usize >= count {
                    return Err(format!("a dependency names action {d} of {count}"));
                }
                Ok(d)
            })
            .collect()
    };
    let mut edges = Vec::new();
    for i in 0..count {
        let at = nodes + NODE * i;
        let prereqs = u32_at(s, at)?;
        let kind = u8_at(s, at + 4)?;
        let peer = u32_at(s, at + 5)?;
        let size = u64_at(s, at + 9)?;
        let tag = u32_at(s, at + 17)?;
        let hint = Hint {
            cpu: u8_at(s, at + 21)?,
            nic: u8_at(s, at + 22)?,
        };
        let buf = BufRef {
            slot: SCRATCH_SLOT,
            offset: 0,
            len: usize::try_from(size).map_err(|_| format!("action {i}: size {size}"))?,
        };
        let op = match kind {
            1 | 2 if peer >= num_ranks && !(kind == 2 && peer == crate::sched::ANY_PEER) => {
                return Err(format!(
                    "action {i} names rank {peer}, but the schedule has {num_ranks}"
                ))
            }
            1 => Op::Send { peer, tag, buf },
            2 => Op::Recv { peer, tag, buf },
            3 => Op::Calc { nanos: size },
            t => return Err(format!("action {i} has type {t} (1 send, 2 recv, 3 calc)")),
        };
        b.add(op);
        hints.push(hint);
        want.push(prereqs);
        for (k_at, irequ) in [(at + 23, false), (at + 31, true)] {
            let k = u32_at(s, k_at)?;
            let first = u32_at(s, k_at + 4)?;
            for d in dependents(first, k)? {
                incoming[d as usize] += 1;
                edges.push((i as u32, d, irequ));
            }
        }
    }
    if let Some(i) = (0..count).find(|&i| incoming[i] != want[i]) {
        return Err(format!(
            "action {i} counts {} prerequisites, but {} actions name it",
            want[i], incoming[i]
        ));
    }
    for (first, then, irequ) in edges {
        if irequ {
            b.irequ(first, then);
        } else {
            b.requ(first, then);
        }
    }
    let schedule = b.build().map_err(|e| e.to_string())?;
    let n = schedule.len();
    Ok(RankProgram {
        schedule,
        labels: (1..=n).map(|i| Some(format!("l{i}"))).collect(),
        hints,
    })
}

/// The whole program (for `goal` commands and tests; the simulator uses `load_each`).
pub fn load(bytes: &[u8]) -> Result<Program, String> {
    let mut ranks = Vec::new();
    load_each(bytes, |_, rp| {
        ranks.push(rp);
        Ok(())
    })?;
    Ok(Program {
        dialect: Dialect::LogGopSim,
        local_view: false,
        buffers: vec![DEFAULT_BUFFER.to_string()],
        ranks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{simulate, Options, Params, RecvCpu};

    /// `txt2bin -i irq.goal -o irq.bin` (LogGOPSim 76451de) of `IRQ_TEXT`, byte for byte.
    const IRQ_BIN: [u8; 277] = [
        0x7f, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x01, 0x26,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xaf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xaf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0d, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
        0x00, 0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
        0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,
        0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x02, 0xff, 0xff, 0xff, 0xff, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    const IRQ_TEXT: &str = "num_ranks 2

rank 0 {
l1: send 8b to 1 tag 5
l2: calc 100 cpu 1
l2 irequires l1
l3: send 8b to 1 tag 6 nic 1
l3 requires l2
}

rank 1 {
l1: recv 8b from 0 tag 5
l2: recv 8b from -1 tag 6
}
";

    #[test]
    fn reads_what_txt2bin_wrote_as_the_text_reads() {
        let bin = load(&IRQ_BIN).unwrap_or_else(|e| panic!("{e}"));
        let text = crate::goal::lgs::parse(IRQ_TEXT.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"))
            .program;
        assert_eq!(bin.ranks, text.ranks);
        // LogGOPSim 76451de, `LogGOPSim -f irq.bin`: Host 0: 3000, Host 1: 7084, which
        // mpicast gives with LogGOPSim's receiver-CPU rule. Under the model's rule rank 1's
        // CPU is free at 5500 (not 5542, when the first message's bytes are in), when the
        // second message arrives: in at 5500 + 1500 + 7·6 = 7042.
        let lgs = Params {
            recv_cpu: RecvCpu::LogGOPSim,
            ..Params::default()
        };
        let o = simulate(&bin, &lgs, Options::default()).unwrap();
        assert_eq!(o.end, [3000, 7084]);
        let o = simulate(&bin, &Params::default(), Options::default()).unwrap();
        assert_eq!(o.end, [3000, 7042]);
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        let err = |b: &[u8]| load(b).unwrap_err();
        let mut used = IRQ_BIN;
        used[..8].copy_from_slice(&MAGIC_USED);
        assert!(err(&used).contains("--save-mem"), "{}", err(&used));
        assert!(err(b"num_ranks 2").contains("not a LogGOPSim binary"));
        // Cut anywhere inside the ranks' sections: an error, never a panic.
        for cut in 8..IRQ_BIN.len() - 2 {
            assert!(load(&IRQ_BIN[..cut]).is_err(), "cut at {cut}");
        }
        // Rank 0's section starts at 8 + 38 = 46 (3 actions, 1 independent: action 0); its
        // first action's record at 58, the type at 62. Made a type 9:
        let mut bad = IRQ_BIN;
        assert_eq!(bad[62], 1);
        bad[62] = 9;
        assert!(err(&bad).contains("type 9"), "{}", err(&bad));
        // Its prerequisite count made 1: no action names it.
        let mut bad = IRQ_BIN;
        assert_eq!(bad[58], 0);
        bad[58] = 1;
        assert!(err(&bad).contains("prerequisites"), "{}", err(&bad));
        // A rank count far beyond the file.
        let mut bad = IRQ_BIN;
        bad[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(err(&bad).contains("do not fit"), "{}", err(&bad));
    }
}
