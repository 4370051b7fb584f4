//! Interleaved timing of a case against its baseline, printed after criterion's own report.
//!
//! Criterion measures one function after another, each for seconds. On a shared machine whose
//! speed drifts over seconds (a busy neighbour, a memory-access sampler), the ratio of two such
//! estimates drifts with it. Here the cases take turns in short rounds and each keeps its best
//! round, so every case sees the same conditions and the ratio is stable from run to run.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Rounds per case; each round runs for about [`ROUND`].
#[allow(dead_code)]
const ROUNDS: usize = 40;
const ROUND: Duration = Duration::from_millis(10);

/// Times `cases` in turns and prints each one's best time per iteration and its ratio to the
/// first (the baseline). Runs only under `cargo bench` (criterion's `--bench` flag) and only
/// when no name filter is given or one matches `group`.
#[allow(dead_code)]
pub fn report(group: &str, cases: &mut [(&str, &mut dyn FnMut())]) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if !args.iter().any(|a| a == "--bench") || !(filters.is_empty() || filters.iter().any(|f| group.contains(*f))) {
        return;
    }
    report_always(group, cases, ROUNDS);
}

/// [`report`] with `rounds` rounds, whatever the command line (a bench of its own harness).
#[allow(dead_code)]
pub fn report_always(group: &str, cases: &mut [(&str, &mut dyn FnMut())], rounds: usize) {
    let iterations: Vec<u32> = cases.iter_mut().map(|(_, f)| calibrate(f)).collect();
    let mut best = vec![f64::MAX; cases.len()];
    for _ in 0..rounds {
        for (i, (_, f)) in cases.iter_mut().enumerate() {
            let start = Instant::now();
            for _ in 0..iterations[i] {
                f();
            }
            let per = start.elapsed().as_nanos() as f64 / f64::from(iterations[i]);
            best[i] = best[i].min(per);
        }
    }
    println!("{group}: interleaved, best of {rounds} rounds");
    for (i, (name, _)) in cases.iter().enumerate() {
        println!("  {name:<48} {:>10.1} ns  {:>5.2}x {}", best[i], best[i] / best[0], cases[0].0);
    }
}

/// How many iterations fill one round.
fn calibrate(f: &mut dyn FnMut()) -> u32 {
    let mut n = 1u32;
    loop {
        let start = Instant::now();
        for _ in 0..n {
            f();
        }
        if start.elapsed() >= ROUND / 4 || n >= 1 << 24 {
            return black_box(n.saturating_mul(4));
        }
        n = n.saturating_mul(2);
    }
}
