//! `mpicast sim --timeline FILE.svg`: a run of the simulator drawn as LogGOPSim's drawviz
//! does, one lane per rank and time to the right. A send is a box for its CPU overhead (`o`,
//! then the per-byte `O` part), a thin mark below it for the NIC's gap (`g` and `G`) and, for a
//! rendezvous, a grey box while the sender waits for its receiver; a message is a line from the
//! sender to the box of its processing at the receiver (`o`, then the per-byte part); a calc is
//! a box of its own colour. Receives are not drawn: posting one costs nothing in the model, and
//! what they wait for is the message, which is.
//!
//! The times come from the run (`Outcome::times`, `Outcome::arrivals`); only the boundary
//! between `o` and the per-byte part of a box, and the send side of the NIC gap, are worked out
//! here from the parameters with the engine's rules (docs/sim.md). Pure string building: the
//! same run gives the same bytes.

use crate::sched::ActionId;
use crate::sim::flat::{Act, Kind as ActKind};
use crate::sim::{Flat, Outcome, Params, PerByte};
use crate::svg::{self, num, Key};
use std::collections::HashMap;
use std::fmt::Write;

/// More ranks than this give lanes thinner than a few pixels.
pub const MAX_RANKS: u32 = 256;
/// More actions than this give boxes too thin to see and files too large to open comfortably.
pub const MAX_ACTIONS: usize = 20_000;

/// Whether `p` is small enough to draw; the error says which limit it passes.
pub fn check(p: &Flat) -> Result<(), String> {
    if p.num_ranks() > MAX_RANKS {
        return Err(format!(
            "--timeline draws at most {MAX_RANKS} ranks; this program has {}",
            p.num_ranks()
        ));
    }
    if p.action_count() > MAX_ACTIONS {
        return Err(format!(
            "--timeline draws at most {MAX_ACTIONS} actions; this program has {}",
            p.action_count()
        ));
    }
    Ok(())
}

/// What a box or mark shows, with its colour and legend text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    SendO,
    SendBytes,
    Rendezvous,
    RecvO,
    RecvBytes,
    Calc,
    Nic,
}

impl Kind {
    const ALL: [Kind; 7] = [
        Kind::SendO,
        Kind::SendBytes,
        Kind::Rendezvous,
        Kind::RecvO,
        Kind::RecvBytes,
        Kind::Calc,
        Kind::Nic,
    ];

    fn class(self) -> &'static str {
        match self {
            Kind::SendO => "send-o",
            Kind::SendBytes => "send-bytes",
            Kind::Rendezvous => "rendezvous",
            Kind::RecvO => "recv-o",
            Kind::RecvBytes => "recv-bytes",
            Kind::Calc => "calc",
            Kind::Nic => "nic",
        }
    }

    fn colour(self) -> &'static str {
        match self {
            Kind::SendO => "#1f77b4",
            Kind::SendBytes => "#9ecae1",
            Kind::Rendezvous => "#bdbdbd",
            Kind::RecvO => "#2ca02c",
            Kind::RecvBytes => "#a1d99b",
            Kind::Calc => "#ff7f0e",
            Kind::Nic => "#6b6b6b",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Kind::SendO => "send: o",
            Kind::SendBytes => "send: per byte (O)",
            Kind::Rendezvous => "send: rendezvous wait",
            Kind::RecvO => "message processed: o",
            Kind::RecvBytes => "message processed: per byte",
            Kind::Calc => "calc",
            Kind::Nic => "NIC gap (g, G)",
        }
    }
}

const MSG_COLOUR: &str = "#d62728";

/// A box on a lane from `t0` to `t1` ns.
struct Bar {
    kind: Kind,
    t0: u64,
    t1: u64,
}

/// What one action or one message puts on a lane, with its tooltip.
struct Group {
    rank: u32,
    title: String,
    bars: Vec<Bar>,
}

