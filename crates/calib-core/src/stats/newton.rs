//! [`newton_in_bracket`]: the zero of an increasing derivative by Newton's method kept inside a
//! bracket, as the one-parameter fits (a temperature) need it.

/// The zero of `derivative` on `[lo, hi]`, where `derivative(x)` returns the first and second
/// derivatives `(g, h)` of a function minimised in `x` (so `g` increases through the zero).
///
/// Newton from `start`; the bracket shrinks to the signs of `g` seen so far, and a step that
/// leaves it or meets a curvature that is not positive bisects it instead. A Newton step
/// below `tol` relative to `x` is convergence (such a step can round to `x` itself, which the
/// bracket test would otherwise take for leaving the bracket). When `g` keeps its sign the
/// iterates approach the end it points to, which is returned once the bracket is within `tol`.
/// Returns the zero and the evaluations spent (at most `max_evaluations`).
pub fn newton_in_bracket(
    mut derivative: impl FnMut(f64) -> (f64, f64),
    (mut lo, mut hi): (f64, f64),
    start: f64,
    tol: f64,
    max_evaluations: usize,
) -> (f64, usize) {
    let (first, last) = (lo, hi);
    let mut x = start;
    for evaluation in 1..=max_evaluations {
        let (g, h) = derivative(x);
        if g == 0.0 {
            return (x, evaluation);
        }
        if g > 0.0 {
            hi = x;
        } else {
            lo = x;
        }
        let newton = x - g / h;
        if h > 0.0 && (newton - x).abs() <= tol * x.abs() {
            return (newton.clamp(first, last), evaluation);
        }
        let next = if h > 0.0 && newton > lo && newton < hi { newton } else { 0.5 * (lo + hi) };
        if (next - x).abs() <= tol * x.abs() || hi - lo <= tol * hi.abs() {
            return (next.clamp(first, last), evaluation);
        }
        x = next;
    }
    (x, max_evaluations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_minimiser_and_the_bound() {
        // f(x) = x ln x - 2x: f' = ln x - 1, f'' = 1/x; zero at e.
        let (x, _) = newton_in_bracket(|x| (x.ln() - 1.0, 1.0 / x), (0.1, 10.0), 1.0, 1e-14, 100);
        assert!((x - std::f64::consts::E).abs() < 1e-13, "{x}");
        // The minimiser beyond the bracket: its upper end.
        let (x, _) = newton_in_bracket(|x| (x.ln() - 5.0, 1.0 / x), (0.1, 10.0), 1.0, 1e-14, 200);
        assert!((x - 10.0).abs() < 1e-12, "{x}");
    }
}
