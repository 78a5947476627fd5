//! Programs back to text, in either dialect. Printing is deterministic and parses back to an
//! equal program (labels are invented only where a dependency needs one, and kept after), so
//! text -> binary -> text round-trips byte for byte.

use super::paper::is_keyword;
use super::{Program, RankProgram};
use crate::sched::{ActionId, BufRef, Op, ANY_PEER, ANY_TAG};
use std::collections::HashSet;
use std::fmt::Write;

/// The labels to print: the program's own, renamed where the dialect reserves the word, and
/// invented (`a<id>`, or `l<id+1>` in LogGOPSim style) where a dependency needs a name.
fn names(
    r: &RankProgram,
    reserved: &dyn Fn(&str) -> bool,
    prefix: &str,
    base: u32,
) -> Vec<Option<String>> {
    let s = &r.schedule;
    let mut needed = vec![false; s.len()];
    for (id, _) in s.actions() {
        for &d in s.dependents(id).iter().chain(s.start_dependents(id)) {
            needed[id as usize] = true;
            needed[d as usize] = true;
        }
    }
    let mut taken: HashSet<String> = HashSet::new();
    let mut out: Vec<Option<String>> = vec![None; s.len()];
    // Own labels first, so that invented ones avoid them.
    for (i, l) in r.labels.iter().enumerate() {
        if let Some(l) = l {
            let mut name = l.clone();
            while reserved(&name) || taken.contains(&name) {
                name.push('_');
            }
            taken.insert(name.clone());
            out[i] = Some(name);
        }
    }
    for i in 0..s.len() {
        if out[i].is_none() && needed[i] {
            let mut name = format!("{prefix}{}", i as u32 + base);
            while reserved(&name) || taken.contains(&name) {
                name.push('_');
            }
            taken.insert(name.clone());
            out[i] = Some(name);
        }
    }
    out
}

fn buffer(p: &Program, b: &BufRef) -> String {
    if b.slot == 0 {
        format!("{},{}", b.offset, b.len)
    } else {
        format!("{}+{},{}", p.buffer_name(b.slot), b.offset, b.len)
    }
}

/// One action in the paper's dialect, without label and `;`.
pub fn paper_action(p: &Program, op: &Op) -> String {
    let tag = |t: u32| match t {
        0 => String::new(),
        ANY_TAG => " tag any".into(),
        t => format!(" tag {t}"),
    };
    match op {
        Op::Send { peer, tag: t, buf } => format!("send {} to {peer}{}", buffer(p, buf), tag(*t)),
        Op::Recv { peer, tag: t, buf } => {
            let from = if *peer == ANY_PEER {
                "any".into()
            } else {
                peer.to_string()
            };
            format!("recv {} from {from}{}", buffer(p, buf), tag(*t))
        }
        Op::McastSend { buf } => format!("mcast {}", buffer(p, buf)),
        Op::McastRecv { root, buf } => format!("mrecv {} from {root}", buffer(p, buf)),
        Op::Exec { func, src, dst } => {
            format!("exec {func} with {} {}", buffer(p, src), buffer(p, dst))
        }
        Op::Calc { nanos } => format!("calc {nanos}"),
    }
}

fn paper_body(p: &Program, r: &RankProgram, indent: &str) -> String {
    let s = &r.schedule;
    let names = names(r, &|w| is_keyword(w), "a", 0);
    let mut out = String::new();
    for (id, op) in s.actions() {
        out.push_str(indent);
        if let Some(n) = &names[id as usize] {
            let _ = write!(out, "{n}: ");
        }
        out.push_str(&paper_action(p, op));
        let h = r.hints[id as usize];
        if h.cpu != 0 {
            let _ = write!(out, " cpu {}", h.cpu);
        }
        if h.nic != 0 {
            let _ = write!(out, " nic {}", h.nic);
        }
        out.push_str(";\n");
    }
    let name = |id: ActionId| names[id as usize].as_deref().expect("named: has an edge");
    for (id, _) in s.actions() {
        for &d in s.dependents(id) {
            let _ = writeln!(out, "{indent}requ {} -> {};", name(d), name(id));
        }
        for &d in s.start_dependents(id) {
            let _ = writeln!(out, "{indent}irequ {} -> {};", name(d), name(id));
        }
    }
    out
}

