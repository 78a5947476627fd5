//! A program as a Graphviz digraph: one cluster per rank, one node per action, solid edges for
//! `requ` (from the action that must finish to the one that waits), dashed for `irequ`, and
//! dotted blue edges for the messages that matching pairs across ranks (`validate`).

use super::print::paper_action;
use super::validate::match_messages;
use super::{Program, SourceMap};
use std::fmt::Write;

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The DOT text of `p`.
pub fn to_dot(p: &Program) -> String {
    let mut out = String::from(
        "digraph goal {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n",
    );
    for (rank, r) in p.ranks.iter().enumerate() {
        let _ = writeln!(
            out,
            "  subgraph cluster_r{rank} {{\n    label=\"rank {rank}\";\n    color=gray;"
        );
        for (id, op) in r.schedule.actions() {
            let text = match r.label(id) {
                Some(l) => format!("{l}: {}", paper_action(p, op)),
                None => paper_action(p, op),
            };
            let shape = if r.schedule.prerequisites(id) == 0 {
                ", style=bold"
            } else {
                ""
            };
            let _ = writeln!(out, "    r{rank}_{id} [label=\"{}\"{shape}];", esc(&text));
        }
        for (id, _) in r.schedule.actions() {
            for &d in r.schedule.dependents(id) {
                let _ = writeln!(out, "    r{rank}_{id} -> r{rank}_{d};");
            }
            for &d in r.schedule.start_dependents(id) {
                let _ = writeln!(out, "    r{rank}_{id} -> r{rank}_{d} [style=dashed];");
            }
        }
        out.push_str("  }\n");
    }
    if !p.local_view {
        let m = match_messages(p, &SourceMap::default(), None);
        for (s, a, d, b) in m.p2p.iter().chain(&m.mcast) {
            let _ = writeln!(
                out,
                "  r{s}_{a} -> r{d}_{b} [style=dotted, color=blue, constraint=false];"
            );
        }
    }
    out.push_str("}\n");
    out
}