/// A message: from `rank` at `t0` to `to` at `t1`.
struct Line {
    rank: u32,
    t0: u64,
    to: u32,
    t1: u64,
}

fn bar(kind: Kind, t0: u64, t1: u64) -> Option<Bar> {
    (t1 > t0).then_some(Bar { kind, t0, t1 })
}

/// LogGOPSim's `s - 1`, never below 0, as the engine costs a message.
fn extra(len: u64) -> u64 {
    len.saturating_sub(1)
}

/// The `o`, `g` and `G` of the channel a message of `a` goes over (multicast has its own).
fn channel(prm: &Params, a: &Act) -> (u64, u64, PerByte) {
    if a.kind == ActKind::Mcast {
        (prm.mcast_o(), prm.mcast_g(), prm.mcast_gb())
    } else {
        (prm.overhead, prm.gap, prm.gap_per_byte)
    }
}

fn action_name(p: &Flat, rank: u32, id: ActionId) -> String {
    let g = p.global(rank, id);
    let label = p.label(g).map(|l| format!(" ({l})")).unwrap_or_default();
    format!("rank {rank} action {id}: {}{label}", p.act(g).describe())
}

/// The boxes and lines of the run, in a fixed order: each rank's actions in order, then the
/// messages in the order their receivers took them.
fn layout(p: &Flat, prm: &Params, out: &Outcome) -> (Vec<Group>, Vec<Line>) {
    let mut groups = Vec::new();
    let mut lines = Vec::new();
    // Which receive took each message, for the tooltips: (receiver, sender, send) -> receive.
    let mut taken: HashMap<(u32, u32, ActionId), ActionId> = HashMap::new();
    for r in 0..p.num_ranks() {
        let first = p.global(r, 0);
        for g in p.range(r) {
            let id = (g - first) as ActionId;
            let a = p.act(g);
            if let Some((src, send)) = out.matched(r, id) {
                taken.insert((r, src, send), id);
            }
            let (t0, t1) = out.times(r, id);
            let mut bars = Vec::new();
            if matches!(a.kind, ActKind::Send | ActKind::Mcast) {
                let (o, gap, gb) = channel(prm, a);
                let o_end = t0 + o;
                let cpu_end = o_end + prm.overhead_per_byte.time(extra(a.arg));
                bars.extend(bar(Kind::SendO, t0, o_end));
                bars.extend(bar(Kind::SendBytes, o_end, cpu_end));
                bars.extend(bar(Kind::Rendezvous, cpu_end, t1));
                bars.extend(bar(Kind::Nic, t0, t0 + gap + gb.time(extra(a.arg))));
            } else if a.kind == ActKind::Calc {
                bars.extend(bar(Kind::Calc, t0, t1));
            }
            if !bars.is_empty() {
                groups.push(Group {
                    rank: r,
                    title: format!("{}, {t0} to {t1} ns", action_name(p, r, id)),
                    bars,
                });
            }
        }
    }
    for a in out.arrivals() {
        let (o, _, _) = channel(prm, p.act(p.global(a.src, a.send)));
        let o_end = (a.at + o).min(a.cpu_end);
        let by = match taken.get(&(a.rank, a.src, a.send)) {
            Some(id) => format!("taken by action {id}"),
            None => "never received".to_string(),
        };
        let mut bars = Vec::new();
        bars.extend(bar(Kind::RecvO, a.at, o_end));
        bars.extend(bar(Kind::RecvBytes, o_end, a.cpu_end));
        bars.extend(bar(Kind::Nic, a.at, a.nic_end));
        groups.push(Group {
            rank: a.rank,
            title: format!(
                "rank {}: message of {}, processed {} to {} ns, {by}",
                a.rank,
                action_name(p, a.src, a.send),
                a.at,
                a.cpu_end
            ),
            bars,
        });
        let (sent_at, _) = out.times(a.src, a.send);
        lines.push(Line {
            rank: a.src,
            t0: sent_at + o,
            to: a.rank,
            t1: a.at,
        });
    }
    (groups, lines)
}