/// The program in the paper's dialect. Ranks with equal schedules share one block
/// (`rank #1, #2 { ... }`); ranks without actions get none.
pub fn to_paper(p: &Program) -> String {
    let mut out = String::new();
    if p.local_view {
        out.push_str("# GOAL, local view of one process\n");
        if let Some(r) = p.ranks.first() {
            out.push_str(&paper_body(p, r, ""));
        }
        return out;
    }
    let _ = writeln!(out, "num_ranks {};", p.ranks.len());
    let bodies: Vec<String> = p.ranks.iter().map(|r| paper_body(p, r, "  ")).collect();
    let mut done = vec![false; bodies.len()];
    for i in 0..bodies.len() {
        if done[i] || p.ranks[i].schedule.is_empty() {
            continue;
        }
        let group: Vec<usize> = (i..bodies.len())
            .filter(|&j| !done[j] && bodies[j] == bodies[i])
            .collect();
        let list: Vec<String> = group.iter().map(|j| format!("#{j}")).collect();
        let _ = write!(out, "rank {} {{\n{}}}\n", list.join(", "), bodies[i]);
        for j in group {
            done[j] = true;
        }
    }
    out
}

/// Why a program has no LogGOPSim form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotExpressible {
    pub rank: u32,
    pub action: ActionId,
    pub what: String,
}

impl std::fmt::Display for NotExpressible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rank {} action {} (`{}`) has no LogGOPSim form: the dialect knows only send, recv \
             and calc",
            self.rank, self.action, self.what
        )
    }
}

impl std::error::Error for NotExpressible {}

/// LogGOPSim's words that cannot be labels (txt2bin reads them as keywords at a line start).
fn lgs_reserved(w: &str) -> bool {
    matches!(w, "send" | "recv" | "calc" | "rank" | "num_ranks")
}

/// True when some action refers to a real buffer (which the LogGOPSim dialect cannot carry:
/// it keeps sizes only).
pub fn uses_buffers(p: &Program) -> bool {
    p.ranks.iter().any(|r| {
        r.schedule.actions().any(|(_, op)| match op {
            Op::Send { buf, .. } | Op::Recv { buf, .. } => buf.slot != crate::sched::SCRATCH_SLOT,
            _ => false,
        })
    })
}

/// The program in LogGOPSim's dialect, as its schedule generator writes it. Sizes are kept and
/// buffers dropped (a traffic replay); exec and multicast actions have no form there.
pub fn to_loggopsim(p: &Program) -> Result<String, NotExpressible> {
    let mut out = String::new();
    let _ = writeln!(out, "num_ranks {}", p.ranks.len());
    for (rank, r) in p.ranks.iter().enumerate() {
        let s = &r.schedule;
        let names = names(r, &lgs_reserved, "l", 1);
        let _ = write!(out, "\nrank {rank} {{\n");
        for (id, op) in s.actions() {
            if let Some(n) = &names[id as usize] {
                let _ = write!(out, "{n}: ");
            }
            let h = r.hints[id as usize];
            match op {
                Op::Send { peer, tag, buf } | Op::Recv { peer, tag, buf } => {
                    let (verb, dir) = match op {
                        Op::Send { .. } => ("send", "to"),
                        _ => ("recv", "from"),
                    };
                    let num = |v: u32| {
                        if v == u32::MAX {
                            "-1".to_string()
                        } else {
                            v.to_string()
                        }
                    };
                    // `to -1` does not exist: a send's target 2^32-1 is written as a number.
                    let peer = if verb == "send" {
                        peer.to_string()
                    } else {
                        num(*peer)
                    };
                    let _ = write!(out, "{verb} {}b {dir} {peer} tag {}", buf.len, num(*tag));
                    if h.cpu != 0 {
                        let _ = write!(out, " cpu {}", h.cpu);
                    }
                    if h.nic != 0 {
                        let _ = write!(out, " nic {}", h.nic);
                    }
                }
                Op::Calc { nanos } => {
                    let _ = write!(out, "calc {nanos}");
                    if h.cpu != 0 {
                        let _ = write!(out, " cpu {}", h.cpu);
                    }
                    if h.nic != 0 {
                        // txt2bin has no `nic` on calc: the hint cannot be written.
                        return Err(NotExpressible {
                            rank: rank as u32,
                            action: id,
                            what: format!("calc {nanos} nic {}", h.nic),
                        });
                    }
                }
                other => {
                    return Err(NotExpressible {
                        rank: rank as u32,
                        action: id,
                        what: paper_action(p, other),
                    })
                }
            }
            out.push('\n');
        }
        let name = |id: ActionId| names[id as usize].as_deref().expect("named: has an edge");
        for (id, _) in s.actions() {
            for &d in s.dependents(id) {
                let _ = writeln!(out, "{} requires {}", name(d), name(id));
            }
            for &d in s.start_dependents(id) {
                let _ = writeln!(out, "{} irequires {}", name(d), name(id));
            }
        }
        out.push_str("}\n");
    }
    Ok(out)
}
