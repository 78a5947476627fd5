//! What `sim --timeline` and `sim sweep` both need to write SVG by hand: escaping, numbers
//! that print the same on every machine, axis ticks, units and a legend. Pure string building.

use std::fmt::Write;

/// `s` safe inside SVG text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // XML 1.0 allows no other control characters, not even escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with two decimals, without a trailing `.00`, so that output is the same
/// everywhere and not bloated by digits no screen shows.
pub fn num(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// The opening of a document of `w` × `h` pixels on a white background, with the styles both
/// pictures use.
pub fn open(w: f64, h: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" \
         viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"11\">",
        num(w),
        num(h)
    );
    let _ = writeln!(
        s,
        "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>",
        num(w),
        num(h)
    );
    s
}

/// The end of a document `open` began.
pub fn close(s: &mut String) {
    s.push_str("</svg>\n");
}

/// A line of text at (`x`, `y`); `anchor` is `start`, `middle` or `end`.
pub fn text(s: &mut String, x: f64, y: f64, anchor: &str, class: &str, body: &str) {
    let _ = writeln!(
        s,
        "<text class=\"{class}\" x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text>",
        num(x),
        num(y),
        escape(body)
    );
}

/// Ticks for a linear axis from 0 to `max`: multiples of 1, 2 or 5 × 10^k, as many as fit in
/// `most` (at least two: 0 and one step).
pub fn linear_ticks(max: u64, most: usize) -> Vec<u64> {
    let max = max.max(1);
    let most = most.max(2) as u64;
    let mut unit = 1u64;
    let step = loop {
        let s = [unit, 2 * unit, 5 * unit]
            .into_iter()
            .find(|&s| max / s < most);
        if let Some(s) = s {
            break s;
        }
        unit *= 10;
    };
    (0..=max / step).map(|i| i * step).collect()
}

/// `ns` in the largest unit that keeps it at least 1: `500 ns`, `2 µs`, `10 ms`, `1.5 s`.
pub fn duration(ns: f64) -> String {
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    // Ticks are round numbers; anything else gets three significant digits at most.
    let v = format!("{v:.2}");
    let v = v.trim_end_matches('0').trim_end_matches('.');
    format!("{v} {unit}")
}

/// One entry of a legend: a colour (drawn as a line when `line`, else as a box) and a label.
pub struct Key<'a> {
    pub colour: &'a str,
    pub line: bool,
    pub label: String,
}

/// A legend of `keys` from (`x`, `y`), one entry per row of `row` pixels, in columns of
/// `col_w` pixels when `per_col` rows are full. Returns the height it took.
pub fn legend(s: &mut String, x: f64, y: f64, keys: &[Key], per_col: usize, col_w: f64) -> f64 {
    let row = 16.0;
    let per_col = per_col.max(1);
    let _ = writeln!(s, "<g class=\"legend\">");
    for (i, k) in keys.iter().enumerate() {
        let kx = x + (i / per_col) as f64 * col_w;
        let ky = y + (i % per_col) as f64 * row;
        if k.line {
            let _ = writeln!(
                s,
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"/>",
                num(kx),
                num(ky + 6.0),
                num(kx + 18.0),
                num(ky + 6.0),
                k.colour
            );
        } else {
            let _ = writeln!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"18\" height=\"10\" fill=\"{}\"/>",
                num(kx),
                num(ky + 1.0),
                k.colour
            );
        }
        text(s, kx + 24.0, ky + 10.0, "start", "key", &k.label);
    }
    let _ = writeln!(s, "</g>");
    keys.len().min(per_col) as f64 * row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>\u{1}\n"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;?\n"
        );
        let mut s = String::new();
        text(&mut s, 1.0, 2.5, "end", "t", "x<y");
        assert_eq!(
            s,
            "<text class=\"t\" x=\"1\" y=\"2.5\" text-anchor=\"end\">x&lt;y</text>\n"
        );
    }

    #[test]
    fn numbers_print_short_and_the_same() {
        assert_eq!(num(3.0), "3");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(1.0 / 3.0), "0.33");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(1234.567), "1234.57");
    }

    #[test]
    fn linear_ticks_are_round_and_cover_the_range() {
        assert_eq!(
            linear_ticks(16500, 10),
            [0, 2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000]
        );
        assert_eq!(linear_ticks(10, 11), (0..=10).collect::<Vec<_>>());
        assert_eq!(linear_ticks(0, 10), [0, 1]);
        assert_eq!(linear_ticks(999, 3), [0, 500]);
        for max in [1, 7, 99, 12345, 987_654_321] {
            let t = linear_ticks(max, 8);
            assert!(t.len() >= 2 && t.len() <= 8, "{max}: {t:?}");
            assert!(*t.last().unwrap() <= max.max(1), "{max}: {t:?}");
        }
    }

    #[test]
    fn durations_take_the_largest_unit() {
        assert_eq!(duration(500.0), "500 ns");
        assert_eq!(duration(2000.0), "2 µs");
        assert_eq!(duration(16_500.0), "16.5 µs");
        assert_eq!(duration(1e7), "10 ms");
        assert_eq!(duration(1.5e9), "1.5 s");
    }
}