// Layout in pixels.
const LEFT: f64 = 64.0;
const PLOT_W: f64 = 960.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 44.0;

/// Where things go on the plot: `end` ns across, `lane_h` pixels a rank.
#[derive(Clone, Copy)]
struct Frame {
    end: u64,
    lane_h: f64,
}

impl Frame {
    fn x(&self, t: u64) -> f64 {
        LEFT + t as f64 * PLOT_W / self.end as f64
    }

    fn lane_y(&self, r: u32) -> f64 {
        TOP + r as f64 * self.lane_h
    }
}

/// The SVG of a run of `p` called `name` (a file name or a generator).
pub fn render(name: &str, p: &Flat, prm: &Params, out: &Outcome) -> String {
    let n = p.num_ranks().max(1) as usize;
    let (groups, lines) = layout(p, prm, out);
    let end = groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|b| b.t1))
        .chain(lines.iter().map(|l| l.t1))
        .fold(out.max, u64::max)
        .max(1);
    let lane_h = (720.0 / n as f64).clamp(4.0, 28.0);
    let f = Frame { end, lane_h };
    let axis_y = TOP + lane_h * n as f64;
    let legend_y = axis_y + 48.0;
    let per_col = 3;
    let keys: Vec<Key> = Kind::ALL
        .iter()
        .map(|k| Key {
            colour: k.colour(),
            line: false,
            label: k.label().to_string(),
        })
        .chain(std::iter::once(Key {
            colour: MSG_COLOUR,
            line: true,
            label: "message".to_string(),
        }))
        .collect();
    let width = LEFT + PLOT_W + RIGHT;
    let height = legend_y + per_col as f64 * 16.0 + 8.0;

    let mut s = svg::open(width, height);
    svg::text(
        &mut s,
        LEFT,
        18.0,
        "start",
        "title",
        &format!(
            "{name}: {} ranks, {} actions; ends at {} ns on rank {}",
            p.num_ranks(),
            p.action_count(),
            out.max,
            out.max_rank
        ),
    );
    svg::text(
        &mut s,
        LEFT,
        34.0,
        "start",
        "params",
        &format!("{prm} (ns; S in bytes)"),
    );
    lanes(&mut s, f, n);
    time_axis(&mut s, f, axis_y);
    actions(&mut s, f, &groups);
    messages(&mut s, f, &lines);
    svg::legend(&mut s, LEFT, legend_y, &keys, per_col, 240.0);
    svg::close(&mut s);
    s
}

/// Lanes, and a rank label wherever there is room for one (at least 12 px apart).
fn lanes(s: &mut String, f: Frame, n: usize) {
    let label_every = (12.0 / f.lane_h).ceil().max(1.0) as usize;
    let _ = writeln!(s, "<g class=\"lanes\">");
    for r in 0..n {
        let fill = if r % 2 == 0 { "#f2f2f2" } else { "#fafafa" };
        let _ = writeln!(
            s,
            "<rect class=\"lane\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"/>",
            num(LEFT),
            num(f.lane_y(r as u32)),
            num(PLOT_W),
            num(f.lane_h)
        );
        if r % label_every == 0 {
            svg::text(
                s,
                LEFT - 6.0,
                f.lane_y(r as u32) + f.lane_h / 2.0 + 4.0,
                "end",
                "rank",
                &format!("rank {r}"),
            );
        }
    }
    let _ = writeln!(s, "</g>");
}

