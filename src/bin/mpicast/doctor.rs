//! `mpicast doctor`: can this host multicast, and what to change if not. This file owns the
//! options and the output (text, or one JSON document); the facts are gathered by
//! `net::host_facts` and judged by `doctor::host`, the library's own code. The job-wide checks
//! (`-n N`, over MPI) are not built yet, and the command says so.

use crate::config::Config;
use crate::doctor::host::{diagnose, frag_on_this_host, size, Finding, Severity};
use crate::net::host_facts::{gather, HostFacts, IfaceState};
use crate::Fail;
use std::fmt::Write;

/// `mpicast doctor --help`.
pub const USAGE: &str = "\
usage: mpicast doctor --local [--json]

Checks whether this host can take part in mpicast's multicast, with the settings the library
would use (the MPICAST_* environment and MPICAST_CONFIG): the interface that MPICAST_IFACE
selects (unset: the interface of the route to the groups, as the library chooses), its IPv4
address, MTU, state and MULTICAST flag; net.core.rmem_max and wmem_max and the buffer a UDP
socket is granted for MPICAST_RCVBUF; rp_filter; net.ipv4.igmp_max_memberships; the route to
the groups. Then each problem found, with its fix. Nothing is sent and no group is joined.

  --local   this host only (required: the job-wide checks are not built yet)
  --json    the same as one JSON document on standard output

Not built yet: `mpicast doctor -n N [--mpi openmpi|mpich] ...`, which is to launch a job over
MPI and check who hears whom, loss by rate, the IGMP querier and the unicast repair path.

Exit status: 0 no problem (warnings allowed), 1 a problem found (or a bad MPICAST_* setting),
2 bad usage.";

const NOT_BUILT: &str = "the job-wide checks (`mpicast doctor -n N` over MPI: who hears whom, \
loss by rate, the IGMP querier, the repair path) are not built yet; `mpicast doctor --local` \
checks this host";

pub fn run(args: &[String]) -> Result<(), Fail> {
    if args.is_empty() {
        return Err(Fail::UsageLine(NOT_BUILT.into()));
    }
    if args.iter().any(|a| a == "-h" || a == "--help") || args[0] == "help" {
        println!("{USAGE}");
        return Ok(());
    }
    let (mut local, mut json) = (false, false);
    for a in args {
        match a.as_str() {
            "--local" => local = true,
            "--json" => json = true,
            "-n" | "--mpi" | "--hostfile" | "--long" => {
                return Err(Fail::UsageLine(NOT_BUILT.into()))
            }
            o if o.starts_with('-') => return Err(Fail::Usage(format!("unknown option `{o}`"))),
            o => return Err(Fail::Usage(format!("unexpected argument `{o}`"))),
        }
    }
    if !local {
        return Err(Fail::UsageLine(NOT_BUILT.into()));
    }
    // A setting the library would refuse is itself the first problem: it would not start.
    let cfg = Config::from_env().map_err(|e| {
        Fail::Io(format!(
            "the library would refuse these settings: {}",
            e.to_string().trim_start_matches("mpicast: ")
        ))
    })?;
    let facts = gather(&cfg);
    let findings = diagnose(&facts, None);
    let out = if json {
        to_json(&facts, &findings)
    } else {
        to_text(&facts, &findings)
    };
    print!("{out}");
    if findings.iter().any(|f| f.severity == Severity::Problem) {
        Err(Fail::Exit(1))
    } else {
        Ok(())
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "(unreadable)".into(), |v| v.to_string())
}

fn state(st: &IfaceState) -> String {
    let mut s = vec![if st.up { "up" } else { "DOWN" }];
    if st.up {
        s.push(if st.running { "link up" } else { "NO CARRIER" });
    }
    s.push(match (st.multicast, st.loopback) {
        (true, _) => "MULTICAST",
        (false, true) => "no MULTICAST flag (loopback multicasts without it)",
        (false, false) => "no MULTICAST flag",
    });
    if st.loopback {
        s.push("loopback");
    }
    s.join(", ")
}

fn why_chosen(f: &HostFacts) -> String {
    match &f.iface_spec {
        Some(s) => format!("MPICAST_IFACE={s}"),
        None => match &f.group_route {
            Some(r) if r.is_default() => "the default route; MPICAST_IFACE not set".into(),
            Some(r) => format!(
                "the route {}/{} to the groups; MPICAST_IFACE not set",
                r.dest, r.prefix
            ),
            None => "MPICAST_IFACE not set".into(),
        },
    }
}

fn route_text(f: &HostFacts) -> String {
    match &f.group_route {
        None => "none (no multicast route, no default route)".into(),
        Some(r) => {
            let kind = if r.is_multicast_route() {
                "multicast route"
            } else if r.is_default() {
                "default route"
            } else {
                "route"
            };
            format!("{kind} {}/{} via {}", r.dest, r.prefix, r.dev)
        }
    }
}

