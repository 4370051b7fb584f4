//! The plot of the fleet bench: cycles/s against sessions in flight, model latency 500 ms,
//! 2 workers, planlock (PostgreSQL and files) and LangGraph, with the ideal S / (2 × latency).

use serde_json::Value;

const W: f64 = 640.0;
const H: f64 = 400.0;
const LEFT: f64 = 70.0;
const BOTTOM: f64 = 50.0;

/// One series: its name, colour and (sessions, cycles/s) points.
type Series = (String, &'static str, Vec<(f64, f64)>);

fn series(records: &[Value]) -> Vec<Series> {
    let pick = |system: &str, backend: &str| -> Vec<(f64, f64)> {
        let mut points: Vec<(f64, f64)> = records
            .iter()
            .filter(|r| r["system"] == system && r["backend"] == backend && r["latencyMs"] == 500 && r["workers"] == 2)
            .filter_map(|r| Some((r["sessions"].as_f64()?, r["cyclesPerSecond"].as_f64()?)))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        points
    };
    let mut all = vec![
        ("planlock, PostgreSQL".to_owned(), "#1f77b4", pick("planlock", "postgres")),
        ("planlock, files + SQLite".to_owned(), "#2ca02c", pick("planlock", "files")),
        ("LangGraph, PostgreSQL".to_owned(), "#d62728", pick("LangGraph", "postgres")),
    ];
    let ideal: Vec<(f64, f64)> = all[0].2.iter().map(|(s, _)| (*s, s / 1.0)).collect();
    all.push(("ideal: S / (2 calls x 500 ms)".to_owned(), "#7f7f7f", ideal));
    all.retain(|s| !s.2.is_empty());
    all
}

/// The SVG.
pub fn svg(records: &[Value]) -> String {
    let all = series(records);
    let max_x = all.iter().flat_map(|s| s.2.iter().map(|p| p.0)).fold(1.0, f64::max);
    let max_y = all.iter().flat_map(|s| s.2.iter().map(|p| p.1)).fold(1.0, f64::max) * 1.1;
    let x = |v: f64| LEFT + v / max_x * (W - LEFT - 20.0);
    let y = |v: f64| H - BOTTOM - v / max_y * (H - BOTTOM - 30.0);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"18\" text-anchor=\"middle\">cycles/s against sessions in flight (model latency 500 ms, 2 workers)</text>\n\
         <line x1=\"{LEFT}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n\
         <line x1=\"{LEFT}\" y1=\"30\" x2=\"{LEFT}\" y2=\"{}\" stroke=\"black\"/>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">sessions in flight (S)</text>\n\
         <text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">cycles/s</text>\n",
        W / 2.0,
        H - BOTTOM,
        W - 20.0,
        H - BOTTOM,
        H - BOTTOM,
        (W + LEFT) / 2.0,
        H - 12.0,
        H / 2.0,
        H / 2.0
    );
    for tick in 0..=4 {
        let v = max_y * f64::from(tick) / 4.0;
        out += &format!("<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{v:.0}</text>\n", LEFT - 6.0, y(v) + 4.0);
    }
    for s in all.first().map(|s| s.2.clone()).unwrap_or_default() {
        out +=
            &format!("<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x(s.0), H - BOTTOM + 16.0, s.0);
    }
    for (n, (name, colour, points)) in all.iter().enumerate() {
        let path: Vec<String> = points.iter().map(|(a, b)| format!("{:.1},{:.1}", x(*a), y(*b))).collect();
        out += &format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>\n",
            path.join(" ")
        );
        for (a, b) in points {
            out += &format!("<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/>\n", x(*a), y(*b));
        }
        let ly = 40.0 + 16.0 * n as f64;
        out += &format!(
            "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{}\" y=\"{}\">{name}</text>\n",
            LEFT + 10.0,
            ly - 9.0,
            LEFT + 24.0,
            ly
        );
    }
    out + "</svg>\n"
}
