//! Test-only: runs every rank of a program on its own `sched::Execution` against one simulated
//! network with real bytes. Sends capture their data and deliver in per-pair FIFO order (MPI's
//! non-overtaking rule), receives match the first posted compatible receive or wait in an
//! unexpected queue, multicasts reach every other rank, `exec` applies the predefined function
//! on the rank's buffers. Events fire in a seeded random order. Besides the data, it checks
//! what the scheduler's freedom could break at run time: no action may touch bytes that a
//! running action writes (or write bytes a running action reads).

use super::Program;
use crate::sched::func::apply;
use crate::sched::testutil::Rng;
use crate::sched::{ActionId, Backend, BufRef, Execution, Op, ANY_PEER, ANY_TAG, SCRATCH_SLOT};
use std::collections::{BTreeMap, VecDeque};

/// Buffers of one rank: `slots[s]` is slot s.
pub type Buffers = Vec<Vec<u8>>;

struct Msg {
    tag: u32,
    data: Vec<u8>,
}

struct Posted {
    id: ActionId,
    peer: u32,
    tag: u32,
    buf: BufRef,
}

#[derive(Clone, Copy)]
struct Access {
    id: ActionId,
    slot: u16,
    start: usize,
    end: usize,
    write: bool,
}

struct Net<'p> {
    p: &'p Program,
    bufs: Vec<Buffers>,
    scratch: Vec<Vec<u8>>,
    /// (src, dst, multicast?) -> messages in flight, in order.
    chans: BTreeMap<(u32, u32, bool), VecDeque<Msg>>,
    posted: Vec<Vec<Posted>>,
    posted_m: Vec<Vec<Posted>>,
    unexpected: Vec<Vec<(u32, Msg)>>,
    unexpected_m: Vec<Vec<(u32, Msg)>>,
    /// Sends whose completion is still to be reported.
    sends: Vec<(u32, ActionId)>,
    completions: Vec<Vec<ActionId>>,
    running: Vec<Vec<Access>>,
    errors: Vec<String>,
}

impl Net<'_> {
    fn region(&mut self, rank: u32, b: &BufRef) -> Result<&mut [u8], String> {
        let v = if b.slot == SCRATCH_SLOT {
            let s = &mut self.scratch[rank as usize];
            if s.len() < b.len {
                s.resize(b.len, 0);
            }
            s
        } else {
            self.bufs[rank as usize]
                .get_mut(b.slot as usize)
                .ok_or_else(|| format!("rank {rank}: slot {} not bound", b.slot))?
        };
        v.get_mut(b.offset..b.offset + b.len)
            .ok_or_else(|| format!("rank {rank}: {b:?} outside the buffer"))
    }

    fn touch(&mut self, rank: u32, id: ActionId, accesses: &[(BufRef, bool)], keep: bool) {
        for &(b, write) in accesses {
            if b.slot == SCRATCH_SLOT || b.len == 0 {
                continue;
            }
            let (start, end) = (b.offset, b.offset + b.len);
            for a in &self.running[rank as usize] {
                if a.id != id
                    && a.slot == b.slot
                    && a.start < end
                    && start < a.end
                    && (a.write || write)
                {
                    self.errors.push(format!(
                        "rank {rank}: action {id} touches bytes {start}..{end} of slot {} while \
                         action {} {} them",
                        b.slot,
                        a.id,
                        if a.write { "writes" } else { "reads" }
                    ));
                }
            }
            if keep {
                self.running[rank as usize].push(Access {
                    id,
                    slot: b.slot,
                    start,
                    end,
                    write,
                });
            }
        }
    }

    fn complete(&mut self, rank: u32, id: ActionId) {
        self.running[rank as usize].retain(|a| a.id != id);
        self.completions[rank as usize].push(id);
    }

    fn fill(&mut self, rank: u32, post: &Posted, from: u32, msg: Msg) {
        if msg.data.len() > post.buf.len {
            self.errors.push(format!(
                "rank {rank}: message of {} bytes from {from} into a receive of {}",
                msg.data.len(),
                post.buf.len
            ));
            return;
        }
        match self.region(rank, &post.buf) {
            Ok(r) => r[..msg.data.len()].copy_from_slice(&msg.data),
            Err(e) => self.errors.push(e),
        }
        self.complete(rank, post.id);
    }

    fn deliver(&mut self, key: (u32, u32, bool)) {
        let (src, dst, mcast) = key;
        let msg = self
            .chans
            .get_mut(&key)
            .and_then(VecDeque::pop_front)
            .expect("non-empty channel");
        let posted = if mcast {
            &mut self.posted_m[dst as usize]
        } else {
            &mut self.posted[dst as usize]
        };
        let hit = posted.iter().position(|p| {
            (p.peer == ANY_PEER || p.peer == src) && (mcast || p.tag == ANY_TAG || p.tag == msg.tag)
        });
        match hit {
            Some(i) => {
                let post = posted.remove(i);
                self.fill(dst, &post, src, msg);
            }
            None if mcast => self.unexpected_m[dst as usize].push((src, msg)),
            None => self.unexpected[dst as usize].push((src, msg)),
        }
    }
}

struct RankView<'n, 'p> {
    rank: u32,
    net: &'n mut Net<'p>,
}