/// The text report: the facts, then the findings, then what was not checked.
pub fn to_text(f: &HostFacts, findings: &[Finding]) -> String {
    let mut s = String::new();
    let host = f.hostname.as_deref().unwrap_or("this host");
    let _ = writeln!(s, "mpicast doctor --local: {host}\n");
    let row = |s: &mut String, k: &str, v: String| {
        let _ = writeln!(s, "  {k:<32} {v}");
    };
    let st = f.dev_state();
    match (&f.chosen, f.dev()) {
        (Ok(i), _) => row(
            &mut s,
            "interface",
            format!("{} ({})", i.name, why_chosen(f)),
        ),
        (Err(_), Some(d)) => row(
            &mut s,
            "interface",
            format!("{d} ({}), which the library refuses", why_chosen(f)),
        ),
        (Err(_), None) => row(&mut s, "interface", format!("none ({})", why_chosen(f))),
    }
    if let Some(st) = st {
        let addrs: Vec<String> = st.addrs.iter().map(|a| a.to_string()).collect();
        row(
            &mut s,
            "  address",
            match (&f.chosen, addrs.is_empty()) {
                (_, true) => "none (no IPv4 address)".into(),
                (Ok(i), _) if addrs.len() > 1 => {
                    format!("{} (uses {})", addrs.join(", "), i.addr)
                }
                _ => addrs.join(", "),
            },
        );
        row(
            &mut s,
            "  mtu",
            if st.mtu == 0 {
                "(unreadable)".into()
            } else {
                format!(
                    "{} ({} bytes of data per datagram on this host)",
                    st.mtu,
                    frag_on_this_host(st.mtu, f.frag_bytes)
                )
            },
        );
        row(&mut s, "  state", state(st));
    }
    row(
        &mut s,
        &format!(
            "route to {}",
            f.group_route
                .as_ref()
                .map_or_else(|| "239.255.0.0".into(), |r| r.group.to_string())
        ),
        route_text(f),
    );
    row(
        &mut s,
        "buffer asked (MPICAST_RCVBUF)",
        size(f.rcvbuf_wanted),
    );
    row(
        &mut s,
        "buffer granted",
        match (f.rcvbuf_granted, f.sndbuf_granted) {
            (Some(r), Some(w)) => format!(
                "receive {}, send {} (getsockopt: {r}, {w}){}",
                size(r / 2),
                size(w / 2),
                if f.buffer_forced {
                    "; forced past rmem_max (privileged): other users get at most rmem_max"
                } else {
                    ""
                }
            ),
            _ => "(no socket could be opened)".into(),
        },
    );
    row(&mut s, "net.core.rmem_max", opt(f.rmem_max));
    row(&mut s, "net.core.wmem_max", opt(f.wmem_max));
    row(&mut s, "net.ipv4.conf.all.rp_filter", opt(f.rp_filter_all));
    if let Some(d) = f.dev().filter(|_| st.is_some()) {
        row(
            &mut s,
            &format!("net.ipv4.conf.{d}.rp_filter"),
            opt(f.rp_filter_iface),
        );
    }
    row(
        &mut s,
        "net.ipv4.igmp_max_memberships",
        opt(f.igmp_max_memberships),
    );
    s.push('\n');
    for x in findings {
        let _ = writeln!(s, "{}: {}\n  fix: {}\n", x.severity, x.what, x.fix);
    }
    let problems = findings
        .iter()
        .filter(|x| x.severity == Severity::Problem)
        .count();
    let warnings = findings.len() - problems;
    if findings.is_empty() {
        s.push_str("No problem found on this host.\n");
    } else {
        let _ = writeln!(
            s,
            "{problems} problem{}, {warnings} warning{} on this host.",
            if problems == 1 { "" } else { "s" },
            if warnings == 1 { "" } else { "s" }
        );
    }
    s.push_str(
        "Not checked (needs the job-wide `mpicast doctor -n N`, not built yet): whether the \
         other hosts hear this one, their MTUs, loss at rate, the IGMP querier, firewalls, the \
         unicast repair path.\n",
    );
    s
}

/// `s` as a JSON string, quotes included.
pub fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "null".into(), |v| v.to_string())
}

fn json_opt_str(v: Option<&str>) -> String {
    v.map_or_else(|| "null".into(), json_str)
}

