//! The doctor's reports: one host's facts and findings as text or as one JSON document
//! (`mpicast doctor --local`, and each host's section of the job-wide report). Pure.

use std::fmt::Write;

use super::host::{frag_on_this_host, size, Finding, Severity};
use crate::net::host_facts::{HostFacts, IfaceState};

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
    s.push_str(&facts_rows(f));
    s.push('\n');
    for x in findings {
        s.push_str(&finding_text(x));
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
        "Not checked (needs the job-wide `mpicast doctor -n N`): whether the other hosts hear \
         this one, their MTUs, loss at rate, the IGMP querier, firewalls, the unicast repair \
         path.\n",
    );
    s
}

/// One finding as text: its severity and what, then the fix, and a blank line.
pub fn finding_text(x: &Finding) -> String {
    format!("{}: {}\n  fix: {}\n\n", x.severity, x.what, x.fix)
}

/// The facts of one host as indented `name value` rows.
pub fn facts_rows(f: &HostFacts) -> String {
    let mut s = String::new();
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