/// The time axis at `axis_y`: ticks and their grid lines, then the label.
fn time_axis(s: &mut String, f: Frame, axis_y: f64) {
    let _ = writeln!(s, "<g class=\"axis\">");
    let _ = writeln!(
        s,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#000000\"/>",
        num(LEFT),
        num(axis_y),
        num(LEFT + PLOT_W),
        num(axis_y)
    );
    for t in svg::linear_ticks(f.end, 11) {
        let tx = f.x(t);
        let _ = writeln!(
            s,
            "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#d0d0d0\" stroke-width=\"0.5\"/>",
            num(tx),
            num(TOP),
            num(axis_y + 4.0)
        );
        svg::text(s, tx, axis_y + 16.0, "middle", "tick", &t.to_string());
    }
    svg::text(
        s,
        LEFT + PLOT_W / 2.0,
        axis_y + 34.0,
        "middle",
        "axis-label",
        "time (ns)",
    );
    let _ = writeln!(s, "</g>");
}

/// CPU boxes fill the upper part of a lane (0.1 to 0.7 of its height), the NIC's gap a strip
/// below them.
const CPU_BAND: (f64, f64) = (0.1, 0.6);

/// The actions' boxes, one group with its tooltip each.
fn actions(s: &mut String, f: Frame, groups: &[Group]) {
    let lane_h = f.lane_h;
    let (cpu_y, cpu_h) = (lane_h * CPU_BAND.0, lane_h * CPU_BAND.1);
    let (nic_y, nic_h) = (lane_h * 0.76, (lane_h * 0.14).max(1.0));
    let _ = writeln!(s, "<g class=\"actions\">");
    for g in groups {
        let _ = writeln!(s, "<g><title>{}</title>", svg::escape(&g.title));
        for b in &g.bars {
            let (dy, h) = if b.kind == Kind::Nic {
                (nic_y, nic_h)
            } else {
                (cpu_y, cpu_h)
            };
            let w = f.x(b.t1) - f.x(b.t0);
            // A hairline of white keeps boxes that touch apart, where they are wide enough
            // not to vanish under it.
            let edge = if w >= 3.0 && h >= 8.0 {
                " stroke=\"#ffffff\" stroke-width=\"0.5\""
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{edge}/>",
                b.kind.class(),
                num(f.x(b.t0)),
                num(f.lane_y(g.rank) + dy),
                num(w),
                num(h),
                b.kind.colour()
            );
        }
        let _ = writeln!(s, "</g>");
    }
    let _ = writeln!(s, "</g>");
}

/// The messages: lines between the middles of the CPU boxes of their lanes.
fn messages(s: &mut String, f: Frame, lines: &[Line]) {
    let lane_h = f.lane_h;
    let mid = lane_h * CPU_BAND.0 + lane_h * CPU_BAND.1 / 2.0;
    // Thinner lines where lanes are thin, or hundreds of messages hide the boxes.
    let _ = writeln!(
        s,
        "<g class=\"messages\" stroke=\"{MSG_COLOUR}\" stroke-width=\"{}\" stroke-opacity=\"0.7\">",
        num((lane_h / 8.0).clamp(0.3, 1.0))
    );
    for l in lines {
        let _ = writeln!(
            s,
            "<line class=\"msg\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
            num(f.x(l.t0)),
            num(f.lane_y(l.rank) + mid),
            num(f.x(l.t1)),
            num(f.lane_y(l.to) + mid)
        );
    }
    let _ = writeln!(s, "</g>");
}

/// `s` as the inside of a JSON string.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Nanoseconds as the microseconds Chrome's trace format counts in (`1.5` for 1500 ns).
fn micros(t: u64) -> String {
    format!("{}.{:03}", t / 1000, t % 1000)
}

