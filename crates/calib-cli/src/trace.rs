//! `calib --trace`: one line on stderr per traced stretch (a pass of `eval`), saying where its
//! wall time went; calib-kernels' [`trace`](calib_kernels::trace) gives the definitions.

use calib_kernels::trace::{Stretch, take};

/// Threads Amdahl's prediction is printed for.
const PREDICT_FOR: usize = 16;

/// Prints every stretch traced so far on stderr.
pub fn print() {
    take().iter().for_each(|s| eprintln!("{}", line(s)));
}

/// `trace: pass 1: 2.410 s wall = 2.200 s parallel + 0.210 s serial; busy per thread 2.150 s,
/// 2.100 s; one thread ~4.460 s, serial 4.7%; 16 threads ~0.489 s; serial steps: read 0.100
/// s, checks 0.050 s`.
pub fn line(s: &Stretch) -> String {
    let secs = |d: std::time::Duration| format!("{:.3} s", d.as_secs_f64());
    let busy: Vec<String> = s.busy.iter().map(|&d| secs(d)).collect();
    let steps: Vec<String> = s.steps.iter().map(|(n, d)| format!("{n} {}", secs(*d))).collect();
    let steps = if steps.is_empty() {
        String::new()
    } else {
        format!("; serial steps: {}", steps.join(", "))
    };
    format!(
        "trace: {}: {} wall = {} parallel + {} serial; busy per thread {}; one thread ~{}, \
         serial {:.1}%; {PREDICT_FOR} threads ~{}{steps}",
        s.name,
        secs(s.wall),
        secs(s.parallel),
        secs(s.serial()),
        if busy.is_empty() { "none".to_string() } else { busy.join(", ") },
        secs(s.one_thread()),
        100.0 * s.serial_fraction(),
        secs(s.predicted(PREDICT_FOR)),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_line_adds_up() {
        let ms = Duration::from_millis;
        let s = Stretch {
            name: "pass 1".into(),
            wall: ms(1000),
            parallel: ms(900),
            busy: vec![ms(850), ms(850)],
            steps: vec![("read", ms(60)), ("checks", ms(20))],
        };
        assert_eq!(
            line(&s),
            "trace: pass 1: 1.000 s wall = 0.900 s parallel + 0.100 s serial; busy per thread \
             0.850 s, 0.850 s; one thread ~1.800 s, serial 5.6%; 16 threads ~0.206 s; serial \
             steps: read 0.060 s, checks 0.020 s"
        );
    }
}