impl Backend for RankView<'_, '_> {
    type Error = String;

    fn start(&mut self, id: ActionId, op: &Op, done: &mut Vec<ActionId>) -> Result<(), String> {
        let (rank, net) = (self.rank, &mut *self.net);
        match *op {
            Op::Send { peer, tag, buf } => {
                net.touch(rank, id, &[(buf, false)], true);
                let data = net.region(rank, &buf)?.to_vec();
                net.chans
                    .entry((rank, peer, false))
                    .or_default()
                    .push_back(Msg { tag, data });
                net.sends.push((rank, id));
            }
            Op::McastSend { buf } => {
                net.touch(rank, id, &[(buf, false)], true);
                let data = net.region(rank, &buf)?.to_vec();
                for q in (0..net.p.num_ranks()).filter(|&q| q != rank) {
                    net.chans
                        .entry((rank, q, true))
                        .or_default()
                        .push_back(Msg {
                            tag: 0,
                            data: data.clone(),
                        });
                }
                net.sends.push((rank, id));
            }
            Op::Recv { .. } | Op::McastRecv { .. } => {
                let (peer, tag, buf, mcast) = match *op {
                    Op::Recv { peer, tag, buf } => (peer, tag, buf, false),
                    Op::McastRecv { root, buf } => (root, 0, buf, true),
                    _ => unreachable!(),
                };
                net.touch(rank, id, &[(buf, true)], true);
                let post = Posted { id, peer, tag, buf };
                let queue = if mcast {
                    &mut net.unexpected_m[rank as usize]
                } else {
                    &mut net.unexpected[rank as usize]
                };
                let hit = queue.iter().position(|(src, m)| {
                    (peer == ANY_PEER || peer == *src) && (mcast || tag == ANY_TAG || tag == m.tag)
                });
                match hit {
                    Some(i) => {
                        let (src, msg) = queue.remove(i);
                        net.fill(rank, &post, src, msg);
                    }
                    None if mcast => net.posted_m[rank as usize].push(post),
                    None => net.posted[rank as usize].push(post),
                }
            }
            Op::Exec { func, src, dst } => {
                net.touch(rank, id, &[(src, false), (dst, true)], false);
                let input = net.region(rank, &src)?.to_vec();
                apply(func, &input, net.region(rank, &dst)?).map_err(|e| e.to_string())?;
                done.push(id);
            }
            Op::Calc { .. } => done.push(id),
        }
        Ok(())
    }

    fn progress(&mut self, done: &mut Vec<ActionId>) -> Result<(), String> {
        done.append(&mut self.net.completions[self.rank as usize]);
        Ok(())
    }
}

/// Runs `p` with rank r starting from `bufs[r]`; returns the buffers at the end, or what went
/// wrong (a deadlock, a hazard, a bad buffer).
pub fn run(p: &Program, bufs: Vec<Buffers>, seed: u64) -> Result<Vec<Buffers>, String> {
    let n = p.num_ranks() as usize;
    assert_eq!(bufs.len(), n, "one set of buffers per rank");
    let mut net = Net {
        p,
        bufs,
        scratch: vec![Vec::new(); n],
        chans: BTreeMap::new(),
        posted: (0..n).map(|_| Vec::new()).collect(),
        posted_m: (0..n).map(|_| Vec::new()).collect(),
        unexpected: (0..n).map(|_| Vec::new()).collect(),
        unexpected_m: (0..n).map(|_| Vec::new()).collect(),
        sends: Vec::new(),
        completions: vec![Vec::new(); n],
        running: vec![Vec::new(); n],
        errors: Vec::new(),
    };
    let mut execs: Vec<Execution> = p
        .ranks
        .iter()
        .map(|r| Execution::new(&r.schedule))
        .collect();
    let mut rng = Rng::new(seed);
    let mut finished = vec![false; n];
    loop {
        for (r, e) in execs.iter_mut().enumerate() {
            if !finished[r] {
                finished[r] = e.test(&mut RankView {
                    rank: r as u32,
                    net: &mut net,
                })?;
            }
        }
        if let Some(e) = net.errors.first() {
            return Err(format!("seed {seed}: {e}"));
        }
        if finished.iter().all(|&f| f) {
            break;
        }
        let live: Vec<(u32, u32, bool)> = net
            .chans
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(&k, _)| k)
            .collect();
        let choices = live.len() + net.sends.len();
        if choices == 0 && net.completions.iter().any(|c| !c.is_empty()) {
            // Completions reported while starting actions: the next round of tests sees them.
            continue;
        }
        if choices == 0 {
            let stuck: Vec<String> = execs
                .iter()
                .enumerate()
                .filter(|(r, _)| !finished[*r])
                .map(|(r, e)| {
                    format!(
                        "rank {r} ({} of {} done)",
                        e.completed(),
                        e.schedule().len()
                    )
                })
                .collect();
            return Err(format!("seed {seed}: deadlock: {}", stuck.join(", ")));
        }
        let k = rng.below(choices);
        if k < live.len() {
            net.deliver(live[k]);
        } else {
            let (r, id) = net.sends.swap_remove(k - live.len());
            net.complete(r, id);
        }
    }
    if let Some(e) = net.errors.first() {
        return Err(format!("seed {seed}: {e}"));
    }
    Ok(net.bufs)
}