/// The run of `p` as a Chrome trace (the JSON that Perfetto and chrome://tracing open): a
/// process per rank with a `cpu` thread (sends' `o` and per-byte part, rendezvous waits,
/// messages processed, calcs) and a `nic` thread (the NIC gaps); each message is a flow
/// from its send to where its receiver took it. The same boxes as the SVG, the same run gives
/// the same bytes.
pub fn chrome_trace(name: &str, p: &Flat, prm: &Params, out: &Outcome) -> String {
    let (groups, lines) = layout(p, prm, out);
    let mut ev: Vec<String> = Vec::new();
    ev.push(format!(
        "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{{\"name\":\"{}\"}}}}",
        json_str(&format!("{name}: {prm}"))
    ));
    for r in 0..p.num_ranks() {
        let pid = r + 1;
        ev.push(format!(
            "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"args\":{{\"name\":\"rank {r}\"}}}}"
        ));
        for (tid, t) in [(0, "cpu"), (1, "nic")] {
            ev.push(format!(
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":\"{t}\"}}}}"
            ));
        }
    }
    for g in &groups {
        for b in &g.bars {
            let tid = u32::from(b.kind == Kind::Nic);
            ev.push(format!(
                "{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{tid},\"args\":{{\"what\":\"{}\"}}}}",
                b.kind.label(),
                b.kind.class(),
                micros(b.t0),
                micros(b.t1 - b.t0),
                g.rank + 1,
                json_str(&g.title)
            ));
        }
    }
    for (i, l) in lines.iter().enumerate() {
        ev.push(format!(
            "{{\"name\":\"message\",\"cat\":\"message\",\"ph\":\"s\",\"id\":{i},\"ts\":{},\"pid\":{},\"tid\":0}}",
            micros(l.t0),
            l.rank + 1
        ));
        ev.push(format!(
            "{{\"name\":\"message\",\"cat\":\"message\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{i},\"ts\":{},\"pid\":{},\"tid\":0}}",
            micros(l.t1),
            l.to + 1
        ));
    }
    format!(
        "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n{}\n]}}\n",
        ev.join(",\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::gen::{self, Algo};
    use crate::sim::{simulate, Options};

    fn flat(p: crate::goal::Program) -> Flat {
        Flat::from_program(&p).unwrap()
    }

    fn run(algo: Algo, n: u32, size: usize, prm: &Params) -> (Flat, Outcome) {
        let p = gen::generate(algo, n, 0, size).unwrap();
        let out = simulate(&p, prm, Options { trace: true }).unwrap();
        (Flat::from_program(&p).unwrap(), out)
    }

    fn count(s: &str, needle: &str) -> usize {
        s.matches(needle).count()
    }

    /// The numbers of attribute `name` of the elements of class `class`, in order.
    fn attr(s: &str, class: &str, name: &str) -> Vec<f64> {
        s.lines()
            .filter(|l| l.contains(&format!("class=\"{class}\"")))
            .map(|l| {
                let at = l.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
                l[at..].split('"').next().unwrap().parse().unwrap()
            })
            .collect()
    }

    #[test]
    fn binomial_broadcast_has_a_lane_per_rank_and_a_line_per_message() {
        let prm = Params::default();
        let (p, out) = run(Algo::BinomialBcast, 8, 1, &prm);
        let s = render("binomial-bcast", &p, &prm, &out);
        assert!(s.starts_with("<?xml") && s.ends_with("</svg>\n"));
        assert_eq!(count(&s, "class=\"lane\""), 8);
        assert_eq!(count(&s, "class=\"msg\""), 7);
        assert_eq!(count(&s, "class=\"send-o\""), 7);
        assert_eq!(count(&s, "class=\"recv-o\""), 7);
        // 1-byte messages have no per-byte part; eager sends no rendezvous wait.
        assert_eq!(count(&s, "class=\"send-bytes\""), 0);
        assert_eq!(count(&s, "class=\"rendezvous\""), 0);
        assert_eq!(count(&s, "class=\"nic\""), 14);
        // The run ends at 16500 ns (docs/sim.md): ticks every 2000 ns up to 16000, at the
        // place their value says on a 960-pixel axis from x = 64.
        for t in (0..=16000).step_by(2000) {
            let label = format!(">{t}</text>");
            assert!(s.contains(&label), "tick {t}");
        }
        assert!(!s.contains(">18000</text>"));
        let ticks = attr(&s, "tick", "x");
        assert_eq!(ticks.len(), 9);
        for (i, tx) in ticks.iter().enumerate() {
            let want = 64.0 + (i as f64 * 2000.0) * 960.0 / 16500.0;
            assert!((tx - want).abs() < 0.01, "tick {i}: {tx} vs {want}");
        }
        assert!(s.contains(">time (ns)</text>"));
        // Rank 0's first send: o from 0 to 1500 ns.
        let x = attr(&s, "send-o", "x");
        let w = attr(&s, "send-o", "width");
        assert_eq!(x[0], 64.0);
        assert!((w[0] - 1500.0 * 960.0 / 16500.0).abs() < 0.01);
        // Every kind is in the legend, once.
        for k in Kind::ALL {
            assert_eq!(count(&s, &format!(">{}</text>", svg::escape(k.label()))), 1);
        }
        // The same run draws the same bytes.
        let (p2, out2) = run(Algo::BinomialBcast, 8, 1, &prm);
        assert_eq!(s, render("binomial-bcast", &p2, &prm, &out2));
    }

    #[test]
    fn messages_go_from_the_send_to_their_processing() {
        let prm = Params::default();
        let (p, out) = run(Algo::BinomialBcast, 4, 1, &prm);
        // Rank 1 takes rank 0's message when it arrives (o + L = 4000) and is done at 5500.
        let a = out.arrivals();
        assert_eq!(a.len(), 3);
        let first = a.iter().find(|a| a.rank == 1).unwrap();
        assert_eq!((first.src, first.at, first.cpu_end), (0, 4000, 5500));
        assert_eq!(first.nic_end, 4000 + prm.gap);
        let (groups, lines) = layout(&p, &prm, &out);
        let l = lines.iter().find(|l| l.to == 1).unwrap();
        assert_eq!((l.rank, l.t0, l.t1), (0, 1500, 4000));
        let g = groups
            .iter()
            .find(|g| g.rank == 1 && g.bars[0].kind == Kind::RecvO)
            .unwrap();
        assert_eq!((g.bars[0].t0, g.bars[0].t1), (4000, 5500));
        assert!(g.title.contains("taken by action 0"), "{}", g.title);
    }

    #[test]
    fn per_byte_parts_and_rendezvous_get_their_own_boxes() {
        // 101 bytes with O = 10, G = 6, S = 50: a rendezvous.
        let prm = Params {
            overhead_per_byte: PerByte::ns(10),
            eager_limit: 50,
            ..Params::default()
        };
        let (p, out) = run(Algo::BinomialBcast, 2, 101, &prm);
        let (groups, _) = layout(&p, &prm, &out);
        let send = &groups[0];
        let kinds: Vec<Kind> = send.bars.iter().map(|b| b.kind).collect();
        assert_eq!(
            kinds,
            [Kind::SendO, Kind::SendBytes, Kind::Rendezvous, Kind::Nic]
        );
        assert_eq!((send.bars[1].t0, send.bars[1].t1), (1500, 2500));
        // The receiver matched at the arrival (o + L = 4000): the sender waits until then.
        assert_eq!((send.bars[2].t0, send.bars[2].t1), (2500, 4000));
        assert_eq!(send.bars[3].t1, prm.gap + 100 * 6);
        let recv = groups.iter().find(|g| g.rank == 1).unwrap();
        let b: Vec<(Kind, u64, u64)> = recv.bars.iter().map(|b| (b.kind, b.t0, b.t1)).collect();
        assert_eq!(
            b,
            [
                (Kind::RecvO, 4000, 5500),
                (Kind::RecvBytes, 5500, 6500),
                (Kind::Nic, 4000, 4000 + 1000 + 600)
            ]
        );
    }

    #[test]
    fn a_multicast_draws_one_line_per_receiver() {
        let prm = Params::default();
        let (p, out) = run(Algo::McastBarrier, 5, 0, &prm);
        let s = render("mcast-barrier", &p, &prm, &out);
        let mcasts = p.acts().iter().filter(|a| a.kind == ActKind::Mcast).count();
        let sends = p.acts().iter().filter(|a| a.kind == ActKind::Send).count();
        assert_eq!(mcasts, 1);
        assert_eq!(count(&s, "class=\"msg\""), sends + 4);
        assert_eq!(count(&s, "class=\"lane\""), 5);
    }

    #[test]
    fn names_and_labels_are_escaped() {
        let prm = Params::default();
        let (p, out) = run(Algo::BinomialBcast, 2, 1, &prm);
        let s = render("a<b>&\"c\".goal", &p, &prm, &out);
        assert!(
            s.contains(">a&lt;b&gt;&amp;&quot;c&quot;.goal: 2 ranks"),
            "{s}"
        );
        assert!(!s.contains("a<b"));
    }

    #[test]
    fn large_programs_are_refused_with_the_limit() {
        let p = flat(gen::generate(Algo::BinomialBcast, MAX_RANKS, 0, 1).unwrap());
        assert_eq!(check(&p), Ok(()));
        let p = flat(gen::generate(Algo::BinomialBcast, MAX_RANKS + 1, 0, 1).unwrap());
        assert_eq!(
            check(&p).unwrap_err(),
            "--timeline draws at most 256 ranks; this program has 257"
        );
        let algo = gen::algo_from_name("dissemination", Some(255), None).unwrap();
        let p = flat(gen::generate(algo, 256, 0, 4).unwrap());
        assert!(p.action_count() > MAX_ACTIONS);
        assert!(check(&p)
            .unwrap_err()
            .starts_with("--timeline draws at most 20000 actions; this program has "));
    }

    #[test]
    fn chrome_trace_of_one_message() {
        // One 1-byte message: rank 0's send (o 0..1500, NIC gap 0..1000), the message from
        // 1500 to rank 1 at 4000, processed 4000..5500 there.
        let p = crate::goal::lgs::parse(
            b"num_ranks 2\nrank 0 {\nl1: send 1b to 1 tag 0\n}\nrank 1 {\nl1: recv 1b from 0 tag 0\n}\n",
        )
        .unwrap()
        .program;
        let prm = Params::default();
        let out = simulate(&p, &prm, Options { trace: true }).unwrap();
        let f = flat(p);
        let j = chrome_trace("one \"msg\"", &f, &prm, &out);
        assert!(j.starts_with("{\"displayTimeUnit\":\"ns\",\"traceEvents\":["));
        assert!(j.contains("one \\\"msg\\\": L=2500"), "{j}");
        assert!(j.contains("\"name\":\"send: o\",\"cat\":\"send-o\",\"ph\":\"X\",\"ts\":0.000,\"dur\":1.500,\"pid\":1,\"tid\":0"), "{j}");
        assert!(
            j.contains(
                "\"cat\":\"nic\",\"ph\":\"X\",\"ts\":0.000,\"dur\":1.000,\"pid\":1,\"tid\":1"
            ),
            "{j}"
        );
        assert!(
            j.contains("\"ph\":\"X\",\"ts\":4.000,\"dur\":1.500,\"pid\":2,\"tid\":0"),
            "{j}"
        );
        assert!(
            j.contains("\"ph\":\"s\",\"id\":0,\"ts\":1.500,\"pid\":1"),
            "{j}"
        );
        assert!(
            j.contains("\"ph\":\"f\",\"bp\":\"e\",\"id\":0,\"ts\":4.000,\"pid\":2"),
            "{j}"
        );
        // Balanced and the same every time.
        assert_eq!(j.matches('{').count(), j.matches('}').count());
        assert_eq!(j, chrome_trace("one \"msg\"", &f, &prm, &out));
    }
}