/// The JSON report: one object, the same facts and findings as the text.
pub fn to_json(f: &HostFacts, findings: &[Finding]) -> String {
    let mut s = String::from("{\n");
    let mut field = |k: &str, v: String| {
        let _ = writeln!(s, "  {}: {v},", json_str(k));
    };
    field("host", json_opt_str(f.hostname.as_deref()));
    field(
        "iface_setting",
        json_opt_str(f.iface_spec.as_ref().map(|s| s.to_string()).as_deref()),
    );
    field(
        "iface_error",
        json_opt_str(f.chosen.as_ref().err().map(String::as_str)),
    );
    field(
        "iface",
        match f.dev_state() {
            None => "null".into(),
            Some(st) => {
                let addrs: Vec<String> =
                    st.addrs.iter().map(|a| json_str(&a.to_string())).collect();
                format!(
                    "{{\"name\": {}, \"chosen\": {}, \"address\": {}, \"addresses\": [{}], \
                     \"mtu\": {}, \"up\": {}, \"running\": {}, \"multicast\": {}, \
                     \"loopback\": {}}}",
                    json_str(&st.name),
                    f.chosen.is_ok(),
                    json_opt_str(
                        f.chosen
                            .as_ref()
                            .ok()
                            .map(|i| i.addr.to_string())
                            .as_deref()
                    ),
                    addrs.join(", "),
                    st.mtu,
                    st.up,
                    st.running,
                    st.multicast,
                    st.loopback
                )
            }
        },
    );
    field(
        "frag_bytes",
        json_opt(
            f.dev_state()
                .filter(|st| st.mtu > 0)
                .map(|st| frag_on_this_host(st.mtu, f.frag_bytes)),
        ),
    );
    field(
        "group_route",
        match &f.group_route {
            None => "null".into(),
            Some(r) => format!(
                "{{\"group\": {}, \"dev\": {}, \"dest\": {}, \"multicast_route\": {}, \
                 \"default_route\": {}}}",
                json_str(&r.group.to_string()),
                json_str(&r.dev),
                json_str(&format!("{}/{}", r.dest, r.prefix)),
                r.is_multicast_route(),
                r.is_default()
            ),
        },
    );
    field("rcvbuf_wanted", f.rcvbuf_wanted.to_string());
    field("rcvbuf_granted", json_opt(f.rcvbuf_granted));
    field("sndbuf_granted", json_opt(f.sndbuf_granted));
    field("buffer_forced", f.buffer_forced.to_string());
    field("rmem_max", json_opt(f.rmem_max));
    field("wmem_max", json_opt(f.wmem_max));
    field("rp_filter_all", json_opt(f.rp_filter_all));
    field("rp_filter_iface", json_opt(f.rp_filter_iface));
    field("igmp_max_memberships", json_opt(f.igmp_max_memberships));
    let problems = findings
        .iter()
        .filter(|x| x.severity == Severity::Problem)
        .count();
    field("problems", problems.to_string());
    field("warnings", (findings.len() - problems).to_string());
    s.push_str("  \"findings\": [");
    for (k, x) in findings.iter().enumerate() {
        let _ = write!(
            s,
            "{}\n    {{\"severity\": {}, \"code\": {}, \"what\": {}, \"fix\": {}}}",
            if k == 0 { "" } else { "," },
            json_str(&x.severity.to_string()),
            json_str(x.code),
            json_str(&x.what),
            json_str(&x.fix)
        );
    }
    s.push_str(if findings.is_empty() {
        "]\n}\n"
    } else {
        "\n  ]\n}\n"
    });
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::IfaceSpec;

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_str("a\"b\\c\nd\u{1}é"), "\"a\\\"b\\\\c\\nd\\u0001é\"");
        let v: serde_json::Value = serde_json::from_str(&json_str("x\ty\u{7f}\"")).unwrap();
        assert_eq!(v, "x\ty\u{7f}\"");
    }

    fn lo_facts() -> HostFacts {
        let cfg = Config {
            iface: Some(IfaceSpec::Name("lo".into())),
            ..Config::default()
        };
        gather(&cfg)
    }

    #[test]
    fn reports_parse_and_agree() {
        let f = lo_facts();
        let d = diagnose(&f, None);
        let v: serde_json::Value = serde_json::from_str(&to_json(&f, &d)).unwrap();
        assert_eq!(v["iface"]["name"], "lo");
        assert_eq!(v["iface"]["mtu"], 65536);
        assert_eq!(v["iface_setting"], "lo");
        assert_eq!(v["findings"].as_array().unwrap().len(), d.len());
        let t = to_text(&f, &d);
        assert!(t.contains("lo (MPICAST_IFACE=lo)"), "{t}");
        assert!(t.contains("warning: the loopback interface lo"), "{t}");
        // The same facts with every finding there is: still one valid document.
        let mut g = f.clone();
        g.iface_spec = Some(IfaceSpec::Name("nosuchif9".into()));
        g.chosen = Err("mpicast: \"quoted\"\nand a newline".into());
        g.wanted_dev = Some("nosuchif9".into());
        g.rmem_max = None;
        let d = diagnose(&g, None);
        let v: serde_json::Value = serde_json::from_str(&to_json(&g, &d)).unwrap();
        assert_eq!(v["iface"], serde_json::Value::Null);
        assert_eq!(v["iface_error"], "mpicast: \"quoted\"\nand a newline");
        assert!(v["problems"].as_u64().unwrap() >= 1);
        let v: serde_json::Value = serde_json::from_str(&to_json(&g, &[])).unwrap();
        assert_eq!(v["findings"], serde_json::json!([]));
    }
}
