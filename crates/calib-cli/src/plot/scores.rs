//! [`DiagramScores`]: which scores a reliability diagram or curve reads, and how their levels
//! are labelled.

/// Which scores a diagram bins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagramScores {
    /// The top-label confidence against "prediction correct".
    TopLabel,
    /// Class `k`'s probability against "label is k" (one-vs-rest).
    Class(usize),
}

/// A level as a percentage without trailing zeros (`95%`, `99.9%`).
pub(super) fn format_percent(level: f64) -> String {
    let text = format!("{:.4}", level * 100.0);
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}
